/*
 * db_history.h - record history: the versions that writes replace or
 * delete, the log of those writes, and their bounds. No HTTP here.
 *
 * A write's state travels in a struct write_context that its caller owns
 * and passes down: a write request's lives in its struct request (route.c
 * fills it once the account is locked), weave-admin's on its stack. Fill
 * it with db_history_begin() inside the write's transaction and hand it
 * to every db_storage_ write of that transaction; db_storage.c calls
 * db_history_keep() just before each statement that replaces or deletes
 * records, which copies the rows it is about to change into wbo_history;
 * db_history_finish(), just before the commit, logs the write (one
 * write_log row), adds its bytes to the account's figure and drops the
 * account's oldest writes beyond history_max_kb. A NULL context, or one
 * closed by db_history_cancel() (history_days = 0), keeps nothing: every
 * call here then returns at once.
 *
 * Each version belongs to the write_log row of the write that replaced
 * it: purge and the cap drop them together, so a write_log row means its
 * versions are all there, and history_usage.since says from when on the
 * account's history is whole.
 */
#ifndef WEAVE_DB_HISTORY_H
#define WEAVE_DB_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define HISTORY_AGENT_MAX 255

/* What a caller says of its write when it opens the context. */
struct history_write {
	int64_t user_id;
	int64_t stamp;          /* the write's timestamp (centiseconds) */
	int64_t previous;       /* the account's last_write before it */
	const char *collection; /* NULL: every collection (DELETE storage) */
	const char *agent;      /* the client's User-Agent; NULL: none */
	int64_t max_kb;         /* history_max_kb; 0: no cap */
	/* Below 0: kept versions carry this in `replaced` until
	 * db_history_settle() (a stamp not final yet, write_lock.h); 0: the
	 * stamp. */
	int64_t keep_as;
};

/* One write's context: the history_write, copied, and what the write's
 * statements gathered for its log row. Plain data: free() it. */
struct write_context {
	bool keeps;   /* history is on for this write */
	bool touched; /* a statement of it kept or wrote records */
	int64_t user_id, stamp, previous, max_kb;
	int64_t keep_as; /* `replaced` of the versions kept so far */
	char collection[33]; /* "" for every collection */
	char agent[HISTORY_AGENT_MAX + 1];
	int64_t written, replaced, deleted, bytes;
};

/* Open wc for the write w describes (copies what it needs from w). */
void db_history_begin(struct write_context *wc, const struct history_write *w);
/* Close wc without logging (the write was rolled back, or keeps no
 * history). wc may be NULL. */
void db_history_cancel(struct write_context *wc);
/* Whether wc keeps versions (false for NULL). */
bool db_history_active(const struct write_context *wc);

/*
 * Copy the unexpired wbo rows matching `where` (an SQL condition over
 * wbo's columns, e.g. "user_id = ? AND collection = ?", whose
 * placeholders params fill in order) into wbo_history, stamped with the
 * open write. deleting: the write deletes them, else it replaces them.
 * DB_OK at once when wc keeps nothing.
 */
enum db_status db_history_keep(struct write_context *wc, const char *where, const struct db_param *params,
			       size_t nparams, bool deleting);
/*
 * The same for rows an upload is about to replace, in one statement that
 * also tells whether any of them had expired (*expired): the caller then
 * deletes those from wbo (an expired row is no version to keep, and the
 * upload must not update it in place). While history is on, this
 * statement takes the place of that DELETE, so keeping costs an upload
 * no extra search of wbo.
 */
enum db_status db_history_keep_replaced(struct write_context *wc,
					const char *where,
					const struct db_param *params,
					size_t nparams, bool *expired);
/*
 * The write's stamp is final (write_lock.h): the versions it kept under
 * keep_as move to stamp, and its log row will say stamp and previous.
 */
enum db_status db_history_settle(struct write_context *wc, int64_t stamp,
				 int64_t previous);
/* The write uploads n records (for the log). */
void db_history_note_written(struct write_context *wc, size_t n);
/*
 * Log the write and apply history_max_kb, then close wc. Call in the
 * write's transaction, before the commit. DB_OK when wc keeps nothing.
 */
enum db_status db_history_finish(struct write_context *wc);

/* ---- weave-admin ------------------------------------------------------ */

/* Remove an account's whole history (the account is being deleted). */
enum db_status db_history_forget_user(int64_t user_id);

/*
 * Remove up to `limit` logged writes stamped before `before` with their
 * versions (oldest first), in the caller's transaction. *writes gets how
 * many, *versions how many versions went with them.
 */
enum db_status db_history_purge_batch(int64_t before, int64_t limit,
				      uint64_t *writes, uint64_t *versions);
/* Forget every account's figure (history is off: nothing is kept). */
enum db_status db_history_forget_usage(void);
/* Logged writes stamped before `before`. */
enum db_status db_history_count_before(int64_t before, int64_t *writes);

struct history_entry {
	int64_t stamp, previous;
	const char *collection; /* "" for every collection */
	int64_t written, replaced, deleted, bytes;
	const char *agent;
};
typedef int (*db_history_entry_fn)(void *ctx, const struct history_entry *e);

/* The account's logged writes (collection NULL: all) stamped after
 * `after`, oldest first. */
enum db_status db_history_entries(int64_t user_id, const char *collection,
				  int64_t after, db_history_entry_fn fn, void *ctx);

/*
 * The account's kept bytes, and the time from which its history is
 * whole: a restore to an earlier time would miss versions. *since is
 * INT64_MAX when nothing was ever logged for it.
 */
enum db_status db_history_usage(int64_t user_id, int64_t *bytes, int64_t *since);

/*
 * The newest timestamp after `after` that some version of the account's
 * records (current or kept; collection NULL: all) carries although no
 * logged write has it: a write made while history was off, or an
 * import. 0 when there is none.
 */
enum db_status db_history_unlogged_after(int64_t user_id, const char *collection,
					 int64_t after, int64_t *newest);

/* The collections that have records or versions kept after `after`. */
typedef int (*db_history_name_fn)(void *ctx, const char *name, size_t len);
enum db_status db_history_collections(int64_t user_id, int64_t after,
				      db_history_name_fn fn, void *ctx);

/* One id's row: current (replaced 0) or a kept version. */
struct history_version {
	const char *id;
	size_t id_len;
	int64_t replaced, modified, expires, payload_size;
};
typedef int (*db_history_version_fn)(void *ctx, const struct history_version *v);

/* The current rows of a collection, by id. */
enum db_status db_history_current(int64_t user_id, const char *collection,
				  db_history_version_fn fn, void *ctx);
/* The versions of a collection replaced after `after`, by id then replaced. */
enum db_status db_history_versions_after(int64_t user_id, const char *collection,
					 int64_t after, db_history_version_fn fn,
					 void *ctx);

/*
 * Put the version of id replaced at `replaced` back as the current
 * record, stamped with wc's timestamp; the row it replaces is kept
 * first (so a restore can itself be undone). wc must keep history.
 */
enum db_status db_history_put_back(struct write_context *wc, int64_t user_id,
				   const char *collection, const char *id,
				   size_t id_len, int64_t replaced);
#endif
