/* db_changes.c - SQL for the account_changes table (db_changes.h). */
#include "db_changes.h"

enum changes_stmt { CHANGES_NOW, CHANGES_SINCE, CHANGES_FORGET, CHANGES_STMT__MAX };

static const char *const changes_sql[CHANGES_STMT__MAX] = {
	[CHANGES_NOW] = "SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 100) AS SIGNED)",
	/* Parenthesised: clang's -Wstring-concatenation (the fuzz build). */
	[CHANGES_SINCE] = ("SELECT seq, user_id FROM account_changes "
			   "WHERE changed >= ? ORDER BY seq"),
	[CHANGES_FORGET] = "DELETE FROM account_changes WHERE changed < ? LIMIT ?",
};

static int now_row(void *ctx, const struct db_value *row, size_t ncols)
{
	if (ncols == 1 && !row[0].is_null)
		*(int64_t *)ctx = row[0].i;
	return 0;
}

enum db_status db_changes_now(int64_t *centiseconds)
{
	*centiseconds = 0;
	enum db_status st = db_run(changes_sql[CHANGES_NOW], NULL, 0, now_row,
				   centiseconds, NULL);
	if (st == DB_OK && *centiseconds <= 0)
		return DB_ERROR;
	return st;
}

struct since_ctx {
	void (*fn)(void *ctx, uint64_t seq, int64_t user_id);
	void *ctx;
};

static int since_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct since_ctx *s = ctx;
	if (ncols == 2 && !row[0].is_null && !row[1].is_null)
		s->fn(s->ctx, (uint64_t)row[0].i, row[1].i);
	return 0;
}

enum db_status db_changes_since(int64_t since,
				void (*fn)(void *ctx, uint64_t seq, int64_t user_id),
				void *ctx)
{
	struct since_ctx s = { fn, ctx };
	struct db_param p[] = { DB_INT(since) };
	return db_run(changes_sql[CHANGES_SINCE], p, 1, since_row, &s, NULL);
}

enum db_status db_changes_forget(int64_t cutoff, int64_t limit, uint64_t *deleted)
{
	struct db_param p[] = { DB_INT(cutoff), DB_INT(limit) };
	return db_run(changes_sql[CHANGES_FORGET], p, 2, NULL, NULL, deleted);
}
