/*
 * db_storage.c - SQL for the wbo table. Near 800 lines because every
 * statement on records is here, in one table (storage_sql[], whole texts
 * and the pieces built statements are joined from) and one small builder
 * (struct sql) that joins them from the query's selection and the write's
 * columns: splitting reads from writes would split that builder's users.
 */
#include "db_storage.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "db_history.h"
#include "log.h"
#include "util.h"

enum storage_stmt {
	STORAGE_COLLECTION_STAMPS,
	STORAGE_COLLECTION_COUNTS,
	STORAGE_COLLECTION_BYTES,
	STORAGE_TOTAL_BYTES,
	STORAGE_GET,
	STORAGE_LAST_MODIFIED_ALL,
	STORAGE_LAST_MODIFIED,
	/* The pieces that the builders below join into statements. */
	STORAGE_SELECT_FULL,
	STORAGE_SELECT_IDS,
	STORAGE_SELECT_ID,
	STORAGE_DELETE,
	STORAGE_RESTAMP,
	STORAGE_MODIFIED_IS,
	STORAGE_OF_USER,
	STORAGE_IN_COLLECTION,
	STORAGE_LIVE,
	STORAGE_EXPIRED,
	STORAGE_ONE_ID,
	STORAGE_IDS_OPEN,
	STORAGE_PARENTID,
	STORAGE_PREDECESSORID,
	STORAGE_NEWER,
	STORAGE_OLDER,
	STORAGE_INDEX_ABOVE,
	STORAGE_INDEX_BELOW,
	STORAGE_ORDER_ID,
	STORAGE_ORDER_OLDEST,
	STORAGE_ORDER_NEWEST,
	STORAGE_ORDER_INDEX,
	STORAGE_LIMIT,
	STORAGE_INSERT,
	STORAGE_COLUMN_PARENTID,
	STORAGE_COLUMN_PREDECESSORID,
	STORAGE_COLUMN_SORTINDEX,
	STORAGE_COLUMN_PAYLOAD,
	STORAGE_COLUMN_EXPIRES,
	STORAGE_VALUES,
	STORAGE_UPSERT,
	STORAGE_BUMP_MODIFIED,
	STORAGE_KEEP_MODIFIED,
	STORAGE_UPDATE_PARENTID,
	STORAGE_UPDATE_PREDECESSORID,
	STORAGE_UPDATE_SORTINDEX,
	STORAGE_UPDATE_PAYLOAD,
	STORAGE_UPDATE_EXPIRES,
	STORAGE_STMT__MAX
};

/* Every statement on records, whole or in the pieces a builder joins
 * (bench/dbceiling.c runs them through the functions below). */
static const char *const storage_sql[STORAGE_STMT__MAX] = {
	/*
	 * Newest live record per collection, in reads per collection rather
	 * than per record: the GROUP BY (no aggregate) is a loose index scan,
	 * one seek per collection, and the subquery walks by_modified from
	 * the top until a record that has not expired. MAX(modified) with
	 * the expires condition read every record of the user: 1 M records
	 * took 0.4 s (bench/run scale). The subquery gives that record's
	 * expiry too, as "modified,expires" (a scalar subquery has one
	 * column): the collection's stamp holds at least until then, so the
	 * answer may be kept until the earliest of them (account_cache.h).
	 * Parameters: now, user_id.
	 */
	[STORAGE_COLLECTION_STAMPS] =
		"SELECT c.collection, (SELECT CONCAT(w.modified, ',', w.expires) "
		"FROM wbo w WHERE w.user_id = c.user_id "
		"AND w.collection = c.collection AND w.expires > ? "
		"ORDER BY w.modified DESC LIMIT 1) AS newest "
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
	[STORAGE_GET] =
		"SELECT id, modified, parentid, predecessorid, sortindex, payload "
		"FROM wbo WHERE user_id = ? AND collection = ? AND id = ? "
		"AND expires > ?",
	[STORAGE_LAST_MODIFIED_ALL] =
		"SELECT COALESCE(MAX(modified), 0) FROM wbo "
		"WHERE user_id = ? AND expires > ?",
	[STORAGE_LAST_MODIFIED] =
		"SELECT COALESCE(MAX(modified), 0) FROM wbo "
		"WHERE user_id = ? AND collection = ? AND expires > ?",

	/* Reads and deletes: a head, a WHERE made of the conditions below
	 * (the first, STORAGE_OF_USER, has no leading AND), order, limit. */
	[STORAGE_SELECT_FULL] =
		"SELECT id, modified, parentid, predecessorid, sortindex, payload "
		"FROM wbo WHERE ",
	[STORAGE_SELECT_IDS] = "SELECT id, modified FROM wbo WHERE ",
	[STORAGE_SELECT_ID] = "SELECT id FROM wbo WHERE ",
	[STORAGE_DELETE] = "DELETE FROM wbo WHERE ",
	[STORAGE_RESTAMP] = "UPDATE wbo SET modified = ? WHERE ",
	[STORAGE_MODIFIED_IS] = " AND modified = ?",
	[STORAGE_OF_USER] = "user_id = ?",
	[STORAGE_IN_COLLECTION] = " AND collection = ?",
	[STORAGE_LIVE] = " AND expires > ?",
	[STORAGE_EXPIRED] = " AND expires <= ?",
	[STORAGE_ONE_ID] = " AND id = ?",
	/* then "?" and ",?" per id, then ")" */
	[STORAGE_IDS_OPEN] = " AND id IN (",
	[STORAGE_PARENTID] = " AND parentid = ?",
	[STORAGE_PREDECESSORID] = " AND predecessorid = ?",
	[STORAGE_NEWER] = " AND modified > ?",
	[STORAGE_OLDER] = " AND modified < ?",
	[STORAGE_INDEX_ABOVE] = " AND sortindex > ?",
	[STORAGE_INDEX_BELOW] = " AND sortindex < ?",
	/* ORDER BY with a tie-break on id, so limit/offset paging is stable. */
	[STORAGE_ORDER_ID] = " ORDER BY id",
	[STORAGE_ORDER_OLDEST] = " ORDER BY modified ASC, id ASC",
	[STORAGE_ORDER_NEWEST] = " ORDER BY modified DESC, id ASC",
	[STORAGE_ORDER_INDEX] = " ORDER BY sortindex DESC, id ASC",
	[STORAGE_LIMIT] = " LIMIT ? OFFSET ?",

	/*
	 * The upsert of a POST or PUT: STORAGE_INSERT, the optional columns
	 * the records carry, STORAGE_VALUES, one "(?,?,?,?...)" per record,
	 * STORAGE_UPSERT, then the modified rule and the matching updates.
	 */
	[STORAGE_INSERT] = "INSERT INTO wbo (user_id, collection, id, modified",
	/* Without STORAGE_UPSERT and what follows it, the same is the plain
	 * insert of an upload's new records (db_storage_put). */
	[STORAGE_COLUMN_PARENTID] = ", parentid",
	[STORAGE_COLUMN_PREDECESSORID] = ", predecessorid",
	[STORAGE_COLUMN_SORTINDEX] = ", sortindex",
	[STORAGE_COLUMN_PAYLOAD] = ", payload, payload_size",
	[STORAGE_COLUMN_EXPIRES] = ", expires",
	[STORAGE_VALUES] = ") VALUES ",
	[STORAGE_UPSERT] = " ON DUPLICATE KEY UPDATE ",
	[STORAGE_BUMP_MODIFIED] = "modified = VALUES(modified)",
	[STORAGE_KEEP_MODIFIED] = "modified = modified",
	[STORAGE_UPDATE_PARENTID] = ", parentid = VALUES(parentid)",
	[STORAGE_UPDATE_PREDECESSORID] = ", predecessorid = VALUES(predecessorid)",
	[STORAGE_UPDATE_SORTINDEX] = ", sortindex = VALUES(sortindex)",
	[STORAGE_UPDATE_PAYLOAD] =
		", payload = VALUES(payload), payload_size = VALUES(payload_size)",
	[STORAGE_UPDATE_EXPIRES] = ", expires = VALUES(expires)",
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
	bool malformed;
};

/* "modified,expires" as the stamps statement writes them. */
static bool split_stamp(const char *s, size_t len, int64_t *modified, int64_t *expires)
{
	char text[48];
	if (len >= sizeof text)
		return false;
	memcpy(text, s, len);
	text[len] = '\0';
	char *comma = strchr(text, ',');
	if (comma == NULL)
		return false;
	*comma = '\0';
	return parse_int64(text, 0, INT64_MAX, modified) == 0 &&
	       parse_int64(comma + 1, 0, INT64_MAX, expires) == 0;
}

static int stamps_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct stamps_ctx *c = ctx;
	int64_t modified, expires;
	(void)ncols;
	if (row[1].is_null || !split_stamp(row[1].s, row[1].len, &modified, &expires)) {
		c->malformed = true;
		return 1;
	}
	if (expires < *c->valid_until)
		*c->valid_until = expires;
	return c->fn(c->ctx, row[0].s, row[0].len, modified);
}

/*
 * MariaDB 10.11 plans a prepared statement with the index statistics of
 * the moment it was prepared: one prepared while the accounts were small
 * went on reading every record of an account that grew to 900 000 (0.3 s
 * a poll), where the same statement prepared afresh reads its newest few
 * (0.2 ms; docs/performance.md, "Cold polls, session 19"). Preparing it
 * for every poll cost the cold poll a round trip and a parse; preparing
 * it again once it is a minute old bounds how long a stale plan lasts.
 */
#define STAMPS_REPLAN_MS 60000

enum db_status db_storage_collection_stamps(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx,
					    int64_t *valid_until)
{
	struct stamps_ctx c = { fn, ctx, valid_until, false };
	struct db_param p[] = { DB_INT(now), DB_INT(user_id) };
	*valid_until = INT64_MAX;
	db_replan_after(storage_sql[STORAGE_COLLECTION_STAMPS], STAMPS_REPLAN_MS);
	enum db_status st = db_run(storage_sql[STORAGE_COLLECTION_STAMPS], p, 2,
				   stamps_row, &c, NULL);
	if (st == DB_OK && c.malformed) {
		log_error("collection stamps: a row the statement cannot have made");
		return DB_ERROR;
	}
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

#define MAX_IN_CHUNK 512
/*
 * An upload's upsert takes at most this many records per statement, and
 * pads their number up to a multiple of INSERT_ROUND with repeats of the
 * last record (a repeated row of an upsert writes the same values again:
 * harmless). One statement per 100-record batch instead of three (64, 32,
 * 4): its round trips are made while the account's row lock is held, and
 * they cap how many uploads one account takes per second
 * (docs/performance.md). The rounding keeps the texts to a few.
 */
#define MAX_INSERT_ROWS 128
#define INSERT_ROUND 8

static const char *sql_of(enum storage_stmt which)
{
	return storage_sql[which];
}

/*
 * SQL built at run time from the table's pieces; client values only ever
 * go into params. Statement texts repeat (id lists are padded to powers
 * of two) so the prepared-statement cache works.
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

static void sql_add(struct sql *s, enum storage_stmt piece)
{
	buf_puts(&s->text, sql_of(piece));
}

/* Punctuation between pieces: placeholders, commas, brackets. */
static void sql_punct(struct sql *s, const char *text)
{
	buf_puts(&s->text, text);
}

static void sql_param(struct sql *s, struct db_param p)
{
	if (s->nparams == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 32;
		s->params = xrealloc(s->params, s->cap * sizeof *s->params);
	}
	s->params[s->nparams++] = p;
}

static void sql_add_param(struct sql *s, enum storage_stmt piece, struct db_param p)
{
	sql_add(s, piece);
	sql_param(s, p);
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

/* "user_id = ? AND collection = ?": the head of every WHERE on records. */
static void add_collection(struct sql *s, int64_t user_id, const char *collection)
{
	sql_add_param(s, STORAGE_OF_USER, DB_INT(user_id));
	sql_add_param(s, STORAGE_IN_COLLECTION, DB_CSTR(collection));
}

/*
 * " AND id IN (...)" of n ids, padded to `padded` (>= n) with repeats of
 * the last id, so that a few statement texts cover every list length.
 */
static void add_ids(struct sql *s, const char *const *ids, const size_t *lens,
		    size_t n, size_t padded)
{
	sql_add(s, STORAGE_IDS_OPEN);
	for (size_t i = 0; i < padded; i++) {
		size_t k = i < n ? i : n - 1;
		sql_punct(s, i ? ",?" : "?");
		sql_param(s, DB_STR(ids[k], lens[k]));
	}
	sql_punct(s, ")");
}

/* The same for the ids of records an upload writes. */
static void add_item_ids(struct sql *s, const struct wbo *items, size_t n,
			 size_t padded)
{
	sql_add(s, STORAGE_IDS_OPEN);
	for (size_t i = 0; i < padded; i++) {
		const struct wbo *w = &items[i < n ? i : n - 1];
		sql_punct(s, i ? ",?" : "?");
		sql_param(s, DB_STR(w->id, w->id_len));
	}
	sql_punct(s, ")");
}

static size_t power_of_two_at_least(size_t n)
{
	size_t p = 1;
	while (p < n)
		p *= 2;
	return p;
}

/* The WHERE conditions of q other than ids. */
static void add_filters(struct sql *s, const struct wbo_query *q)
{
	if (q->parentid)
		sql_add_param(s, STORAGE_PARENTID, DB_STR(q->parentid, q->parentid_len));
	if (q->predecessorid)
		sql_add_param(s, STORAGE_PREDECESSORID,
			      DB_STR(q->predecessorid, q->predecessorid_len));
	if (q->has_newer)
		sql_add_param(s, STORAGE_NEWER, DB_INT(q->newer));
	if (q->has_older)
		sql_add_param(s, STORAGE_OLDER, DB_INT(q->older));
	if (q->has_index_above)
		sql_add_param(s, STORAGE_INDEX_ABOVE, DB_INT(q->index_above));
	if (q->has_index_below)
		sql_add_param(s, STORAGE_INDEX_BELOW, DB_INT(q->index_below));
}

static void add_order_and_limit(struct sql *s, const struct wbo_query *q)
{
	static const enum storage_stmt order[SORT__MAX] = {
		[SORT_NONE] = STORAGE_ORDER_ID,
		[SORT_OLDEST] = STORAGE_ORDER_OLDEST,
		[SORT_NEWEST] = STORAGE_ORDER_NEWEST,
		[SORT_INDEX] = STORAGE_ORDER_INDEX,
	};
	if (q->sort != SORT_NONE || q->limit > 0 || q->offset > 0)
		sql_add(s, order[q->sort]);
	if (q->limit > 0 || q->offset > 0) {
		sql_add_param(s, STORAGE_LIMIT, DB_INT(q->limit > 0 ? q->limit : INT64_MAX));
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

enum db_status db_storage_select(int64_t user_id, const char *collection,
				 const struct wbo_query *q, int64_t now,
				 db_record_fn fn, void *ctx)
{
	struct record_ctx r = { fn, ctx, q->full };
	struct sql s;

	if (q->has_ids && q->nids == 0)
		return DB_OK; /* "ids=" selects nothing */
	sql_init(&s);
	sql_add(&s, q->full ? STORAGE_SELECT_FULL : STORAGE_SELECT_IDS);
	add_collection(&s, user_id, collection);
	sql_add_param(&s, STORAGE_LIVE, DB_INT(now));
	if (q->has_ids)
		add_ids(&s, (const char *const *)q->ids, q->id_lens, q->nids,
			power_of_two_at_least(q->nids));
	add_filters(&s, q);
	add_order_and_limit(&s, q);
	enum db_status st = sql_run(&s, record_row, &r, NULL);
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
	enum db_status st = db_run(sql_of(STORAGE_GET), p, 4, found_row, &f, NULL);
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
		return db_run(sql_of(STORAGE_LAST_MODIFIED_ALL), p, 2, total_row,
			      modified, NULL);
	}
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_INT(now) };
	return db_run(sql_of(STORAGE_LAST_MODIFIED), p, 3, total_row, modified, NULL);
}

/* The columns a shape writes, each with its update, in statement order. */
static const struct {
	unsigned field;
	enum storage_stmt column, update;
} optional_columns[] = {
	{ WBO_FIELD_PARENTID, STORAGE_COLUMN_PARENTID, STORAGE_UPDATE_PARENTID },
	{ WBO_FIELD_PREDECESSORID, STORAGE_COLUMN_PREDECESSORID,
	  STORAGE_UPDATE_PREDECESSORID },
	{ WBO_FIELD_SORTINDEX, STORAGE_COLUMN_SORTINDEX, STORAGE_UPDATE_SORTINDEX },
	{ WBO_FIELD_PAYLOAD, STORAGE_COLUMN_PAYLOAD, STORAGE_UPDATE_PAYLOAD },
	{ WBO_FIELD_TTL, STORAGE_COLUMN_EXPIRES, STORAGE_UPDATE_EXPIRES },
};
#define NOPTIONAL (sizeof optional_columns / sizeof optional_columns[0])

/* One record's "(?,?,?,?...)" in the columns of shape. */
static void add_row(struct sql *s, unsigned shape, const struct wbo *w,
		    int64_t user_id, const char *collection, int64_t stamp)
{
	sql_punct(s, "(?,?,?,?");
	sql_param(s, DB_INT(user_id));
	sql_param(s, DB_CSTR(collection));
	sql_param(s, DB_STR(w->id, w->id_len));
	sql_param(s, DB_INT(stamp));
	if (shape & WBO_FIELD_PARENTID) {
		sql_punct(s, ",?");
		sql_param(s, DB_STR(w->parentid, w->parentid_len));
	}
	if (shape & WBO_FIELD_PREDECESSORID) {
		sql_punct(s, ",?");
		sql_param(s, DB_STR(w->predecessorid, w->predecessorid_len));
	}
	if (shape & WBO_FIELD_SORTINDEX) {
		sql_punct(s, ",?");
		sql_param(s, DB_INT(w->sortindex));
	}
	if (shape & WBO_FIELD_PAYLOAD) {
		sql_punct(s, ",?,?");
		sql_param(s, DB_STR(w->payload, w->payload_len));
		sql_param(s, DB_INT(w->payload_len));
	}
	if (shape & WBO_FIELD_TTL) {
		sql_punct(s, ",?");
		sql_param(s, DB_INT(stamp + w->ttl * 100));
	}
	sql_punct(s, ")");
}

/* The upsert of n records of one shape, as `rows` rows (n <= rows: the
 * last record repeated); without `upsert`, their plain insert (a stored
 * id, or a repeated row, fails it). */
static void add_insert(struct sql *s, unsigned shape, const struct wbo *items,
		       size_t n, size_t rows, int64_t user_id,
		       const char *collection, int64_t stamp, bool upsert)
{
	/* Only content moves modified: predecessorid, sortindex and ttl
	 * order or expire a record (PHP weave_storage.php update_object). */
	bool bump = (shape & (WBO_FIELD_PAYLOAD | WBO_FIELD_PARENTID)) != 0;
	sql_add(s, STORAGE_INSERT);
	for (size_t c = 0; c < NOPTIONAL; c++)
		if (shape & optional_columns[c].field)
			sql_add(s, optional_columns[c].column);
	sql_add(s, STORAGE_VALUES);
	for (size_t i = 0; i < rows; i++) {
		if (i > 0)
			sql_punct(s, ",");
		add_row(s, shape, &items[i < n ? i : n - 1], user_id, collection, stamp);
	}
	if (!upsert)
		return;
	sql_add(s, STORAGE_UPSERT);
	sql_add(s, bump ? STORAGE_BUMP_MODIFIED : STORAGE_KEEP_MODIFIED);
	for (size_t c = 0; c < NOPTIONAL; c++)
		if (shape & optional_columns[c].field)
			sql_add(s, optional_columns[c].update);
}

/*
 * Before an upload writes items: expired rows among their ids are
 * deleted, since the upload must not update them in place. While record
 * history is on, the rows it replaces are kept first, by a statement
 * that also finds the expired ones, so that the DELETE runs only when
 * there are some and keeping costs no extra search of wbo. The id lists
 * are padded to a power of two (one statement per MAX_IN_CHUNK ids).
 */
static enum db_status prepare_upload(struct write_context *wc, struct sql *s,
				     int64_t user_id, const char *collection,
				     const struct wbo *items, size_t n,
				     int64_t now)
{
	enum db_status st = DB_OK;
	bool history = db_history_active(wc);
	for (size_t done = 0; done < n && st == DB_OK;) {
		size_t c = n - done < MAX_IN_CHUNK ? n - done : MAX_IN_CHUNK;
		size_t padded = power_of_two_at_least(c);
		bool expired = true;
		if (history) {
			sql_reset(s);
			add_collection(s, user_id, collection);
			add_item_ids(s, items + done, c, padded);
			st = db_history_keep_replaced(wc, s->text.data, s->params,
						      s->nparams, &expired);
		}
		if (st == DB_OK && expired) {
			sql_reset(s);
			sql_add(s, STORAGE_DELETE);
			add_collection(s, user_id, collection);
			sql_add_param(s, STORAGE_EXPIRED, DB_INT(now));
			add_item_ids(s, items + done, c, padded);
			st = sql_run(s, NULL, NULL, NULL);
		}
		done += c;
	}
	return st;
}

/*
 * count records of one shape, in statements of at most MAX_INSERT_ROWS:
 * upserts (their rows padded), or plain inserts of exactly their rows.
 * *written: how many records the statements that succeeded wrote.
 */
static enum db_status write_group(struct sql *s, unsigned shape,
				  const struct wbo *group, size_t count,
				  int64_t user_id, const char *collection,
				  int64_t stamp, bool upsert, size_t *written)
{
	enum db_status st = DB_OK;
	size_t at = 0;
	while (at < count && st == DB_OK) {
		size_t c = count - at < MAX_INSERT_ROWS ? count - at : MAX_INSERT_ROWS;
		size_t rows = upsert ? (c + INSERT_ROUND - 1) / INSERT_ROUND * INSERT_ROUND : c;
		sql_reset(s);
		add_insert(s, shape, group + at, c, rows, user_id, collection, stamp, upsert);
		st = sql_run(s, NULL, NULL, NULL);
		if (st == DB_OK)
			at += c;
	}
	*written = at;
	return st;
}

/* items in statements of one shape (set of present fields) each:
 * upserts, or with `inserted` plain inserts, the items they wrote marked
 * in it. */
static enum db_status write_by_shape(struct sql *s, const struct wbo *items,
				     size_t n, int64_t user_id,
				     const char *collection, int64_t stamp,
				     bool *inserted)
{
	enum db_status st = DB_OK;
	bool *done = xcalloc(n ? n : 1, sizeof *done);
	struct wbo *group = xcalloc(n ? n : 1, sizeof *group);
	size_t *index = xcalloc(n ? n : 1, sizeof *index);
	for (size_t first = 0; first < n && st == DB_OK; first++) {
		if (done[first])
			continue;
		unsigned shape = items[first].fields;
		size_t count = 0, written;
		for (size_t i = first; i < n; i++) {
			if (!done[i] && items[i].fields == shape) {
				index[count] = i;
				group[count++] = items[i];
				done[i] = true;
			}
		}
		st = write_group(s, shape, group, count, user_id, collection, stamp,
				 inserted == NULL, &written);
		for (size_t k = 0; inserted != NULL && k < written; k++)
			inserted[index[k]] = true;
	}
	free(index);
	free(group);
	free(done);
	return st;
}

/*
 * New records go in first, by a plain INSERT of the whole batch (one
 * statement per shape): a batch of new records (a first sync) then
 * looks its ids up once, in the insert, instead of once more before it.
 * The first stored id fails that statement with a duplicate key;
 * InnoDB takes back that statement alone, and the records it did not
 * write go the replacement way: what an upsert needs before it
 * (prepare_upload: their replaced versions kept, expired rows cleared),
 * then the upsert. A batch of replacements (a client sending back
 * records it changed) pays for one failed row, a batch whose new
 * records come before its stored ones for those new ones twice
 * (docs/performance.md, "Uploads, session 18"). A single record (a PUT,
 * a client's tab or meta/global) is mostly a replacement, so it goes
 * straight to the upsert.
 *
 * The insert takes a shared lock on the stored row it fails on, and the
 * upsert then an exclusive one. Another writer of the same row that
 * asks for its exclusive lock in between would deadlock with it, so an
 * upload that writes before it holds its account's lock (write_lock.h:
 * others of the account write their records beside it) goes straight to
 * the upsert too, whose first lock on a stored row is exclusive.
 */
enum db_status db_storage_put(struct write_context *wc, int64_t user_id,
			      const char *collection, const struct wbo *items,
			      size_t n, int64_t stamp, bool account_locked)
{
	struct sql s;
	enum db_status st = DB_OK;
	bool *inserted = xcalloc(n ? n : 1, sizeof *inserted);
	struct wbo *rest = xcalloc(n ? n : 1, sizeof *rest);
	size_t nrest = 0;

	sql_init(&s);
	db_history_note_written(wc, n);
	if (n > 1 && account_locked) {
		st = write_by_shape(&s, items, n, user_id, collection, stamp, inserted);
		if (st == DB_CONFLICT)
			st = DB_OK; /* a stored id (or one sent twice): see above */
	}
	for (size_t i = 0; i < n; i++)
		if (!inserted[i])
			rest[nrest++] = items[i];
	if (st == DB_OK && nrest > 0)
		st = prepare_upload(wc, &s, user_id, collection, rest, nrest, stamp);
	if (st == DB_OK && nrest > 0)
		st = write_by_shape(&s, rest, nrest, user_id, collection, stamp, NULL);
	sql_free(&s);
	free(rest);
	free(inserted);
	return st;
}

/*
 * The rows of items that this transaction wrote under `from` move to `to`
 * (write_lock.h: an upload stamped before its account was locked). Only
 * rows whose modified is `from` among these ids: this transaction holds
 * their row locks, so the UPDATE waits for nobody.
 */
enum db_status db_storage_restamp(int64_t user_id,
				  const char *collection, const struct wbo *items,
				  size_t n, int64_t from, int64_t to)
{
	struct sql s;
	enum db_status st = DB_OK;
	sql_init(&s);
	for (size_t done = 0; done < n && st == DB_OK;) {
		size_t c = n - done < MAX_IN_CHUNK ? n - done : MAX_IN_CHUNK;
		size_t padded = power_of_two_at_least(c);
		sql_reset(&s);
		sql_add_param(&s, STORAGE_RESTAMP, DB_INT(to));
		add_collection(&s, user_id, collection);
		add_item_ids(&s, items + done, c, padded);
		sql_add_param(&s, STORAGE_MODIFIED_IS, DB_INT(from));
		st = sql_run(&s, NULL, NULL, NULL);
		done += c;
	}
	sql_free(&s);
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

/*
 * Delete the rows that `where` (conditions only, parameters bound) selects,
 * keeping them in the history first when wc keeps it: both statements take
 * the same WHERE, so what is kept is what is deleted.
 */
static enum db_status delete_where(struct write_context *wc, const struct sql *where,
				   uint64_t *deleted)
{
	enum db_status st = db_history_keep(wc, where->text.data, where->params,
					    where->nparams, true);
	if (st != DB_OK)
		return st;
	struct buf text;
	buf_init(&text, 1024 * 1024);
	buf_puts(&text, sql_of(STORAGE_DELETE));
	buf_puts(&text, where->text.data);
	uint64_t affected = 0;
	st = db_run(text.data, where->params, where->nparams, NULL, NULL, &affected);
	buf_free(&text);
	if (deleted != NULL)
		*deleted += affected;
	return st;
}

static enum db_status delete_by_ids(struct write_context *wc, struct sql *s,
				    int64_t user_id, const char *collection,
				    const char *const *ids, const size_t *lens,
				    size_t n, const struct wbo_query *filters,
				    uint64_t *deleted)
{
	enum db_status st = DB_OK;
	for (size_t done = 0; done < n && st == DB_OK;) {
		size_t c = chunk_size(n - done, MAX_IN_CHUNK);
		sql_reset(s);
		add_collection(s, user_id, collection);
		add_ids(s, ids + done, lens + done, c, c);
		if (filters != NULL)
			add_filters(s, filters);
		st = delete_where(wc, s, deleted);
		done += c;
	}
	return st;
}

/* MariaDB has no DELETE ... OFFSET: select the ids, then delete them. */
static enum db_status delete_in_order(struct write_context *wc, struct sql *s,
				      int64_t user_id, const char *collection,
				      const struct wbo_query *q, int64_t now,
				      uint64_t *deleted)
{
	struct id_list l = { NULL, NULL, 0, 0 };
	struct wbo_query ids_only = *q;
	ids_only.full = false;
	sql_add(s, STORAGE_SELECT_ID);
	add_collection(s, user_id, collection);
	sql_add_param(s, STORAGE_LIVE, DB_INT(now));
	if (q->has_ids)
		add_ids(s, (const char *const *)q->ids, q->id_lens, q->nids, q->nids);
	add_filters(s, q);
	add_order_and_limit(s, &ids_only);
	enum db_status st = sql_run(s, collect_id, &l, NULL);
	if (st == DB_OK)
		st = delete_by_ids(wc, s, user_id, collection, (const char *const *)l.ids,
				   l.lens, l.n, NULL, deleted);
	for (size_t i = 0; i < l.n; i++)
		free(l.ids[i]);
	free(l.ids);
	free(l.lens);
	return st;
}

enum db_status db_storage_delete(struct write_context *wc, int64_t user_id,
				 const char *collection, const struct wbo_query *q,
				 int64_t now, uint64_t *deleted)
{
	struct sql s;
	enum db_status st;

	*deleted = 0;
	if (q->has_ids && q->nids == 0)
		return DB_OK;
	sql_init(&s);
	if (q->limit > 0 || q->offset > 0 || q->sort != SORT_NONE) {
		st = delete_in_order(wc, &s, user_id, collection, q, now, deleted);
	} else if (q->has_ids) {
		st = delete_by_ids(wc, &s, user_id, collection,
				   (const char *const *)q->ids, q->id_lens, q->nids, q,
				   deleted);
	} else {
		add_collection(&s, user_id, collection);
		add_filters(&s, q);
		st = delete_where(wc, &s, deleted);
	}
	sql_free(&s);
	return st;
}

enum db_status db_storage_delete_one(struct write_context *wc, int64_t user_id,
				     const char *collection, const char *id)
{
	struct sql s;
	sql_init(&s);
	add_collection(&s, user_id, collection);
	sql_add_param(&s, STORAGE_ONE_ID, DB_CSTR(id));
	enum db_status st = delete_where(wc, &s, NULL);
	sql_free(&s);
	return st;
}

enum db_status db_storage_delete_all(struct write_context *wc, int64_t user_id)
{
	struct sql s;
	sql_init(&s);
	sql_add_param(&s, STORAGE_OF_USER, DB_INT(user_id));
	enum db_status st = delete_where(wc, &s, NULL);
	sql_free(&s);
	return st;
}

enum db_status db_storage_forget_user(int64_t user_id)
{
	enum db_status st = db_storage_delete_all(NULL, user_id);
	return st == DB_OK ? db_history_forget_user(user_id) : st;
}
