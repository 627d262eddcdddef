/*
 * db_storage.c - SQL for the wbo table. Near 670 lines because every
 * statement on records is built here, from the query's selection and the
 * write's columns, around one small statement builder (struct sql):
 * splitting reads from writes would split that builder's users.
 */
#include "db_storage.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "db_history.h"
#include "sql_statements.h"
#include "util.h"

enum storage_stmt {
	STORAGE_COLLECTION_STAMPS,
	STORAGE_COLLECTION_COUNTS,
	STORAGE_COLLECTION_BYTES,
	STORAGE_TOTAL_BYTES,
	STORAGE_STMT__MAX
};

static const char *const storage_sql[STORAGE_STMT__MAX] = {
	/*
	 * Newest live record per collection, in reads per collection rather
	 * than per record: the GROUP BY (no aggregate) is a loose index scan,
	 * one seek per collection, and each subquery walks by_modified from
	 * the top until a record that has not expired. MAX(modified) with
	 * the expires condition read every record of the user: 1 M records
	 * took 0.4 s (bench/run scale). The second subquery gives the
	 * earliest expiry among each collection's newest records: the answer
	 * holds until then (stamp_cache.h). Parameters: now, now, user_id.
	 */
	[STORAGE_COLLECTION_STAMPS] =
		"SELECT c.collection, (SELECT w.modified FROM wbo w "
		"WHERE w.user_id = c.user_id AND w.collection = c.collection "
		"AND w.expires > ? ORDER BY w.modified DESC LIMIT 1) AS newest, "
		"(SELECT w.expires FROM wbo w "
		"WHERE w.user_id = c.user_id AND w.collection = c.collection "
		"AND w.expires > ? ORDER BY w.modified DESC, w.expires ASC "
		"LIMIT 1) AS newest_expires "
		"FROM wbo c WHERE c.user_id = ? GROUP BY c.user_id, c.collection "
		"HAVING newest IS NOT NULL",
	[STORAGE_COLLECTION_COUNTS] =
		"SELECT collection, COUNT(*) FROM wbo "
		"WHERE user_id = ? AND expires > ? GROUP BY collection",
	[STORAGE_COLLECTION_BYTES] =
		"SELECT collection, CAST(SUM(payload_size) AS SIGNED) FROM wbo "
		"WHERE user_id = ? AND expires > ? GROUP BY collection",
	[STORAGE_TOTAL_BYTES] =
		"SELECT CAST(COALESCE(SUM(payload_size), 0) AS SIGNED) FROM wbo "
		"WHERE user_id = ? AND expires > ?",
};

struct collection_ctx {
	db_collection_fn fn;
	void *ctx;
};

static int collection_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct collection_ctx *c = ctx;
	(void)ncols;
	return c->fn(c->ctx, row[0].s, row[0].len, row[1].i);
}

static enum db_status per_collection(enum storage_stmt which, int64_t user_id,
				     int64_t now, db_collection_fn fn, void *ctx)
{
	struct collection_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_INT(now) };
	return db_run(storage_sql[which], p, 2, collection_row, &c, NULL);
}

struct stamps_ctx {
	db_collection_fn fn;
	void *ctx;
	int64_t *valid_until;
};

static int stamps_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct stamps_ctx *c = ctx;
	(void)ncols;
	if (!row[2].is_null && row[2].i < *c->valid_until)
		*c->valid_until = row[2].i;
	return c->fn(c->ctx, row[0].s, row[0].len, row[1].i);
}

enum db_status db_storage_collection_stamps(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx,
					    int64_t *valid_until)
{
	struct stamps_ctx c = { fn, ctx, valid_until };
	struct db_param p[] = { DB_INT(now), DB_INT(now), DB_INT(user_id) };
	*valid_until = INT64_MAX;
	enum db_status st = db_run(storage_sql[STORAGE_COLLECTION_STAMPS], p, 3,
				   stamps_row, &c, NULL);
	/*
	 * Prepared once per process, MariaDB 10.11 kept whichever plan the
	 * first accounts (small ones) got: a 1 M-record account then read
	 * every record (0.4 s) where a fresh statement needs 31 index reads
	 * (bench/run scale). Preparing it each time costs one round trip.
	 */
	db_forget(storage_sql[STORAGE_COLLECTION_STAMPS]);
	return st;
}

enum db_status db_storage_collection_counts(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx)
{
	return per_collection(STORAGE_COLLECTION_COUNTS, user_id, now, fn, ctx);
}

enum db_status db_storage_collection_bytes(int64_t user_id, int64_t now,
					   db_collection_fn fn, void *ctx)
{
	return per_collection(STORAGE_COLLECTION_BYTES, user_id, now, fn, ctx);
}

static int total_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].i;
	return 0;
}

enum db_status db_storage_total_bytes(int64_t user_id, int64_t now,
				      int64_t *bytes)
{
	struct db_param p[] = { DB_INT(user_id), DB_INT(now) };
	*bytes = 0;
	return db_run(storage_sql[STORAGE_TOTAL_BYTES], p, 2, total_row, bytes,
		      NULL);
}

/* ---- records ------------------------------------------------------------ */

#define NEVER_EXPIRES INT64_MAX
#define MAX_IN_CHUNK 512

/*
 * SQL built at run time from the fixed fragments below; client values
 * only ever go into params. Statement texts repeat (id lists are cut
 * into power-of-two chunks) so the prepared-statement cache works.
 */
struct sql {
	struct buf text;
	struct db_param *params;
	size_t nparams, cap;
};

static void sql_init(struct sql *s)
{
	buf_init(&s->text, 1024 * 1024);
	s->params = NULL;
	s->nparams = 0;
	s->cap = 0;
}

static void sql_free(struct sql *s)
{
	buf_free(&s->text);
	free(s->params);
}

static void sql_reset(struct sql *s)
{
	buf_reset(&s->text);
	s->nparams = 0;
}

static void sql_add(struct sql *s, const char *fragment)
{
	buf_puts(&s->text, fragment);
}

static void sql_param(struct sql *s, struct db_param p)
{
	if (s->nparams == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 32;
		s->params = xrealloc(s->params, s->cap * sizeof *s->params);
	}
	s->params[s->nparams++] = p;
}

static enum db_status sql_run(struct sql *s, db_row_fn fn, void *ctx,
			      uint64_t *affected)
{
	return db_run(s->text.data, s->params, s->nparams, fn, ctx, affected);
}

/* Largest power of two <= n, at most max. */
static size_t chunk_size(size_t n, size_t max)
{
	size_t c = 1;
	while (c * 2 <= n && c * 2 <= max)
		c *= 2;
	return c;
}

static void add_id_list(struct sql *s, const char *const *ids,
			const size_t *lens, size_t n)
{
	sql_add(s, SQL_IDS_OPEN);
	for (size_t i = 0; i < n; i++) {
		sql_add(s, i ? ",?" : "?");
		sql_param(s, DB_STR(ids[i], lens[i]));
	}
	sql_add(s, SQL_IDS_CLOSE);
}

/* The WHERE conditions of q other than ids. */
static void add_filters(struct sql *s, const struct wbo_query *q)
{
	if (q->parentid) {
		sql_add(s, " AND parentid = ?");
		sql_param(s, DB_STR(q->parentid, q->parentid_len));
	}
	if (q->predecessorid) {
		sql_add(s, " AND predecessorid = ?");
		sql_param(s, DB_STR(q->predecessorid, q->predecessorid_len));
	}
	if (q->has_newer) {
		sql_add(s, SQL_NEWER);
		sql_param(s, DB_INT(q->newer));
	}
	if (q->has_older) {
		sql_add(s, " AND modified < ?");
		sql_param(s, DB_INT(q->older));
	}
	if (q->has_index_above) {
		sql_add(s, " AND sortindex > ?");
		sql_param(s, DB_INT(q->index_above));
	}
	if (q->has_index_below) {
		sql_add(s, " AND sortindex < ?");
		sql_param(s, DB_INT(q->index_below));
	}
}

/* ORDER BY with a tie-break on id, so limit/offset paging is stable. */
static void add_order_and_limit(struct sql *s, const struct wbo_query *q)
{
	static const char *const order[SORT__MAX] = {
		[SORT_NONE] = " ORDER BY id",
		[SORT_OLDEST] = " ORDER BY modified ASC, id ASC",
		[SORT_NEWEST] = " ORDER BY modified DESC, id ASC",
		[SORT_INDEX] = SQL_ORDER_BY_INDEX,
	};
	if (q->sort != SORT_NONE || q->limit > 0 || q->offset > 0)
		sql_add(s, order[q->sort]);
	if (q->limit > 0 || q->offset > 0) {
		sql_add(s, SQL_LIMIT);
		sql_param(s, DB_INT(q->limit > 0 ? q->limit : INT64_MAX));
		sql_param(s, DB_INT(q->offset));
	}
}

struct record_ctx {
	db_record_fn fn;
	void *ctx;
	bool full;
};

static int record_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct record_ctx *r = ctx;
	struct wbo_row w;
	memset(&w, 0, sizeof w);
	w.id = row[0].s;
	w.id_len = row[0].len;
	w.modified = row[1].i;
	if (r->full && ncols >= 6) {
		if (!row[2].is_null) {
			w.parentid = row[2].s;
			w.parentid_len = row[2].len;
		}
		if (!row[3].is_null) {
			w.predecessorid = row[3].s;
			w.predecessorid_len = row[3].len;
		}
		w.has_sortindex = !row[4].is_null;
		w.sortindex = row[4].i;
		if (!row[5].is_null) {
			w.payload = row[5].s;
			w.payload_len = row[5].len;
		}
	}
	return r->fn(r->ctx, &w);
}

static void add_select_head(struct sql *s, bool full, int64_t user_id,
			    const char *collection, int64_t now)
{
	sql_add(s, full ? SQL_WBO_SELECT_FULL : SQL_WBO_SELECT_IDS);
	sql_add(s, SQL_WBO_WHERE);
	sql_param(s, DB_INT(user_id));
	sql_param(s, DB_CSTR(collection));
	sql_param(s, DB_INT(now));
}

enum db_status db_storage_select(int64_t user_id, const char *collection,
				 const struct wbo_query *q, int64_t now,
				 db_record_fn fn, void *ctx)
{
	struct record_ctx r = { fn, ctx, q->full };
	struct sql s;
	enum db_status st = DB_OK;

	if (q->has_ids && q->nids == 0)
		return DB_OK; /* "ids=" selects nothing */
	sql_init(&s);
	add_select_head(&s, q->full, user_id, collection, now);
	if (q->has_ids) {
		/* Pad the list to a power of two with repeats of the last id,
		 * so that a few statement texts cover every list length. */
		size_t padded = 1;
		while (padded < q->nids)
			padded *= 2;
		sql_add(&s, " AND id IN (");
		for (size_t i = 0; i < padded; i++) {
			size_t k = i < q->nids ? i : q->nids - 1;
			sql_add(&s, i ? ",?" : "?");
			sql_param(&s, DB_STR(q->ids[k], q->id_lens[k]));
		}
		sql_add(&s, ")");
	}
	add_filters(&s, q);
	add_order_and_limit(&s, q);
	st = sql_run(&s, record_row, &r, NULL);
	sql_free(&s);
	return st;
}

struct found_ctx {
	struct record_ctx inner;
	bool found;
};

static int found_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct found_ctx *f = ctx;
	f->found = true;
	return record_row(&f->inner, row, ncols);
}

enum db_status db_storage_get(int64_t user_id, const char *collection,
			      const char *id, int64_t now, db_record_fn fn,
			      void *ctx)
{
	struct found_ctx f = { { fn, ctx, true }, false };
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_CSTR(id),
				DB_INT(now) };
	enum db_status st = db_run(
		"SELECT id, modified, parentid, predecessorid, sortindex, payload "
		"FROM wbo WHERE user_id = ? AND collection = ? AND id = ? "
		"AND expires > ?",
		p, 4, found_row, &f, NULL);
	if (st == DB_OK && !f.found)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_storage_last_modified(int64_t user_id, const char *collection,
					int64_t now, int64_t *modified)
{
	*modified = 0;
	if (collection == NULL) {
		struct db_param p[] = { DB_INT(user_id), DB_INT(now) };
		return db_run("SELECT COALESCE(MAX(modified), 0) FROM wbo "
			      "WHERE user_id = ? AND expires > ?",
			      p, 2, total_row, modified, NULL);
	}
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_INT(now) };
	return db_run("SELECT COALESCE(MAX(modified), 0) FROM wbo "
		      "WHERE user_id = ? AND collection = ? AND expires > ?",
		      p, 3, total_row, modified, NULL);
}

/* Columns a shape writes, in statement order. */
static void add_insert(struct sql *s, unsigned shape, const struct wbo *items,
		       size_t n, int64_t user_id, const char *collection,
		       int64_t stamp)
{
	/* Only content moves modified: predecessorid, sortindex and ttl
	 * order or expire a record (PHP weave_storage.php update_object). */
	bool bump = (shape & (WBO_FIELD_PAYLOAD | WBO_FIELD_PARENTID)) != 0;
	sql_add(s, SQL_WBO_INSERT);
	if (shape & WBO_FIELD_PARENTID)
		sql_add(s, ", parentid");
	if (shape & WBO_FIELD_PREDECESSORID)
		sql_add(s, ", predecessorid");
	if (shape & WBO_FIELD_SORTINDEX)
		sql_add(s, SQL_COLUMN_SORTINDEX);
	if (shape & WBO_FIELD_PAYLOAD)
		sql_add(s, SQL_COLUMN_PAYLOAD);
	if (shape & WBO_FIELD_TTL)
		sql_add(s, ", expires");
	sql_add(s, SQL_WBO_VALUES);
	for (size_t i = 0; i < n; i++) {
		const struct wbo *w = &items[i];
		sql_add(s, i ? ",(?,?,?,?" : "(?,?,?,?");
		sql_param(s, DB_INT(user_id));
		sql_param(s, DB_CSTR(collection));
		sql_param(s, DB_STR(w->id, w->id_len));
		sql_param(s, DB_INT(stamp));
		if (shape & WBO_FIELD_PARENTID) {
			sql_add(s, ",?");
			sql_param(s, DB_STR(w->parentid, w->parentid_len));
		}
		if (shape & WBO_FIELD_PREDECESSORID) {
			sql_add(s, ",?");
			sql_param(s, DB_STR(w->predecessorid, w->predecessorid_len));
		}
		if (shape & WBO_FIELD_SORTINDEX) {
			sql_add(s, ",?");
			sql_param(s, DB_INT(w->sortindex));
		}
		if (shape & WBO_FIELD_PAYLOAD) {
			sql_add(s, ",?,?");
			sql_param(s, DB_STR(w->payload, w->payload_len));
			sql_param(s, DB_INT(w->payload_len));
		}
		if (shape & WBO_FIELD_TTL) {
			sql_add(s, ",?");
			sql_param(s, DB_INT(stamp + w->ttl * 100));
		}
		sql_add(s, ")");
	}
	sql_add(s, SQL_WBO_UPSERT);
	sql_add(s, bump ? SQL_UPDATE_MODIFIED : "modified = modified");
	if (shape & WBO_FIELD_PARENTID)
		sql_add(s, ", parentid = VALUES(parentid)");
	if (shape & WBO_FIELD_PREDECESSORID)
		sql_add(s, ", predecessorid = VALUES(predecessorid)");
	if (shape & WBO_FIELD_SORTINDEX)
		sql_add(s, SQL_UPDATE_SORTINDEX);
	if (shape & WBO_FIELD_PAYLOAD)
		sql_add(s, SQL_UPDATE_PAYLOAD);
	if (shape & WBO_FIELD_TTL)
		sql_add(s, ", expires = VALUES(expires)");
}

/*
 * Ids of items as an IN list's placeholders, padded to a power of two
 * with repeats of the last id: the statements below run on every upload,
 * and the padding keeps them to a few prepared texts, one statement per
 * MAX_IN_CHUNK ids (as in db_storage_select).
 */
static void add_padded_ids(struct sql *s, const struct wbo *items, size_t n)
{
	size_t padded = 1;
	while (padded < n)
		padded *= 2;
	for (size_t i = 0; i < padded; i++) {
		const struct wbo *w = &items[i < n ? i : n - 1];
		sql_add(s, i ? ",?" : "?");
		sql_param(s, DB_STR(w->id, w->id_len));
	}
	sql_add(s, SQL_IDS_CLOSE);
}

/*
 * Before an upload writes items: expired rows among their ids are
 * deleted, since the upload must not update them in place. While record
 * history is on, the rows it replaces are kept first, by a statement
 * that also finds the expired ones, so that the DELETE runs only when
 * there are some and keeping costs no extra search of wbo.
 */
static enum db_status prepare_upload(struct sql *s, int64_t user_id,
				     const char *collection,
				     const struct wbo *items, size_t n,
				     int64_t now)
{
	enum db_status st = DB_OK;
	bool history = db_history_active();
	if (history)
		db_history_note_written(n);
	for (size_t done = 0; done < n && st == DB_OK;) {
		size_t c = n - done < MAX_IN_CHUNK ? n - done : MAX_IN_CHUNK;
		bool expired = true;
		if (history) {
			sql_reset(s);
			sql_add(s, SQL_KEEP_BY_IDS);
			sql_param(s, DB_INT(user_id));
			sql_param(s, DB_CSTR(collection));
			add_padded_ids(s, items + done, c);
			st = db_history_keep_replaced(s->text.data, s->params,
						      s->nparams, &expired);
		}
		if (st == DB_OK && expired) {
			sql_reset(s);
			sql_add(s, SQL_WBO_DROP_EXPIRED);
			sql_param(s, DB_INT(user_id));
			sql_param(s, DB_CSTR(collection));
			sql_param(s, DB_INT(now));
			sql_add(s, SQL_IDS_OPEN);
			add_padded_ids(s, items + done, c);
			st = sql_run(s, NULL, NULL, NULL);
		}
		done += c;
	}
	return st;
}

/*
 * Record history: keep the rows that the DELETE in s (its text starts
 * "DELETE FROM wbo WHERE ") is about to remove. Nothing when off.
 */
static enum db_status keep_deleted(const struct sql *s)
{
	static const char head[] = "DELETE FROM wbo WHERE ";
	return db_history_keep(s->text.data + sizeof head - 1, s->params,
			       s->nparams, true);
}

enum db_status db_storage_put(int64_t user_id, const char *collection,
			      const struct wbo *items, size_t n, int64_t stamp)
{
	struct sql s;
	enum db_status st;
	bool *done = xcalloc(n ? n : 1, sizeof *done);
	struct wbo *group = xcalloc(n ? n : 1, sizeof *group);

	sql_init(&s);
	st = prepare_upload(&s, user_id, collection, items, n, stamp);
	/* One multi-row statement per shape (set of present fields). */
	for (size_t first = 0; first < n && st == DB_OK; first++) {
		if (done[first])
			continue;
		unsigned shape = items[first].fields;
		size_t count = 0;
		for (size_t i = first; i < n; i++) {
			if (!done[i] && items[i].fields == shape) {
				group[count++] = items[i];
				done[i] = true;
			}
		}
		for (size_t at = 0; at < count && st == DB_OK;) {
			size_t c = chunk_size(count - at, 64);
			sql_reset(&s);
			add_insert(&s, shape, group + at, c, user_id, collection, stamp);
			st = sql_run(&s, NULL, NULL, NULL);
			at += c;
		}
	}
	sql_free(&s);
	free(group);
	free(done);
	return st;
}

struct id_list {
	char **ids;
	size_t *lens;
	size_t n, cap;
};

static int collect_id(void *ctx, const struct db_value *row, size_t ncols)
{
	struct id_list *l = ctx;
	(void)ncols;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->ids = xrealloc(l->ids, l->cap * sizeof *l->ids);
		l->lens = xrealloc(l->lens, l->cap * sizeof *l->lens);
	}
	l->ids[l->n] = xstrndup(row[0].s, row[0].len);
	l->lens[l->n] = row[0].len;
	l->n++;
	return 0;
}

static enum db_status delete_by_ids(struct sql *s, int64_t user_id,
				    const char *collection,
				    const char *const *ids, const size_t *lens,
				    size_t n, const struct wbo_query *filters,
				    uint64_t *deleted)
{
	enum db_status st = DB_OK;
	for (size_t done = 0; done < n && st == DB_OK;) {
		size_t c = chunk_size(n - done, MAX_IN_CHUNK);
		uint64_t affected = 0;
		sql_reset(s);
		sql_add(s, "DELETE FROM wbo WHERE user_id = ? AND collection = ?");
		sql_param(s, DB_INT(user_id));
		sql_param(s, DB_CSTR(collection));
		add_id_list(s, ids + done, lens + done, c);
		if (filters != NULL)
			add_filters(s, filters);
		st = keep_deleted(s);
		if (st == DB_OK)
			st = sql_run(s, NULL, NULL, &affected);
		*deleted += affected;
		done += c;
	}
	return st;
}

enum db_status db_storage_delete(int64_t user_id, const char *collection,
				 const struct wbo_query *q, int64_t now,
				 uint64_t *deleted)
{
	struct sql s;
	enum db_status st;

	*deleted = 0;
	if (q->has_ids && q->nids == 0)
		return DB_OK;
	sql_init(&s);
	if (q->limit > 0 || q->offset > 0 || q->sort != SORT_NONE) {
		/* MariaDB has no DELETE ... OFFSET: select the ids, then delete them. */
		struct id_list l = { NULL, NULL, 0, 0 };
		struct wbo_query ids_only = *q;
		ids_only.full = false;
		sql_add(&s, "SELECT id FROM wbo WHERE user_id = ? AND collection = ? "
			    "AND expires > ?");
		sql_param(&s, DB_INT(user_id));
		sql_param(&s, DB_CSTR(collection));
		sql_param(&s, DB_INT(now));
		if (q->has_ids)
			add_id_list(&s, q->ids, q->id_lens, q->nids);
		add_filters(&s, q);
		add_order_and_limit(&s, &ids_only);
		st = sql_run(&s, collect_id, &l, NULL);
		if (st == DB_OK)
			st = delete_by_ids(&s, user_id, collection,
					   (const char *const *)l.ids, l.lens, l.n,
					   NULL, deleted);
		for (size_t i = 0; i < l.n; i++)
			free(l.ids[i]);
		free(l.ids);
		free(l.lens);
	} else if (q->has_ids) {
		st = delete_by_ids(&s, user_id, collection, q->ids, q->id_lens,
				   q->nids, q, deleted);
	} else {
		sql_add(&s, "DELETE FROM wbo WHERE user_id = ? AND collection = ?");
		sql_param(&s, DB_INT(user_id));
		sql_param(&s, DB_CSTR(collection));
		add_filters(&s, q);
		st = keep_deleted(&s);
		if (st == DB_OK)
			st = sql_run(&s, NULL, NULL, deleted);
	}
	sql_free(&s);
	return st;
}

enum db_status db_storage_delete_one(int64_t user_id, const char *collection,
				     const char *id)
{
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_CSTR(id) };
	enum db_status st = db_history_keep("user_id = ? AND collection = ? AND id = ?",
					    p, 3, true);
	if (st != DB_OK)
		return st;
	return db_run("DELETE FROM wbo WHERE user_id = ? AND collection = ? AND id = ?",
		      p, 3, NULL, NULL, NULL);
}

enum db_status db_storage_delete_all(int64_t user_id)
{
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_history_keep("user_id = ?", p, 1, true);
	if (st != DB_OK)
		return st;
	return db_run("DELETE FROM wbo WHERE user_id = ?", p, 1, NULL, NULL, NULL);
}
