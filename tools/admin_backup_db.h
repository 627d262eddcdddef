/*
 * admin_backup_db.h - the SQL of weave-admin backup and restore that no
 * other file has: an account's record history (wbo_history, write_log,
 * history_usage) row for row, and an account's creation time. The users
 * rows themselves go through db_user.h, records through db_admin.h.
 *
 * Every call returns an enum db_status. Strings handed to callbacks are
 * valid only during the callback; NULL pointers are SQL NULLs.
 * Timestamps are centiseconds, `created` seconds.
 */
#ifndef WEAVE_ADMIN_BACKUP_DB_H
#define WEAVE_ADMIN_BACKUP_DB_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_admin.h"

/* A kept version: the record as it was before the write `replaced`. */
struct backup_version {
	struct db_record rec; /* expires is never DB_RECORD_NEVER here */
	int64_t replaced;
};

/* A write_log row. */
struct backup_write {
	int64_t stamp, previous;
	const char *collection; /* "" for DELETE storage */
	size_t collection_len;
	int64_t written, replaced, deleted, bytes;
	const char *agent;
	size_t agent_len;
};

typedef int (*backup_version_fn)(void *ctx, const struct backup_version *v);
typedef int (*backup_write_fn)(void *ctx, const struct backup_write *w);

/* Each kept version of the account replaced after `after` (INT64_MIN:
 * all), by write then collection and id. */
enum db_status backup_db_versions(int64_t user_id, int64_t after, backup_version_fn fn,
				  void *ctx);
/* Each logged write of the account stamped after `after` (INT64_MIN:
 * all), oldest first. */
enum db_status backup_db_writes(int64_t user_id, int64_t after, backup_write_fn fn,
				void *ctx);
/* The account's newest kept version's `replaced` and newest logged
 * write's stamp; INT64_MIN for none. (A write keeps its versions and log
 * rows in one transaction, so rows after these are exactly the writes a
 * copy lacks: weave-admin user move.) */
enum db_status backup_db_newest(int64_t user_id, int64_t *replaced, int64_t *stamp);
/* The account's history_usage row: DB_NOT_FOUND when it has none. */
enum db_status backup_db_usage(int64_t user_id, int64_t *bytes, int64_t *since);
/* Every row of wbo, wbo_history and write_log, for the progress total. */
enum db_status backup_db_count_rows(int64_t *rows);

enum db_status backup_db_put_version(int64_t user_id, const struct backup_version *v);
enum db_status backup_db_put_write(int64_t user_id, const struct backup_write *w);
enum db_status backup_db_put_usage(int64_t user_id, int64_t bytes, int64_t since);
/* users.created (seconds) of a restored account; the caller bumps the board. */
enum db_status backup_db_set_created(int64_t user_id, int64_t created);

#endif
