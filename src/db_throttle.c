/* db_throttle.c - SQL for the throttle table (see db_throttle.h). */
#include "db_throttle.h"

#include <string.h>

enum throttle_stmt {
	THROTTLE_GET,
	THROTTLE_COUNT,
	THROTTLE_LOCK,
	THROTTLE_TOUCH,
	THROTTLE_EXTEND,
	THROTTLE_CLEAR,
	THROTTLE_CLEAR_PREFIX,
	THROTTLE_CLEAR_SUFFIX,
	THROTTLE_FORGET,
	THROTTLE_LIST,
	THROTTLE_STMT__MAX
};

/*
 * THROTTLE_COUNT: ON DUPLICATE KEY UPDATE assigns left to right, each
 * assignment seeing the ones before it, so "events = 1" after the first
 * line means a new window has just started.
 */
static const char *const throttle_sql[THROTTLE_STMT__MAX] = {
	[THROTTLE_GET] = "SELECT kind, events, window_start, locked_until "
			 "FROM throttle WHERE ((kind = ? AND subject = ?) OR "
			 "(kind = ? AND subject = ?)) AND expires > ?",
	[THROTTLE_COUNT] =
		"INSERT INTO throttle (kind, subject, events, window_start, "
		"locked_until, expires) VALUES (?, ?, 1, ?, 0, ?) "
		"ON DUPLICATE KEY UPDATE "
		"events = IF(expires <= ? OR (locked_until > 0 AND "
		"locked_until <= ?), 1, events + 1), "
		"window_start = IF(events = 1, ?, window_start), "
		"locked_until = IF(events = 1, 0, locked_until), "
		"expires = IF(events = 1, ?, expires)",
	[THROTTLE_LOCK] = "UPDATE throttle SET locked_until = ?, "
			  "expires = GREATEST(expires, ?) WHERE kind = ? AND "
			  "subject = ? AND events >= ? AND locked_until = 0",
	[THROTTLE_TOUCH] =
		"INSERT INTO throttle (kind, subject, events, window_start, "
		"locked_until, expires) VALUES (?, ?, 1, ?, 0, ?) "
		"ON DUPLICATE KEY UPDATE events = events + 1, "
		"expires = GREATEST(expires, VALUES(expires))",
	[THROTTLE_EXTEND] = "UPDATE throttle SET expires = GREATEST(expires, ?) "
			    "WHERE kind = ? AND subject = ?",
	[THROTTLE_CLEAR] = "DELETE FROM throttle WHERE kind = ? AND subject = ?",
	/* Not LIKE: names may hold '_'. */
	[THROTTLE_CLEAR_PREFIX] = "DELETE FROM throttle WHERE kind = ? AND "
				  "LEFT(subject, LENGTH(?)) = ?",
	[THROTTLE_CLEAR_SUFFIX] = "DELETE FROM throttle WHERE kind = ? AND "
				  "RIGHT(subject, LENGTH(?)) = ?",
	[THROTTLE_FORGET] = "DELETE FROM throttle WHERE expires <= ? LIMIT ?",
	[THROTTLE_LIST] = "SELECT kind, subject, events, window_start, "
			  "locked_until, expires FROM throttle WHERE expires > ? "
			  "ORDER BY locked_until > ? DESC, kind, subject",
};

struct get_ctx {
	enum throttle_kind kind_a, kind_b;
	const char *subject_a, *subject_b;
	struct throttle_row *a, *b;
};

static void fill_row(struct throttle_row *r, const struct db_value *v)
{
	r->found = true;
	r->events = v[0].i;
	r->window_start = v[1].i;
	r->locked_until = v[2].i;
}

static int get_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct get_ctx *g = ctx;
	(void)ncols;
	/* The same kind twice (throttle.c asks so for one row, with "" as the
	 * second subject, which matches none): the row goes to a. */
	if (row[0].i == g->kind_a)
		fill_row(g->a, row + 1);
	else if (row[0].i == g->kind_b)
		fill_row(g->b, row + 1);
	return 0;
}

enum db_status db_throttle_get(enum throttle_kind kind_a, const char *subject_a,
			       enum throttle_kind kind_b, const char *subject_b,
			       int64_t now, struct throttle_row *a,
			       struct throttle_row *b)
{
	struct get_ctx g = { kind_a, kind_b, subject_a, subject_b, a, b };
	struct db_param p[] = { DB_INT(kind_a), DB_CSTR(subject_a),
				DB_INT(kind_b), DB_CSTR(subject_b), DB_INT(now) };
	memset(a, 0, sizeof *a);
	memset(b, 0, sizeof *b);
	return db_run(throttle_sql[THROTTLE_GET], p, 5, get_row, &g, NULL);
}

enum db_status db_throttle_count(enum throttle_kind kind, const char *subject,
				 int64_t now, int64_t window, int64_t limit,
				 int64_t lockout, bool *locked_now)
{
	struct db_param count[] = { DB_INT(kind),      DB_CSTR(subject),
				    DB_INT(now),       DB_INT(now + window),
				    DB_INT(now),       DB_INT(now),
				    DB_INT(now),       DB_INT(now + window) };
	*locked_now = false;
	enum db_status st = db_run(throttle_sql[THROTTLE_COUNT], count, 8, NULL,
				   NULL, NULL);
	if (st != DB_OK || limit <= 0)
		return st;
	uint64_t affected = 0;
	struct db_param lock[] = { DB_INT(now + lockout), DB_INT(now + lockout),
				   DB_INT(kind), DB_CSTR(subject), DB_INT(limit) };
	st = db_run(throttle_sql[THROTTLE_LOCK], lock, 5, NULL, NULL, &affected);
	*locked_now = st == DB_OK && affected == 1;
	return st;
}

enum db_status db_throttle_touch(enum throttle_kind kind, const char *subject,
				 int64_t now, int64_t lifetime)
{
	struct db_param p[] = { DB_INT(kind), DB_CSTR(subject), DB_INT(now),
				DB_INT(now + lifetime) };
	return db_run(throttle_sql[THROTTLE_TOUCH], p, 4, NULL, NULL, NULL);
}

enum db_status db_throttle_extend(enum throttle_kind kind, const char *subject,
				  int64_t until)
{
	struct db_param p[] = { DB_INT(until), DB_INT(kind), DB_CSTR(subject) };
	return db_run(throttle_sql[THROTTLE_EXTEND], p, 3, NULL, NULL, NULL);
}

enum db_status db_throttle_clear_part(enum throttle_kind kind, const char *part,
				      bool suffix, uint64_t *removed)
{
	struct db_param p[] = { DB_INT(kind), DB_CSTR(part), DB_CSTR(part) };
	return db_run(throttle_sql[suffix ? THROTTLE_CLEAR_SUFFIX
					  : THROTTLE_CLEAR_PREFIX],
		      p, 3, NULL, NULL, removed);
}

enum db_status db_throttle_clear(enum throttle_kind kind, const char *subject,
				 uint64_t *removed)
{
	struct db_param p[] = { DB_INT(kind), DB_CSTR(subject) };
	return db_run(throttle_sql[THROTTLE_CLEAR], p, 2, NULL, NULL, removed);
}

enum db_status db_throttle_forget(int64_t now, int64_t batch, uint64_t *removed)
{
	struct db_param p[] = { DB_INT(now), DB_INT(batch) };
	return db_run(throttle_sql[THROTTLE_FORGET], p, 2, NULL, NULL, removed);
}

struct list_ctx {
	db_throttle_fn fn;
	void *ctx;
};

static int list_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct list_ctx *l = ctx;
	struct throttle_row r = { true, row[2].i, row[3].i, row[4].i };
	(void)ncols;
	return l->fn(l->ctx, (enum throttle_kind)row[0].i, row[1].s, &r, row[5].i);
}

enum db_status db_throttle_list(int64_t now, db_throttle_fn fn, void *ctx)
{
	struct list_ctx l = { fn, ctx };
	struct db_param p[] = { DB_INT(now), DB_INT(now) };
	return db_run(throttle_sql[THROTTLE_LIST], p, 2, list_row, &l, NULL);
}
