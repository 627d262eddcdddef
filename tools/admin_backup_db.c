/* admin_backup_db.c - SQL for backup and restore: record history rows and users.created. */
#include "admin_backup_db.h"

enum backup_stmt {
	VERSIONS,
	WRITES,
	USAGE,
	NEWEST,
	COUNT_ROWS,
	PUT_VERSION,
	PUT_WRITE,
	PUT_USAGE,
	SET_CREATED,
	BACKUP_STMT__MAX
};

static const char *const backup_sql[BACKUP_STMT__MAX] = {
	[VERSIONS] = "SELECT collection, id, parentid, predecessorid, sortindex, modified, "
		     "payload, expires, replaced FROM wbo_history WHERE user_id = ? "
		     "AND replaced > ? ORDER BY replaced, collection, id",
	[WRITES] = "SELECT stamp, collection, previous, written, replaced, deleted, bytes, "
		   "agent FROM write_log WHERE user_id = ? AND stamp > ? "
		   "ORDER BY stamp, collection",
	[USAGE] = "SELECT bytes, since FROM history_usage WHERE user_id = ?",
	[NEWEST] = "SELECT (SELECT MAX(replaced) FROM wbo_history WHERE user_id = ?), "
		   "(SELECT MAX(stamp) FROM write_log WHERE user_id = ?)",
	[COUNT_ROWS] = "SELECT (SELECT COUNT(*) FROM wbo) + (SELECT COUNT(*) FROM wbo_history) "
		       "+ (SELECT COUNT(*) FROM write_log)",
	[PUT_VERSION] = "INSERT INTO wbo_history (user_id, collection, id, replaced, parentid, "
			"predecessorid, sortindex, modified, payload, payload_size, expires) "
			"VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	[PUT_WRITE] = "INSERT INTO write_log (user_id, stamp, collection, previous, written, "
		      "replaced, deleted, bytes, agent) VALUES (?,?,?,?,?,?,?,?,?)",
	[PUT_USAGE] = "INSERT INTO history_usage (user_id, bytes, since) VALUES (?,?,?) "
		      "ON DUPLICATE KEY UPDATE bytes = VALUES(bytes), since = VALUES(since)",
	[SET_CREATED] = "UPDATE users SET created = ? WHERE id = ?",
};

struct version_ctx {
	backup_version_fn fn;
	void *ctx;
};

static int version_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct version_ctx *c = ctx;
	struct backup_version v = {
		.rec = {
			.collection = row[0].s,
			.collection_len = row[0].len,
			.row = {
				.id = row[1].s,
				.id_len = row[1].len,
				.parentid = row[2].is_null ? NULL : row[2].s,
				.parentid_len = row[2].len,
				.predecessorid = row[3].is_null ? NULL : row[3].s,
				.predecessorid_len = row[3].len,
				.has_sortindex = !row[4].is_null,
				.sortindex = row[4].i,
				.modified = row[5].i,
				.payload = row[6].is_null ? NULL : row[6].s,
				.payload_len = row[6].len,
			},
			.expires = row[7].i,
		},
		.replaced = row[8].i,
	};
	(void)ncols;
	return c->fn(c->ctx, &v);
}

enum db_status backup_db_versions(int64_t user_id, int64_t after, backup_version_fn fn,
				  void *ctx)
{
	struct version_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_INT(after) };
	return db_run(backup_sql[VERSIONS], p, 2, version_row, &c, NULL);
}

struct write_ctx {
	backup_write_fn fn;
	void *ctx;
};

static int write_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct write_ctx *c = ctx;
	struct backup_write w = {
		.stamp = row[0].i,
		.collection = row[1].s,
		.collection_len = row[1].len,
		.previous = row[2].i,
		.written = row[3].i,
		.replaced = row[4].i,
		.deleted = row[5].i,
		.bytes = row[6].i,
		.agent = row[7].s,
		.agent_len = row[7].len,
	};
	(void)ncols;
	return c->fn(c->ctx, &w);
}

enum db_status backup_db_writes(int64_t user_id, int64_t after, backup_write_fn fn,
				void *ctx)
{
	struct write_ctx c = { fn, ctx };
	struct db_param p[] = { DB_INT(user_id), DB_INT(after) };
	return db_run(backup_sql[WRITES], p, 2, write_row, &c, NULL);
}

static int newest_row(void *ctx, const struct db_value *row, size_t ncols)
{
	int64_t *out = ctx;
	(void)ncols;
	out[0] = row[0].is_null ? INT64_MIN : row[0].i;
	out[1] = row[1].is_null ? INT64_MIN : row[1].i;
	return 1;
}

enum db_status backup_db_newest(int64_t user_id, int64_t *replaced, int64_t *stamp)
{
	int64_t out[2] = { INT64_MIN, INT64_MIN };
	struct db_param p[] = { DB_INT(user_id), DB_INT(user_id) };
	enum db_status st = db_run(backup_sql[NEWEST], p, 2, newest_row, out, NULL);
	*replaced = out[0];
	*stamp = out[1];
	return st;
}

struct usage_ctx {
	int64_t *bytes, *since;
	bool found;
};

static int usage_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct usage_ctx *u = ctx;
	(void)ncols;
	*u->bytes = row[0].i;
	*u->since = row[1].i;
	u->found = true;
	return 1;
}

enum db_status backup_db_usage(int64_t user_id, int64_t *bytes, int64_t *since)
{
	struct usage_ctx u = { bytes, since, false };
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_run(backup_sql[USAGE], p, 1, usage_row, &u, NULL);
	if (st == DB_OK && !u.found)
		return DB_NOT_FOUND;
	return st;
}

static int count_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].i;
	return 1;
}

enum db_status backup_db_count_rows(int64_t *rows)
{
	*rows = 0;
	return db_run(backup_sql[COUNT_ROWS], NULL, 0, count_row, rows, NULL);
}

static struct db_param opt_str(const char *s, size_t len)
{
	return s != NULL ? DB_STR(s, len) : DB_NULL;
}

enum db_status backup_db_put_version(int64_t user_id, const struct backup_version *v)
{
	const struct db_record *r = &v->rec;
	struct db_param p[] = {
		DB_INT(user_id),
		DB_STR(r->collection, r->collection_len),
		DB_STR(r->row.id, r->row.id_len),
		DB_INT(v->replaced),
		opt_str(r->row.parentid, r->row.parentid_len),
		opt_str(r->row.predecessorid, r->row.predecessorid_len),
		r->row.has_sortindex ? DB_INT(r->row.sortindex) : DB_NULL,
		DB_INT(r->row.modified),
		opt_str(r->row.payload, r->row.payload_len),
		DB_INT(r->row.payload != NULL ? r->row.payload_len : 0),
		DB_INT(r->expires),
	};
	return db_run(backup_sql[PUT_VERSION], p, 11, NULL, NULL, NULL);
}

enum db_status backup_db_put_write(int64_t user_id, const struct backup_write *w)
{
	struct db_param p[] = {
		DB_INT(user_id),    DB_INT(w->stamp),
		DB_STR(w->collection, w->collection_len),
		DB_INT(w->previous), DB_INT(w->written),
		DB_INT(w->replaced), DB_INT(w->deleted),
		DB_INT(w->bytes),   DB_STR(w->agent, w->agent_len),
	};
	return db_run(backup_sql[PUT_WRITE], p, 9, NULL, NULL, NULL);
}

enum db_status backup_db_put_usage(int64_t user_id, int64_t bytes, int64_t since)
{
	struct db_param p[] = { DB_INT(user_id), DB_INT(bytes), DB_INT(since) };
	return db_run(backup_sql[PUT_USAGE], p, 3, NULL, NULL, NULL);
}

enum db_status backup_db_set_created(int64_t user_id, int64_t created)
{
	struct db_param p[] = { DB_INT(created), DB_INT(user_id) };
	return db_run(backup_sql[SET_CREATED], p, 2, NULL, NULL, NULL);
}
