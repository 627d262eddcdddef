/* db_history.c - SQL for record history: kept versions, the write log, their bounds. */
#include "db_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "sql_statements.h"
#include "util.h"

/* The open history write of this process (one request at a time). */
static struct {
	bool active, touched;
	int64_t user_id, stamp, previous, max_kb;
	char collection[33]; /* "" for every collection */
	char agent[HISTORY_AGENT_MAX + 1];
	int64_t written, replaced, deleted, bytes;
} open_write;

void db_history_begin(const struct history_write *w)
{
	memset(&open_write, 0, sizeof open_write);
	open_write.active = true;
	open_write.user_id = w->user_id;
	open_write.stamp = w->stamp;
	open_write.previous = w->previous;
	open_write.max_kb = w->max_kb;
	if (w->collection != NULL)
		snprintf(open_write.collection, sizeof open_write.collection, "%s",
			 w->collection);
	if (w->agent != NULL)
		snprintf(open_write.agent, sizeof open_write.agent, "%s", w->agent);
}

void db_history_cancel(void)
{
	open_write.active = false;
}

bool db_history_active(void)
{
	return open_write.active;
}

void db_history_note_written(size_t n)
{
	if (!open_write.active)
		return;
	open_write.touched = true;
	open_write.written += (int64_t)n;
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
 * Copy the rows matching `where` into wbo_history under the open write's
 * stamp; `live` adds the condition that they have not expired. The
 * statement hands back each kept row's expiry and size (RETURNING), so
 * that counting them costs no statement of its own.
 */
static enum db_status keep_rows(const char *where, const struct db_param *params,
				size_t nparams, bool live, struct kept_rows *k)
{
	open_write.touched = true;
	struct buf sql;
	buf_init(&sql, 1024 * 1024);
	buf_puts(&sql, SQL_HISTORY_KEEP);
	buf_puts(&sql, where);
	if (live)
		buf_puts(&sql, SQL_HISTORY_KEEP_LIVE);
	buf_puts(&sql, SQL_HISTORY_KEEP_RETURNING);
	struct db_param *p = xcalloc(nparams + 2, sizeof *p);
	p[0] = DB_INT(open_write.stamp);
	memcpy(p + 1, params, nparams * sizeof *p);
	p[nparams + 1] = DB_INT(open_write.stamp);
	memset(k, 0, sizeof *k);
	k->now = open_write.stamp;
	enum db_status st = db_run(sql.data, p, nparams + (live ? 2 : 1), kept_row,
				   k, NULL);
	free(p);
	buf_free(&sql);
	open_write.bytes += k->bytes;
	return st;
}

enum db_status db_history_keep(const char *where, const struct db_param *params,
			       size_t nparams, bool deleting)
{
	if (!open_write.active)
		return DB_OK;
	struct kept_rows k;
	enum db_status st = keep_rows(where, params, nparams, true, &k);
	if (deleting)
		open_write.deleted += k.live;
	else
		open_write.replaced += k.live;
	return st;
}

enum db_status db_history_keep_replaced(const char *where,
					const struct db_param *params,
					size_t nparams, bool *expired)
{
	*expired = false;
	if (!open_write.active)
		return DB_OK;
	struct kept_rows k;
	enum db_status st = keep_rows(where, params, nparams, false, &k);
	open_write.replaced += k.live;
	if (st != DB_OK || k.expired == 0)
		return st;
	/* Rare: an expired row is no version anyone could restore. */
	*expired = true;
	struct db_param p[] = { DB_INT(open_write.user_id), DB_INT(open_write.stamp),
				DB_INT(open_write.stamp) };
	return db_run("DELETE FROM wbo_history WHERE user_id = ? AND replaced = ? "
		      "AND expires <= ?", p, 3, NULL, NULL, NULL);
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
	enum db_status st = db_run("SELECT stamp, bytes FROM write_log WHERE user_id = ? "
				   "ORDER BY stamp, collection", who, 1, trim_row, &t, NULL);
	if (st != DB_OK)
		return st;
	struct db_param upto[] = { DB_INT(user_id), DB_INT(t.cutoff) };
	st = db_run("DELETE FROM wbo_history WHERE user_id = ? AND replaced <= ?",
		    upto, 2, NULL, NULL, NULL);
	if (st == DB_OK)
		st = db_run("DELETE FROM write_log WHERE user_id = ? AND stamp <= ?",
			    upto, 2, NULL, NULL, NULL);
	struct db_param usage[] = { DB_INT(t.removed), DB_INT(t.cutoff), DB_INT(user_id) };
	if (st == DB_OK)
		st = db_run("UPDATE history_usage SET bytes = GREATEST(bytes - ?, 0), "
			    "since = GREATEST(since, ?) WHERE user_id = ?",
			    usage, 3, NULL, NULL, NULL);
	if (st == DB_OK) {
		char stamp[32];
		format_timestamp(t.cutoff, stamp, sizeof stamp);
		log_info("history over history_max_kb (%lld KB): dropped %lld bytes "
			 "of writes up to %s", (long long)max_kb,
			 (long long)t.removed, stamp);
	}
	return st;
}

enum db_status db_history_finish(void)
{
	if (!open_write.active)
		return DB_OK;
	open_write.active = false;
	if (!open_write.touched)
		return DB_OK;
	bool kept = open_write.replaced + open_write.deleted > 0;
	struct db_param log_row[] = {
		DB_INT(open_write.user_id), DB_INT(open_write.stamp),
		DB_CSTR(open_write.collection), DB_INT(open_write.previous),
		DB_INT(open_write.written), DB_INT(open_write.replaced),
		DB_INT(open_write.deleted), DB_CSTR(open_write.agent),
		DB_INT(open_write.bytes),
	};
	enum db_status st = db_run(SQL_WRITE_LOG_INSERT, log_row, 9, NULL, NULL, NULL);
	if (st != DB_OK || !kept)
		return st;
	/* A new account figure starts where the account's log does: every
	 * write since the oldest logged one's predecessor is in the log.
	 * RETURNING gives the figure after this write, for the cap. */
	struct db_param usage[] = { DB_INT(open_write.user_id), DB_INT(open_write.bytes),
				    DB_INT(open_write.user_id) };
	int64_t bytes = 0;
	st = db_run("INSERT INTO history_usage (user_id, bytes, since) VALUES (?, ?, "
		    "(SELECT o.previous FROM write_log o WHERE o.user_id = ? "
		    "ORDER BY o.stamp LIMIT 1)) "
		    "ON DUPLICATE KEY UPDATE bytes = bytes + VALUES(bytes) RETURNING bytes",
		    usage, 3, int_row, &bytes, NULL);
	if (st == DB_OK && open_write.max_kb > 0)
		st = apply_cap(open_write.user_id, open_write.max_kb, bytes);
	return st;
}

/* ---- weave-admin ------------------------------------------------------ */

enum db_status db_history_forget_user(int64_t user_id)
{
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_run("DELETE FROM wbo_history WHERE user_id = ?", p, 1,
				   NULL, NULL, NULL);
	if (st == DB_OK)
		st = db_run("DELETE FROM write_log WHERE user_id = ?", p, 1, NULL,
			    NULL, NULL);
	if (st == DB_OK)
		st = db_run("DELETE FROM history_usage WHERE user_id = ?", p, 1, NULL,
			    NULL, NULL);
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

enum db_status db_history_purge_batch(int64_t before, int64_t limit,
				      uint64_t *writes, uint64_t *versions)
{
	struct old_writes o = { xcalloc((size_t)limit, sizeof *o.rows), 0, (size_t)limit };
	struct db_param p[] = { DB_INT(before), DB_INT(limit) };
	*writes = 0;
	*versions = 0;
	enum db_status st = db_run("SELECT user_id, stamp, collection, bytes FROM write_log "
				   "WHERE stamp < ? ORDER BY stamp LIMIT ?",
				   p, 2, old_write_row, &o, NULL);
	for (size_t i = 0; i < o.n && st == DB_OK; i++) {
		const struct old_write *w = &o.rows[i];
		bool every = w->collection[0] == '\0';
		struct db_param v[] = { DB_INT(w->user_id), DB_INT(w->stamp),
					DB_CSTR(w->collection), DB_INT(every) };
		uint64_t removed = 0;
		st = db_run("DELETE FROM wbo_history WHERE user_id = ? AND replaced = ? "
			    "AND (collection = ? OR 1 = ?)", v, 4, NULL, NULL, &removed);
		*versions += removed;
		if (st == DB_OK)
			st = db_run("DELETE FROM write_log WHERE user_id = ? AND stamp = ? "
				    "AND collection = ?", v, 3, NULL, NULL, NULL);
		struct db_param u[] = { DB_INT(w->bytes), DB_INT(w->stamp),
					DB_INT(w->user_id) };
		if (st == DB_OK)
			st = db_run("UPDATE history_usage SET bytes = GREATEST(bytes - ?, 0), "
				    "since = GREATEST(since, ?) WHERE user_id = ?",
				    u, 3, NULL, NULL, NULL);
		if (st == DB_OK)
			(*writes)++;
	}
	free(o.rows);
	return st;
}

enum db_status db_history_forget_usage(void)
{
	return db_run("DELETE FROM history_usage", NULL, 0, NULL, NULL, NULL);
}

enum db_status db_history_count_before(int64_t before, int64_t *writes)
{
	struct db_param p[] = { DB_INT(before) };
	*writes = 0;
	return db_run("SELECT COUNT(*) FROM write_log WHERE stamp < ?", p, 1, int_row,
		      writes, NULL);
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
	/* A DELETE of all storage (collection '') touched every collection. */
	return db_run("SELECT stamp, previous, collection, written, replaced, deleted, "
		      "bytes, agent FROM write_log WHERE user_id = ? AND stamp > ? "
		      "AND (collection = ? OR collection = '' OR 1 = ?) "
		      "ORDER BY stamp, collection", p, 4, entry_row, &c, NULL);
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
	enum db_status st = db_run("SELECT bytes, since FROM history_usage "
				   "WHERE user_id = ?", p, 1, usage_row, &u, NULL);
	if (st == DB_OK && !u.found) {
		/* Nothing kept yet: the history is whole from the oldest
		 * logged write's predecessor on, if anything was logged. */
		u.found = false;
		st = db_run("SELECT 0, previous FROM write_log WHERE user_id = ? "
			    "ORDER BY stamp LIMIT 1", p, 1, usage_row, &u, NULL);
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
	return db_run("SELECT COALESCE(MAX(v.modified), 0) FROM ("
		      "SELECT user_id, modified FROM wbo WHERE user_id = ? AND modified > ? "
		      "AND (collection = ? OR 1 = ?) UNION ALL "
		      "SELECT user_id, modified FROM wbo_history WHERE user_id = ? "
		      "AND modified > ? AND (collection = ? OR 1 = ?)) v "
		      "WHERE NOT EXISTS (SELECT 1 FROM write_log l "
		      "WHERE l.user_id = v.user_id AND l.stamp = v.modified)",
		      p, 8, int_row, newest, NULL);
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
	return db_run("SELECT collection FROM wbo WHERE user_id = ? UNION "
		      "SELECT collection FROM wbo_history WHERE user_id = ? "
		      "AND replaced > ? ORDER BY 1", p, 3, name_row, &c, NULL);
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
	return db_run("SELECT id, 0, modified, expires, payload_size FROM wbo "
		      "WHERE user_id = ? AND collection = ? ORDER BY id",
		      p, 2, version_row, &c, NULL);
}

enum db_status db_history_versions_after(int64_t user_id, const char *collection,
					 int64_t after, db_history_version_fn fn,
					 void *ctx)
{
	struct version_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_INT(after) };
	return db_run("SELECT id, replaced, modified, expires, payload_size "
		      "FROM wbo_history WHERE user_id = ? AND collection = ? "
		      "AND replaced > ? ORDER BY id, replaced",
		      p, 3, version_row, &c, NULL);
}

enum db_status db_history_put_back(int64_t user_id, const char *collection,
				   const char *id, size_t id_len, int64_t replaced)
{
	struct db_param current[] = { DB_INT(user_id), DB_CSTR(collection),
				      DB_STR(id, id_len) };
	enum db_status st = db_history_keep("user_id = ? AND collection = ? AND id = ?",
					    current, 3, false);
	if (st != DB_OK)
		return st;
	db_history_note_written(1);
	struct db_param p[] = { DB_INT(open_write.stamp), DB_INT(user_id),
				DB_CSTR(collection), DB_STR(id, id_len),
				DB_INT(replaced) };
	return db_run("INSERT INTO wbo (user_id, collection, id, modified, parentid, "
		      "predecessorid, sortindex, payload, payload_size, expires) "
		      "SELECT user_id, collection, id, ?, parentid, predecessorid, "
		      "sortindex, payload, payload_size, expires FROM wbo_history "
		      "WHERE user_id = ? AND collection = ? AND id = ? AND replaced = ? "
		      "ON DUPLICATE KEY UPDATE modified = VALUES(modified), "
		      "parentid = VALUES(parentid), predecessorid = VALUES(predecessorid), "
		      "sortindex = VALUES(sortindex), payload = VALUES(payload), "
		      "payload_size = VALUES(payload_size), expires = VALUES(expires)",
		      p, 5, NULL, NULL, NULL);
}
