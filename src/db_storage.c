/* db_storage.c - SQL for the wbo table. */
#include "db_storage.h"

#include <string.h>

enum storage_stmt {
	STORAGE_COLLECTION_STAMPS,
	STORAGE_COLLECTION_COUNTS,
	STORAGE_COLLECTION_BYTES,
	STORAGE_TOTAL_BYTES,
	STORAGE_STMT__MAX
};

static const char *const storage_sql[STORAGE_STMT__MAX] = {
	[STORAGE_COLLECTION_STAMPS] =
		"SELECT collection, MAX(modified) FROM wbo "
		"WHERE user_id = ? AND expires > ? GROUP BY collection",
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

enum db_status db_storage_collection_stamps(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx)
{
	return per_collection(STORAGE_COLLECTION_STAMPS, user_id, now, fn, ctx);
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
