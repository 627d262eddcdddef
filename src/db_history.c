/* db_history.c - SQL for record history: kept versions, the write log, their bounds. */
#include "db_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "util.h"

enum history_stmt {
	HISTORY_KEEP,           /* + a WHERE over wbo, [LIVE], RETURNING */
	HISTORY_KEEP_LIVE,
	HISTORY_KEEP_LOCKING,
	HISTORY_KEEP_RETURNING,
	HISTORY_DROP_EXPIRED_COPIES,
	HISTORY_LOG_INSERT,
	HISTORY_SETTLE,
	HISTORY_USAGE_ADD,
	HISTORY_CAP_WRITES,
	HISTORY_CAP_VERSIONS,
	HISTORY_CAP_LOG,
	HISTORY_USAGE_SUBTRACT,
	HISTORY_FORGET_VERSIONS,
	HISTORY_FORGET_LOG,
	HISTORY_FORGET_USAGE,
	HISTORY_OLD_WRITES,
	HISTORY_PURGE_VERSIONS,
	HISTORY_PURGE_LOG,
	HISTORY_FORGET_ALL_USAGE,
	HISTORY_COUNT_BEFORE,
	HISTORY_ENTRIES,
	HISTORY_USAGE,
	HISTORY_USAGE_FROM_LOG,
	HISTORY_UNLOGGED_AFTER,
	HISTORY_COLLECTIONS,
	HISTORY_CURRENT,
	HISTORY_VERSIONS_AFTER,
	HISTORY_ONE_RECORD,
	HISTORY_PUT_BACK,
	HISTORY_STMT__MAX
};

/* The columns of a record version, in wbo and wbo_history alike. */
#define VERSION_COLUMNS \
	"parentid, predecessorid, sortindex, modified, payload, payload_size, expires"

/* Every statement of this module (bench/dbceiling.c runs them through
 * the functions below, not as copies). */
static const char *const history_sql[HISTORY_STMT__MAX] = {
	/*
	 * Keep the live rows a write is about to replace or delete: this,
	 * the write's WHERE conditions, HISTORY_KEEP_LIVE (when only
	 * unexpired rows are wanted), HISTORY_KEEP_RETURNING. Parameters:
	 * the write's stamp, the conditions' own, the stamp again (for
	 * LIVE). RETURNING (MariaDB 10.5+) hands back each kept row's
	 * expiry and size, so that no statement has to count them.
	 */
	[HISTORY_KEEP] = "INSERT IGNORE INTO wbo_history (user_id, collection, id, "
			 "replaced, " VERSION_COLUMNS ") SELECT user_id, collection, "
			 "id, ?, " VERSION_COLUMNS " FROM wbo WHERE ",
	[HISTORY_KEEP_LIVE] = " AND expires > ?",
	/*
	 * For a write that does not hold its account's lock yet (keep_as
	 * below 0, write_lock.h): the SELECT of INSERT ... SELECT is a
	 * consistent read in READ COMMITTED, which would copy the version
	 * before an uncommitted writer of the same rows and lose that
	 * writer's; locking waits for it and copies its version.
	 */
	[HISTORY_KEEP_LOCKING] = " FOR UPDATE",
	[HISTORY_KEEP_RETURNING] = " RETURNING expires, payload_size",
	[HISTORY_DROP_EXPIRED_COPIES] = "DELETE FROM wbo_history WHERE user_id = ? "
					"AND replaced = ? AND expires <= ?",
	/* keep_as is this transaction's own (db_history_settle). */
	[HISTORY_SETTLE] = "UPDATE wbo_history SET replaced = ? WHERE user_id = ? "
			   "AND replaced = ?",
	[HISTORY_LOG_INSERT] = "INSERT INTO write_log (user_id, stamp, collection, "
			       "previous, written, replaced, deleted, agent, bytes) "
			       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
	/* A new account figure starts where the account's log does: every
	 * write since the oldest logged one's predecessor is in the log.
	 * RETURNING gives the figure after this write, for the cap. */
	[HISTORY_USAGE_ADD] = "INSERT INTO history_usage (user_id, bytes, since) "
			      "VALUES (?, ?, (SELECT o.previous FROM write_log o "
			      "WHERE o.user_id = ? ORDER BY o.stamp LIMIT 1)) "
			      "ON DUPLICATE KEY UPDATE bytes = bytes + VALUES(bytes) "
			      "RETURNING bytes",
	[HISTORY_CAP_WRITES] = "SELECT stamp, bytes FROM write_log WHERE user_id = ? "
			       "ORDER BY stamp, collection",
	[HISTORY_CAP_VERSIONS] = "DELETE FROM wbo_history WHERE user_id = ? "
				 "AND replaced <= ?",
	[HISTORY_CAP_LOG] = "DELETE FROM write_log WHERE user_id = ? AND stamp <= ?",
	[HISTORY_USAGE_SUBTRACT] = "UPDATE history_usage SET bytes = "
				   "GREATEST(bytes - ?, 0), since = GREATEST(since, ?) "
				   "WHERE user_id = ?",
	[HISTORY_FORGET_VERSIONS] = "DELETE FROM wbo_history WHERE user_id = ?",
	[HISTORY_FORGET_LOG] = "DELETE FROM write_log WHERE user_id = ?",
	[HISTORY_FORGET_USAGE] = "DELETE FROM history_usage WHERE user_id = ?",
	[HISTORY_OLD_WRITES] = "SELECT user_id, stamp, collection, bytes FROM write_log "
			       "WHERE stamp < ? ORDER BY stamp LIMIT ?",
	[HISTORY_PURGE_VERSIONS] = "DELETE FROM wbo_history WHERE user_id = ? AND "
				   "replaced = ? AND (collection = ? OR 1 = ?)",
	[HISTORY_PURGE_LOG] = "DELETE FROM write_log WHERE user_id = ? AND stamp = ? "
			      "AND collection = ?",
	[HISTORY_FORGET_ALL_USAGE] = "DELETE FROM history_usage",
	[HISTORY_COUNT_BEFORE] = "SELECT COUNT(*) FROM write_log WHERE stamp < ?",
	/* A DELETE of all storage (collection '') touched every collection. */
	[HISTORY_ENTRIES] = "SELECT stamp, previous, collection, written, replaced, "
			    "deleted, bytes, agent FROM write_log WHERE user_id = ? "
			    "AND stamp > ? AND (collection = ? OR collection = '' "
			    "OR 1 = ?) ORDER BY stamp, collection",
	[HISTORY_USAGE] = "SELECT bytes, since FROM history_usage WHERE user_id = ?",
	[HISTORY_USAGE_FROM_LOG] = "SELECT 0, previous FROM write_log WHERE user_id = ? "
				   "ORDER BY stamp LIMIT 1",
	[HISTORY_UNLOGGED_AFTER] =
		"SELECT COALESCE(MAX(v.modified), 0) FROM ("
		"SELECT user_id, modified FROM wbo WHERE user_id = ? AND modified > ? "
		"AND (collection = ? OR 1 = ?) UNION ALL "
		"SELECT user_id, modified FROM wbo_history WHERE user_id = ? "
		"AND modified > ? AND (collection = ? OR 1 = ?)) v "
		"WHERE NOT EXISTS (SELECT 1 FROM write_log l "
		"WHERE l.user_id = v.user_id AND l.stamp = v.modified)",
	[HISTORY_COLLECTIONS] = "SELECT collection FROM wbo WHERE user_id = ? UNION "
				"SELECT collection FROM wbo_history WHERE user_id = ? "
				"AND replaced > ? ORDER BY 1",
	[HISTORY_CURRENT] = "SELECT id, 0, modified, expires, payload_size FROM wbo "
			    "WHERE user_id = ? AND collection = ? ORDER BY id",
	[HISTORY_VERSIONS_AFTER] = "SELECT id, replaced, modified, expires, payload_size "
				   "FROM wbo_history WHERE user_id = ? AND collection = ? "
				   "AND replaced > ? ORDER BY id, replaced",
	/* The WHERE of put back's keep of the record it replaces. */
	[HISTORY_ONE_RECORD] = "user_id = ? AND collection = ? AND id = ?",
	[HISTORY_PUT_BACK] =
		"INSERT INTO wbo (user_id, collection, id, modified, parentid, "
		"predecessorid, sortindex, payload, payload_size, expires) "
		"SELECT user_id, collection, id, ?, parentid, predecessorid, "
		"sortindex, payload, payload_size, expires FROM wbo_history "
		"WHERE user_id = ? AND collection = ? AND id = ? AND replaced = ? "
		"ON DUPLICATE KEY UPDATE modified = VALUES(modified), "
		"parentid = VALUES(parentid), predecessorid = VALUES(predecessorid), "
		"sortindex = VALUES(sortindex), payload = VALUES(payload), "
		"payload_size = VALUES(payload_size), expires = VALUES(expires)",
};

void db_history_begin(struct write_context *wc, const struct history_write *w)
{
	memset(wc, 0, sizeof *wc);
	wc->keeps = true;
	wc->user_id = w->user_id;
	wc->stamp = w->stamp;
	wc->previous = w->previous;
	wc->keep_as = w->keep_as < 0 ? w->keep_as : w->stamp;
	wc->max_kb = w->max_kb;
	if (w->collection != NULL)
		snprintf(wc->collection, sizeof wc->collection, "%s", w->collection);
	if (w->agent != NULL)
		snprintf(wc->agent, sizeof wc->agent, "%s", w->agent);
}

void db_history_cancel(struct write_context *wc)
{
	if (wc != NULL)
		wc->keeps = false;
}

bool db_history_active(const struct write_context *wc)
{
	return wc != NULL && wc->keeps;
}

void db_history_note_written(struct write_context *wc, size_t n)
{
	if (!db_history_active(wc))
		return;
	wc->touched = true;
	wc->written += (int64_t)n;
}

/* What a keep statement's RETURNING gives back, a row per version kept. */
struct kept_rows {
	int64_t now, live, expired, bytes;
};

static int kept_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct kept_rows *k = ctx;
	(void)ncols;
	if (row[0].i > k->now) {
		k->live++;
		k->bytes += row[1].i;
	} else {
		k->expired++;
	}
	return 0;
}

/*
 * Copy the rows matching `where` into wbo_history under wc's stamp;
 * `live` adds the condition that they have not expired. The statement
 * hands back each kept row's expiry and size (RETURNING), so that
 * counting them costs no statement of its own.
 */
static enum db_status keep_rows(struct write_context *wc, const char *where,
				const struct db_param *params, size_t nparams,
				bool live, struct kept_rows *k)
{
	wc->touched = true;
	struct buf sql;
	buf_init(&sql, 1024 * 1024);
	buf_puts(&sql, history_sql[HISTORY_KEEP]);
	buf_puts(&sql, where);
	if (live)
		buf_puts(&sql, history_sql[HISTORY_KEEP_LIVE]);
	if (wc->keep_as < 0)
		buf_puts(&sql, history_sql[HISTORY_KEEP_LOCKING]);
	buf_puts(&sql, history_sql[HISTORY_KEEP_RETURNING]);
	struct db_param *p = xcalloc(nparams + 2, sizeof *p);
	p[0] = DB_INT(wc->keep_as);
	memcpy(p + 1, params, nparams * sizeof *p);
	p[nparams + 1] = DB_INT(wc->stamp);
	memset(k, 0, sizeof *k);
	k->now = wc->stamp;
	enum db_status st = db_run(sql.data, p, nparams + (live ? 2 : 1), kept_row,
				   k, NULL);
	free(p);
	buf_free(&sql);
	wc->bytes += k->bytes;
	return st;
}

enum db_status db_history_keep(struct write_context *wc, const char *where,
			       const struct db_param *params, size_t nparams,
			       bool deleting)
{
	if (!db_history_active(wc))
		return DB_OK;
	struct kept_rows k;
	enum db_status st = keep_rows(wc, where, params, nparams, true, &k);
	if (deleting)
		wc->deleted += k.live;
	else
		wc->replaced += k.live;
	return st;
}

enum db_status db_history_keep_replaced(struct write_context *wc,
					const char *where,
					const struct db_param *params,
					size_t nparams, bool *expired)
{
	*expired = false;
	if (!db_history_active(wc))
		return DB_OK;
	struct kept_rows k;
	enum db_status st = keep_rows(wc, where, params, nparams, false, &k);
	wc->replaced += k.live;
	if (st != DB_OK || k.expired == 0)
		return st;
	/* Rare: an expired row is no version anyone could restore. */
	*expired = true;
	struct db_param p[] = { DB_INT(wc->user_id), DB_INT(wc->keep_as),
				DB_INT(wc->stamp) };
	return db_run(history_sql[HISTORY_DROP_EXPIRED_COPIES], p, 3, NULL, NULL, NULL);
}

enum db_status db_history_settle(struct write_context *wc, int64_t stamp,
				 int64_t previous)
{
	enum db_status st = DB_OK;
	if (!db_history_active(wc))
		return DB_OK;
	/* Only when versions were kept: an upload of new records (the usual
	 * one) then makes no statement here, under its account's lock. */
	if (wc->replaced + wc->deleted > 0 && wc->keep_as != stamp) {
		struct db_param p[] = { DB_INT(stamp), DB_INT(wc->user_id), DB_INT(wc->keep_as) };
		st = db_run(history_sql[HISTORY_SETTLE], p, 3, NULL, NULL, NULL);
	}
	wc->stamp = wc->keep_as = stamp;
	wc->previous = previous;
	return st;
}

static int int_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].is_null ? 0 : row[0].i;
	return 0;
}

struct trim_ctx {
	int64_t need, removed, cutoff;
};

/* Oldest writes first, whole timestamps, until enough bytes are freed. */
static int trim_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct trim_ctx *t = ctx;
	(void)ncols;
	if (t->removed >= t->need && row[0].i != t->cutoff)
		return 1;
	t->cutoff = row[0].i;
	t->removed += row[1].i;
	return 0;
}

/*
 * Drop the account's oldest writes until it holds 9/10 of its cap; it
 * holds `bytes` now.
 */
static enum db_status apply_cap(int64_t user_id, int64_t max_kb, int64_t bytes)
{
	struct db_param who[] = { DB_INT(user_id) };
	if (bytes <= max_kb * 1024)
		return DB_OK;
	struct trim_ctx t = { bytes - max_kb * 1024 / 10 * 9, 0, 0 };
	enum db_status st = db_run(history_sql[HISTORY_CAP_WRITES], who, 1, trim_row,
				   &t, NULL);
	if (st != DB_OK)
		return st;
	struct db_param upto[] = { DB_INT(user_id), DB_INT(t.cutoff) };
	st = db_run(history_sql[HISTORY_CAP_VERSIONS], upto, 2, NULL, NULL, NULL);
	if (st == DB_OK)
		st = db_run(history_sql[HISTORY_CAP_LOG], upto, 2, NULL, NULL, NULL);
	struct db_param usage[] = { DB_INT(t.removed), DB_INT(t.cutoff), DB_INT(user_id) };
	if (st == DB_OK)
		st = db_run(history_sql[HISTORY_USAGE_SUBTRACT], usage, 3, NULL, NULL, NULL);
	if (st == DB_OK) {
		char stamp[32];
		format_timestamp(t.cutoff, stamp, sizeof stamp);
		log_info("history over history_max_kb (%lld KB): dropped %lld bytes "
			 "of writes up to %s", (long long)max_kb,
			 (long long)t.removed, stamp);
	}
	return st;
}

enum db_status db_history_finish(struct write_context *wc)
{
	if (!db_history_active(wc))
		return DB_OK;
	wc->keeps = false;
	if (!wc->touched)
		return DB_OK;
	bool kept = wc->replaced + wc->deleted > 0;
	struct db_param log_row[] = {
		DB_INT(wc->user_id), DB_INT(wc->stamp), DB_CSTR(wc->collection),
		DB_INT(wc->previous), DB_INT(wc->written), DB_INT(wc->replaced),
		DB_INT(wc->deleted), DB_CSTR(wc->agent), DB_INT(wc->bytes),
	};
	enum db_status st = db_run(history_sql[HISTORY_LOG_INSERT], log_row, 9, NULL,
				   NULL, NULL);
	if (st != DB_OK || !kept)
		return st;
	struct db_param usage[] = { DB_INT(wc->user_id), DB_INT(wc->bytes),
				    DB_INT(wc->user_id) };
	int64_t bytes = 0;
	st = db_run(history_sql[HISTORY_USAGE_ADD], usage, 3, int_row, &bytes, NULL);
	if (st == DB_OK && wc->max_kb > 0)
		st = apply_cap(wc->user_id, wc->max_kb, bytes);
	return st;
}

/* ---- weave-admin ------------------------------------------------------ */

enum db_status db_history_forget_user(int64_t user_id)
{
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_run(history_sql[HISTORY_FORGET_VERSIONS], p, 1, NULL,
				   NULL, NULL);
	if (st == DB_OK)
		st = db_run(history_sql[HISTORY_FORGET_LOG], p, 1, NULL, NULL, NULL);
	if (st == DB_OK)
		st = db_run(history_sql[HISTORY_FORGET_USAGE], p, 1, NULL, NULL, NULL);
	return st;
}

struct old_write {
	int64_t user_id, stamp, bytes;
	char collection[33];
};

struct old_writes {
	struct old_write *rows;
	size_t n, cap;
};

static int old_write_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct old_writes *o = ctx;
	(void)ncols;
	if (o->n == o->cap)
		return 1;
	struct old_write *w = &o->rows[o->n++];
	w->user_id = row[0].i;
	w->stamp = row[1].i;
	snprintf(w->collection, sizeof w->collection, "%.*s", (int)row[2].len,
		 row[2].s ? row[2].s : "");
	w->bytes = row[3].i;
	return 0;
}

/* One logged write and its versions out, its bytes off the figure. */
static enum db_status purge_one(const struct old_write *w, uint64_t *versions)
{
	bool every = w->collection[0] == '\0';
	struct db_param v[] = { DB_INT(w->user_id), DB_INT(w->stamp),
				DB_CSTR(w->collection), DB_INT(every) };
	uint64_t removed = 0;
	enum db_status st = db_run(history_sql[HISTORY_PURGE_VERSIONS], v, 4, NULL,
				   NULL, &removed);
	*versions += removed;
	if (st == DB_OK)
		st = db_run(history_sql[HISTORY_PURGE_LOG], v, 3, NULL, NULL, NULL);
	struct db_param u[] = { DB_INT(w->bytes), DB_INT(w->stamp), DB_INT(w->user_id) };
	if (st == DB_OK)
		st = db_run(history_sql[HISTORY_USAGE_SUBTRACT], u, 3, NULL, NULL, NULL);
	return st;
}

enum db_status db_history_purge_batch(int64_t before, int64_t limit,
				      uint64_t *writes, uint64_t *versions)
{
	struct old_writes o = { xcalloc((size_t)limit, sizeof *o.rows), 0, (size_t)limit };
	struct db_param p[] = { DB_INT(before), DB_INT(limit) };
	*writes = 0;
	*versions = 0;
	enum db_status st = db_run(history_sql[HISTORY_OLD_WRITES], p, 2, old_write_row,
				   &o, NULL);
	for (size_t i = 0; i < o.n && st == DB_OK; i++) {
		st = purge_one(&o.rows[i], versions);
		if (st == DB_OK)
			(*writes)++;
	}
	free(o.rows);
	return st;
}

enum db_status db_history_forget_usage(void)
{
	return db_run(history_sql[HISTORY_FORGET_ALL_USAGE], NULL, 0, NULL, NULL, NULL);
}

enum db_status db_history_count_before(int64_t before, int64_t *writes)
{
	struct db_param p[] = { DB_INT(before) };
	*writes = 0;
	return db_run(history_sql[HISTORY_COUNT_BEFORE], p, 1, int_row, writes, NULL);
}

struct entry_ctx {
	db_history_entry_fn fn;
	void *ctx;
};

static int entry_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct entry_ctx *c = ctx;
	(void)ncols;
	struct history_entry e = {
		.stamp = row[0].i, .previous = row[1].i,
		.collection = row[2].s ? row[2].s : "",
		.written = row[3].i, .replaced = row[4].i, .deleted = row[5].i,
		.bytes = row[6].i, .agent = row[7].s ? row[7].s : "",
	};
	return c->fn(c->ctx, &e);
}

enum db_status db_history_entries(int64_t user_id, const char *collection,
				  int64_t after, db_history_entry_fn fn, void *ctx)
{
	struct entry_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_INT(after),
				DB_CSTR(collection ? collection : ""),
				DB_INT(collection == NULL) };
	return db_run(history_sql[HISTORY_ENTRIES], p, 4, entry_row, &c, NULL);
}

struct usage_ctx {
	bool found;
	int64_t bytes, since;
};

static int usage_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct usage_ctx *u = ctx;
	(void)ncols;
	u->found = true;
	u->bytes = row[0].i;
	u->since = row[1].i;
	return 0;
}

enum db_status db_history_usage(int64_t user_id, int64_t *bytes, int64_t *since)
{
	struct usage_ctx u = { false, 0, INT64_MAX };
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_run(history_sql[HISTORY_USAGE], p, 1, usage_row, &u, NULL);
	if (st == DB_OK && !u.found) {
		/* Nothing kept yet: the history is whole from the oldest
		 * logged write's predecessor on, if anything was logged. */
		st = db_run(history_sql[HISTORY_USAGE_FROM_LOG], p, 1, usage_row, &u,
			    NULL);
	}
	*bytes = u.bytes;
	*since = u.since;
	return st;
}

enum db_status db_history_unlogged_after(int64_t user_id, const char *collection,
					 int64_t after, int64_t *newest)
{
	struct db_param p[] = {
		DB_INT(user_id), DB_INT(after), DB_CSTR(collection ? collection : ""),
		DB_INT(collection == NULL),
		DB_INT(user_id), DB_INT(after), DB_CSTR(collection ? collection : ""),
		DB_INT(collection == NULL),
	};
	*newest = 0;
	return db_run(history_sql[HISTORY_UNLOGGED_AFTER], p, 8, int_row, newest, NULL);
}

struct name_ctx {
	db_history_name_fn fn;
	void *ctx;
};

static int name_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct name_ctx *c = ctx;
	(void)ncols;
	return c->fn(c->ctx, row[0].s, row[0].len);
}

enum db_status db_history_collections(int64_t user_id, int64_t after,
				      db_history_name_fn fn, void *ctx)
{
	struct name_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_INT(user_id), DB_INT(after) };
	return db_run(history_sql[HISTORY_COLLECTIONS], p, 3, name_row, &c, NULL);
}

struct version_ctx {
	db_history_version_fn fn;
	void *ctx;
};

static int version_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct version_ctx *c = ctx;
	(void)ncols;
	struct history_version v = {
		.id = row[0].s, .id_len = row[0].len, .replaced = row[1].i,
		.modified = row[2].i, .expires = row[3].i, .payload_size = row[4].i,
	};
	return c->fn(c->ctx, &v);
}

enum db_status db_history_current(int64_t user_id, const char *collection,
				  db_history_version_fn fn, void *ctx)
{
	struct version_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection) };
	return db_run(history_sql[HISTORY_CURRENT], p, 2, version_row, &c, NULL);
}

enum db_status db_history_versions_after(int64_t user_id, const char *collection,
					 int64_t after, db_history_version_fn fn,
					 void *ctx)
{
	struct version_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_INT(after) };
	return db_run(history_sql[HISTORY_VERSIONS_AFTER], p, 3, version_row, &c, NULL);
}

enum db_status db_history_put_back(struct write_context *wc, int64_t user_id,
				   const char *collection, const char *id,
				   size_t id_len, int64_t replaced)
{
	struct db_param current[] = { DB_INT(user_id), DB_CSTR(collection),
				      DB_STR(id, id_len) };
	enum db_status st = db_history_keep(wc, history_sql[HISTORY_ONE_RECORD],
					    current, 3, false);
	if (st != DB_OK)
		return st;
	db_history_note_written(wc, 1);
	struct db_param p[] = { DB_INT(wc->stamp), DB_INT(user_id), DB_CSTR(collection),
				DB_STR(id, id_len), DB_INT(replaced) };
	return db_run(history_sql[HISTORY_PUT_BACK], p, 5, NULL, NULL, NULL);
}
