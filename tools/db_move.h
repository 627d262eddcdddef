/*
 * db_move.h - the data side of 'weave-admin user move': the moves table
 * (in the account database) and the copy of one account's rows between
 * two places (db.h), for admin_move.c. No command line here.
 *
 * An account's rows on a storage database are those of wbo (its
 * records), wbo_history, write_log and history_usage (its record
 * history). They are read and written with the statements export and
 * backup use (db_admin.h, admin_backup_db.h), so a column added there
 * moves too; the copy writes in batches, each its own short transaction
 * on the target, so a large account holds no lock for long.
 */
#ifndef WEAVE_DB_MOVE_H
#define WEAVE_DB_MOVE_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"

enum move_phase {
	MOVE_COPYING = 1,  /* the rows copied while the account is in use */
	MOVE_FROZEN = 2,   /* storage answers 503; the last changes copied */
	MOVE_SWITCHED = 3, /* users.node is the target; the source is cleaned */
};

/* A row of the moves table. source and target are users.node values
 * (NULL: public_url, the account database). */
struct move {
	int64_t user_id;
	char *source;
	char *target;
	int phase;
	int status_before;
	int64_t started;
};

void move_free(struct move *m);

/* The account database, current place. */
enum db_status db_move_get(int64_t user_id, struct move *m); /* DB_NOT_FOUND: none */
enum db_status db_move_start(const struct move *m);
enum db_status db_move_set_phase(int64_t user_id, int phase, int status_before);
enum db_status db_move_finish(int64_t user_id);

/*
 * Run step(ctx), a short transaction or statement of a move, again while
 * it answers DB_RETRY (a deadlock, a Galera certification failure: the
 * account's own writes contend with the move), after a pause that
 * doubles from 40 ms, 12 times at most.
 */
typedef enum db_status (*db_move_step_fn)(void *ctx);
enum db_status db_move_retry(db_move_step_fn step, void *ctx);

/* What a copy did. */
struct move_counts {
	int64_t records;  /* wbo rows written on the target */
	int64_t removed;  /* wbo rows deleted on the target (reconcile) */
	int64_t history;  /* wbo_history and write_log rows written */
};

/* Delete the account's rows on place, in batches. */
enum db_status db_move_clear(size_t place, int64_t user_id);

/* Copy every row of the account from place `from` to place `to`
 * (existing rows on `to` are overwritten). */
enum db_status db_move_copy(size_t from, size_t to, int64_t user_id,
			    struct move_counts *c);

/*
 * Make the account's rows on `to` what they are on `from`, with nothing
 * written on `from` meanwhile (the account is frozen): records that
 * differ in any column but the payload's bytes (a new payload always
 * has a new modified) are copied again, records only `to` has are
 * deleted, and history rows newer than the newest on `to` are copied.
 */
enum db_status db_move_reconcile(size_t from, size_t to, int64_t user_id,
				 struct move_counts *c);

#endif
