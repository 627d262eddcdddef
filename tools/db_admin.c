/* db_admin.c - SQL for weave-admin: nodes, statistics, purge, export/import, schema. */
#include "db_admin.h"

#include <string.h>

#include "buf.h"
#include "util.h"

enum admin_stmt {
	NODE_ADD,
	NODE_SET_CAPACITY,
	NODE_REMOVE,
	NODE_GET,
	NODE_LIST,
	COUNT_USERS,
	COLLECTION_STATS,
	USER_COLLECTIONS,
	USAGE_BY_USER,
	COUNT_EXPIRED_ALL,
	COUNT_EXPIRED_USER,
	NEXT_EXPIRED_HERE,
	NEXT_EXPIRED_AFTER,
	PURGE_BATCH,
	EXPORT_RECORDS,
	EXPORT_ONE,
	COUNT_RECORDS,
	SCHEMA_RECORD,
	SCHEMA_TABLES,
	SCHEMA_INDEXES,
	ADMIN_STMT__MAX
};

#define NODE_COLUMNS \
	"SELECT n.url, n.capacity, COUNT(u.id), n.created FROM nodes n " \
	"LEFT JOIN users u ON u.node = n.url "

/* A struct db_record's columns, in export_row()'s order. */
#define RECORD_COLUMNS \
	"collection, id, parentid, predecessorid, sortindex, modified, payload, expires"

static const char *const admin_sql[ADMIN_STMT__MAX] = {
	[NODE_ADD] = "INSERT INTO nodes (url, capacity, created) VALUES (?, ?, ?)",
	[NODE_SET_CAPACITY] = "UPDATE nodes SET capacity = ? WHERE url = ?",
	[NODE_REMOVE] = "DELETE FROM nodes WHERE url = ?",
	[NODE_GET] = NODE_COLUMNS "WHERE n.url = ? GROUP BY n.url, n.capacity, n.created",
	[NODE_LIST] = NODE_COLUMNS "GROUP BY n.url, n.capacity, n.created ORDER BY n.url",
	[COUNT_USERS] = "SELECT COUNT(*), CAST(COALESCE(SUM(status <> 1), 0) AS SIGNED) "
			"FROM users",
	[COLLECTION_STATS] =
		"SELECT collection, COUNT(DISTINCT user_id), COUNT(*), "
		"CAST(COALESCE(SUM(payload_size), 0) AS SIGNED) FROM wbo "
		"WHERE expires > ? GROUP BY collection ORDER BY collection",
	[USER_COLLECTIONS] =
		"SELECT collection, COUNT(*), CAST(COALESCE(SUM(payload_size), 0) AS SIGNED), "
		"MAX(modified) FROM wbo WHERE user_id = ? AND expires > ? "
		"GROUP BY collection ORDER BY collection",
	[USAGE_BY_USER] =
		"SELECT user_id, COUNT(*), CAST(COALESCE(SUM(payload_size), 0) AS SIGNED) "
		"FROM wbo WHERE expires > ? GROUP BY user_id ORDER BY user_id",
	[COUNT_EXPIRED_ALL] = "SELECT COUNT(*) FROM wbo WHERE expires <= ?",
	[COUNT_EXPIRED_USER] = "SELECT COUNT(*) FROM wbo WHERE user_id = ? AND expires <= ?",
	/* All three read the primary key (user_id, collection, id) as a
	 * range, in order: the SELECTs, consistent reads that take no locks,
	 * stop at the first expired record. */
	[NEXT_EXPIRED_HERE] = "SELECT user_id, collection, id FROM wbo WHERE user_id = ? "
			      "AND collection >= ? AND expires <= ? "
			      "ORDER BY collection, id LIMIT 1",
	[NEXT_EXPIRED_AFTER] = "SELECT user_id, collection, id FROM wbo WHERE user_id > ? "
			       "AND expires <= ? ORDER BY user_id, collection, id LIMIT 1",
	[PURGE_BATCH] = "DELETE FROM wbo WHERE user_id = ? AND collection = ? AND id >= ? "
			"AND expires <= ? LIMIT ?",
	[EXPORT_RECORDS] = "SELECT " RECORD_COLUMNS " FROM wbo WHERE user_id = ? "
			   "ORDER BY collection, id",
	[EXPORT_ONE] = "SELECT " RECORD_COLUMNS " FROM wbo WHERE user_id = ? "
		       "AND collection = ? AND id = ?",
	[COUNT_RECORDS] = "SELECT COUNT(*) FROM wbo WHERE user_id = ?",
	[SCHEMA_RECORD] = "INSERT INTO weave_schema (version, installed) VALUES (?, ?)",
	[SCHEMA_TABLES] = "SELECT table_name FROM information_schema.tables "
			  "WHERE table_schema = DATABASE()",
	[SCHEMA_INDEXES] = "SELECT DISTINCT table_name, index_name "
			   "FROM information_schema.statistics "
			   "WHERE table_schema = DATABASE()",
};

static int int_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].is_null ? 0 : row[0].i;
	return 0;
}

/* ---- nodes ------------------------------------------------------------------ */

static struct db_param capacity_param(int64_t capacity)
{
	return capacity < 0 ? DB_NULL : DB_INT(capacity);
}

enum db_status db_node_add(const char *url, int64_t capacity, int64_t now)
{
	struct db_param p[] = { DB_CSTR(url), capacity_param(capacity), DB_INT(now) };
	return db_run(admin_sql[NODE_ADD], p, 3, NULL, NULL, NULL);
}

enum db_status db_node_set_capacity(const char *url, int64_t capacity)
{
	struct db_param p[] = { capacity_param(capacity), DB_CSTR(url) };
	uint64_t affected = 0;
	enum db_status st = db_run(admin_sql[NODE_SET_CAPACITY], p, 2, NULL, NULL,
				   &affected);
	/* CLIENT_FOUND_ROWS: an unchanged row still counts as matched. */
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_node_remove(const char *url)
{
	struct db_param p[] = { DB_CSTR(url) };
	uint64_t affected = 0;
	enum db_status st = db_run(admin_sql[NODE_REMOVE], p, 1, NULL, NULL, &affected);
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st;
}

struct node_ctx {
	db_node_fn fn;
	void *ctx;
	bool found;
};

static int node_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct node_ctx *n = ctx;
	struct db_node node = {
		.url = row[0].s,
		.capacity = row[1].is_null ? -1 : row[1].i,
		.users = row[2].i,
		.created = row[3].i,
	};
	(void)ncols;
	n->found = true;
	return n->fn(n->ctx, &node);
}

enum db_status db_node_get(const char *url, db_node_fn fn, void *ctx)
{
	struct node_ctx n = { fn, ctx, false };
	struct db_param p[] = { DB_CSTR(url) };
	enum db_status st = db_run(admin_sql[NODE_GET], p, 1, node_row, &n, NULL);
	if (st == DB_OK && !n.found)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_node_list(db_node_fn fn, void *ctx)
{
	struct node_ctx n = { fn, ctx, false };
	return db_run(admin_sql[NODE_LIST], NULL, 0, node_row, &n, NULL);
}

/* ---- statistics ----------------------------------------------------------------- */

struct pair {
	int64_t *a, *b;
};

static int pair_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct pair *p = ctx;
	(void)ncols;
	*p->a = row[0].i;
	*p->b = row[1].i;
	return 0;
}

enum db_status db_admin_count_users(int64_t *total, int64_t *disabled)
{
	struct pair p = { total, disabled };
	*total = *disabled = 0;
	return db_run(admin_sql[COUNT_USERS], NULL, 0, pair_row, &p, NULL);
}

struct collection_stats_ctx {
	db_collection_stats_fn fn;
	void *ctx;
};

static int collection_stats_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct collection_stats_ctx *c = ctx;
	(void)ncols;
	return c->fn(c->ctx, row[0].s, row[0].len, row[1].i, row[2].i, row[3].i);
}

enum db_status db_admin_collection_stats(int64_t now, db_collection_stats_fn fn,
					 void *ctx)
{
	struct collection_stats_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(now) };
	return db_run(admin_sql[COLLECTION_STATS], p, 1, collection_stats_row, &c,
		      NULL);
}

struct usage_ctx {
	db_usage_fn fn;
	void *ctx;
};

static int usage_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct usage_ctx *u = ctx;
	(void)ncols;
	return u->fn(u->ctx, row[0].i, row[1].i, row[2].i);
}

enum db_status db_admin_usage_by_user(int64_t now, db_usage_fn fn, void *ctx)
{
	struct usage_ctx u = { fn, ctx };
	struct db_param p[] = { DB_INT(now) };
	return db_run(admin_sql[USAGE_BY_USER], p, 1, usage_row, &u, NULL);
}

struct user_collection_ctx {
	db_user_collection_fn fn;
	void *ctx;
};

static int user_collection_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct user_collection_ctx *c = ctx;
	(void)ncols;
	return c->fn(c->ctx, row[0].s, row[0].len, row[1].i, row[2].i, row[3].i);
}

enum db_status db_admin_user_collections(int64_t user_id, int64_t now,
					 db_user_collection_fn fn, void *ctx)
{
	struct user_collection_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_INT(now) };
	return db_run(admin_sql[USER_COLLECTIONS], p, 2, user_collection_row, &c,
		      NULL);
}

enum db_status db_admin_count_expired(int64_t user_id, int64_t now,
				      int64_t *count)
{
	*count = 0;
	if (user_id == 0) {
		struct db_param p[] = { DB_INT(now) };
		return db_run(admin_sql[COUNT_EXPIRED_ALL], p, 1, int_row, count, NULL);
	}
	struct db_param p[] = { DB_INT(user_id), DB_INT(now) };
	return db_run(admin_sql[COUNT_EXPIRED_USER], p, 2, int_row, count, NULL);
}

/* ---- purge --------------------------------------------------------------------- */

struct found_key {
	struct db_wbo_key *at;
	bool found;
};

static int key_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct found_key *f = ctx;
	(void)ncols;
	/* The columns hold at most what the buffers do (schema.sql). */
	if (row[1].len > COLLECTION_MAX || row[2].len > WBO_ID_MAX)
		return 1;
	f->at->user_id = row[0].i;
	memcpy(f->at->collection, row[1].s, row[1].len);
	f->at->collection_len = row[1].len;
	memcpy(f->at->id, row[2].s, row[2].len);
	f->at->id_len = row[2].len;
	f->found = true;
	return 0;
}

enum db_status db_admin_next_expired(struct db_wbo_key *at, int64_t now, bool *found)
{
	struct found_key f = { at, false };
	enum db_status st = DB_OK;
	if (at->user_id > 0) {
		struct db_param p[] = { DB_INT(at->user_id),
					DB_STR(at->collection, at->collection_len), DB_INT(now) };
		st = db_run(admin_sql[NEXT_EXPIRED_HERE], p, 3, key_row, &f, NULL);
	}
	if (st == DB_OK && !f.found) {
		struct db_param p[] = { DB_INT(at->user_id), DB_INT(now) };
		st = db_run(admin_sql[NEXT_EXPIRED_AFTER], p, 2, key_row, &f, NULL);
	}
	*found = f.found;
	return st;
}

void db_admin_skip_collection(struct db_wbo_key *at)
{
	/* In byte order, c followed by a zero byte is the first string
	 * after c: no other collection name lies between them. */
	at->collection[at->collection_len++] = '\0';
}

enum db_status db_admin_purge_batch(const struct db_wbo_key *at, int64_t now,
				    int64_t batch, uint64_t *deleted)
{
	struct db_param p[] = { DB_INT(at->user_id), DB_STR(at->collection, at->collection_len),
				DB_STR(at->id, at->id_len), DB_INT(now), DB_INT(batch) };
	*deleted = 0;
	return db_run(admin_sql[PURGE_BATCH], p, 5, NULL, NULL, deleted);
}

/* ---- export and import -------------------------------------------------------------- */

struct export_ctx {
	db_record_row_fn fn;
	void *ctx;
};

static int export_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct export_ctx *e = ctx;
	struct db_record r;
	(void)ncols;
	memset(&r, 0, sizeof r);
	r.collection = row[0].s;
	r.collection_len = row[0].len;
	r.row.id = row[1].s;
	r.row.id_len = row[1].len;
	if (!row[2].is_null) {
		r.row.parentid = row[2].s;
		r.row.parentid_len = row[2].len;
	}
	if (!row[3].is_null) {
		r.row.predecessorid = row[3].s;
		r.row.predecessorid_len = row[3].len;
	}
	r.row.has_sortindex = !row[4].is_null;
	r.row.sortindex = row[4].i;
	r.row.modified = row[5].i;
	if (!row[6].is_null) {
		r.row.payload = row[6].s;
		r.row.payload_len = row[6].len;
	}
	r.expires = row[7].i;
	return e->fn(e->ctx, &r);
}

enum db_status db_admin_export(int64_t user_id, db_record_row_fn fn, void *ctx)
{
	struct export_ctx e = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id) };
	return db_run(admin_sql[EXPORT_RECORDS], p, 1, export_row, &e, NULL);
}

enum db_status db_admin_export_one(int64_t user_id, const char *collection, const char *id,
				   db_record_row_fn fn, void *ctx)
{
	struct export_ctx e = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_CSTR(collection), DB_CSTR(id) };
	return db_run(admin_sql[EXPORT_ONE], p, 3, export_row, &e, NULL);
}

enum db_status db_admin_count_records(int64_t user_id, int64_t *count)
{
	struct db_param p[] = { DB_INT(user_id) };
	*count = 0;
	return db_run(admin_sql[COUNT_RECORDS], p, 1, int_row, count, NULL);
}

#define RECORD_PARAMS 11

static struct db_param opt_str(const char *s, size_t len)
{
	return s != NULL ? DB_STR(s, len) : DB_NULL;
}

/* One INSERT for n rows (a power of two, so few statement texts exist). */
static enum db_status insert_chunk(struct buf *sql, struct db_param *params,
				   int64_t user_id, const struct db_record *rows,
				   size_t n)
{
	size_t k = 0;
	buf_reset(sql);
	buf_puts(sql, "INSERT INTO wbo (user_id, collection, id, parentid, "
		      "predecessorid, sortindex, modified, payload, payload_size, "
		      "expires) VALUES ");
	for (size_t i = 0; i < n; i++) {
		const struct db_record *r = &rows[i];
		buf_puts(sql, i ? ",(?,?,?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,?,?,?,?)");
		params[k++] = DB_INT(user_id);
		params[k++] = DB_STR(r->collection, r->collection_len);
		params[k++] = DB_STR(r->row.id, r->row.id_len);
		params[k++] = opt_str(r->row.parentid, r->row.parentid_len);
		params[k++] = opt_str(r->row.predecessorid, r->row.predecessorid_len);
		params[k++] = r->row.has_sortindex ? DB_INT(r->row.sortindex) : DB_NULL;
		params[k++] = DB_INT(r->row.modified);
		params[k++] = opt_str(r->row.payload, r->row.payload_len);
		params[k++] = DB_INT(r->row.payload != NULL ? r->row.payload_len : 0);
		params[k++] = DB_INT(r->expires);
	}
	buf_puts(sql, " ON DUPLICATE KEY UPDATE parentid = VALUES(parentid), "
		      "predecessorid = VALUES(predecessorid), "
		      "sortindex = VALUES(sortindex), modified = VALUES(modified), "
		      "payload = VALUES(payload), payload_size = VALUES(payload_size), "
		      "expires = VALUES(expires)");
	return db_run(sql->data, params, k, NULL, NULL, NULL);
}

enum db_status db_admin_insert_records(int64_t user_id,
				       const struct db_record *rows, size_t n)
{
	struct db_param params[DB_INSERT_CHUNK * RECORD_PARAMS];
	struct buf sql;
	enum db_status st = DB_OK;

	buf_init(&sql, 64 * 1024);
	for (size_t done = 0; done < n && st == DB_OK;) {
		size_t c = 1;
		while (c * 2 <= n - done && c * 2 <= DB_INSERT_CHUNK)
			c *= 2;
		st = insert_chunk(&sql, params, user_id, rows + done, c);
		done += c;
	}
	buf_free(&sql);
	return st;
}

/* ---- schema ------------------------------------------------------------------------- */

enum db_status db_admin_schema_record(int64_t version, int64_t now)
{
	struct db_param p[] = { DB_INT(version), DB_INT(now) };
	return db_run(admin_sql[SCHEMA_RECORD], p, 2, NULL, NULL, NULL);
}

struct schema_ctx {
	db_schema_fn fn;
	void *ctx;
};

static int schema_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct schema_ctx *s = ctx;
	return s->fn(s->ctx, row[0].s, ncols > 1 ? row[1].s : NULL);
}

enum db_status db_admin_schema_tables(db_schema_fn fn, void *ctx)
{
	struct schema_ctx s = { fn, ctx };
	return db_run(admin_sql[SCHEMA_TABLES], NULL, 0, schema_row, &s, NULL);
}

enum db_status db_admin_schema_indexes(db_schema_fn fn, void *ctx)
{
	struct schema_ctx s = { fn, ctx };
	return db_run(admin_sql[SCHEMA_INDEXES], NULL, 0, schema_row, &s, NULL);
}
