/* db_move.c - the moves table and the copy of an account's rows between places (db_move.h). */
#include "db_move.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define BATCH 500
#define MAX_COLS 10
#define MAX_KEY 3

/* ---- the moves table ----------------------------------------------------------- */

enum move_stmt { MOVE_GET, MOVE_START, MOVE_SET_PHASE, MOVE_FINISH, MOVE_STMT__MAX };

static const char *const move_sql[MOVE_STMT__MAX] = {
	[MOVE_GET] = "SELECT user_id, source, target, phase, status_before, started "
		     "FROM moves WHERE user_id = ?",
	[MOVE_START] = "INSERT INTO moves (user_id, source, target, phase, status_before, "
		       "started) VALUES (?, ?, ?, ?, ?, ?)",
	[MOVE_SET_PHASE] = "UPDATE moves SET phase = ?, status_before = ? WHERE user_id = ?",
	[MOVE_FINISH] = "DELETE FROM moves WHERE user_id = ?",
};

void move_free(struct move *m)
{
	free(m->source);
	free(m->target);
	memset(m, 0, sizeof *m);
}

static char *dup_or_null(const struct db_value *v)
{
	return v->is_null ? NULL : xstrndup(v->s, v->len);
}

static int move_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	struct move *m = ctx;
	m->user_id = row[0].i;
	m->source = dup_or_null(&row[1]);
	m->target = dup_or_null(&row[2]);
	m->phase = (int)row[3].i;
	m->status_before = (int)row[4].i;
	m->started = row[5].i;
	return 1;
}

enum db_status db_move_get(int64_t user_id, struct move *m)
{
	memset(m, 0, sizeof *m);
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_run(move_sql[MOVE_GET], p, 1, move_row, m, NULL);
	if (st == DB_OK && m->phase == 0)
		return DB_NOT_FOUND;
	return st;
}

static struct db_param node_param(const char *node)
{
	return node == NULL ? DB_NULL : DB_CSTR(node);
}

enum db_status db_move_start(const struct move *m)
{
	struct db_param p[] = { DB_INT(m->user_id), node_param(m->source), node_param(m->target),
				DB_INT(m->phase), DB_INT(m->status_before), DB_INT(m->started) };
	return db_run(move_sql[MOVE_START], p, 6, NULL, NULL, NULL);
}

enum db_status db_move_set_phase(int64_t user_id, int phase, int status_before)
{
	struct db_param p[] = { DB_INT(phase), DB_INT(status_before), DB_INT(user_id) };
	return db_run(move_sql[MOVE_SET_PHASE], p, 3, NULL, NULL, NULL);
}

enum db_status db_move_finish(int64_t user_id)
{
	struct db_param p[] = { DB_INT(user_id) };
	return db_run(move_sql[MOVE_FINISH], p, 1, NULL, NULL, NULL);
}

/* ---- rows held between two places ---------------------------------------------- */

/* One column of a row read on one place, kept to be written on another. */
struct cell {
	bool is_null;
	int64_t i;
	char *s;
	size_t len;
};

struct rows {
	const char *types; /* 'i' or 's' per column */
	size_t ncols;
	struct cell (*row)[MAX_COLS];
	size_t n, cap;
};

static void rows_init(struct rows *r, const char *types)
{
	memset(r, 0, sizeof *r);
	r->types = types;
	r->ncols = strlen(types);
}

static void rows_clear(struct rows *r)
{
	for (size_t k = 0; k < r->n; k++)
		for (size_t c = 0; c < r->ncols; c++)
			free(r->row[k][c].s);
	r->n = 0;
}

static void rows_free(struct rows *r)
{
	rows_clear(r);
	free(r->row);
	r->row = NULL;
	r->cap = 0;
}

static int keep_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct rows *r = ctx;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->row = xrealloc(r->row, r->cap * sizeof *r->row);
	}
	struct cell *out = r->row[r->n++];
	for (size_t c = 0; c < r->ncols && c < ncols; c++) {
		out[c] = (struct cell){ .is_null = row[c].is_null };
		if (row[c].is_null)
			continue;
		if (r->types[c] == 'i') {
			out[c].i = row[c].i;
		} else {
			out[c].s = xmalloc(row[c].len + 1);
			memcpy(out[c].s, row[c].s, row[c].len);
			out[c].s[row[c].len] = '\0';
			out[c].len = row[c].len;
		}
	}
	return 0;
}

static struct db_param cell_param(const struct rows *r, const struct cell *c, size_t col)
{
	if (c->is_null)
		return DB_NULL;
	return r->types[col] == 'i' ? DB_INT(c->i) : DB_STR(c->s ? c->s : "", c->len);
}

static bool cells_equal(const struct rows *r, const struct cell *a, const struct cell *b,
			size_t from, size_t to)
{
	for (size_t c = from; c < to; c++) {
		if (a[c].is_null != b[c].is_null)
			return false;
		if (a[c].is_null)
			continue;
		if (r->types[c] == 'i' ? a[c].i != b[c].i
				       : a[c].len != b[c].len || memcmp(a[c].s, b[c].s, a[c].len) != 0)
			return false;
	}
	return true;
}

/* Order of two rows by their first nkey columns (VARBINARY: bytes). */
static int key_order(const struct rows *r, const struct cell *a, const struct cell *b, size_t nkey)
{
	for (size_t c = 0; c < nkey; c++) {
		if (r->types[c] == 'i') {
			if (a[c].i != b[c].i)
				return a[c].i < b[c].i ? -1 : 1;
			continue;
		}
		size_t n = a[c].len < b[c].len ? a[c].len : b[c].len;
		int d = memcmp(a[c].s, b[c].s, n);
		if (d != 0)
			return d < 0 ? -1 : 1;
		if (a[c].len != b[c].len)
			return a[c].len < b[c].len ? -1 : 1;
	}
	return 0;
}

/* Run sql on place with params, keeping its rows in r (appended). */
static enum db_status read_rows(size_t place, const char *sql, const struct db_param *p,
				size_t np, struct rows *r)
{
	size_t was = db_use(place);
	enum db_status st = db_run(sql, p, np, keep_row, r, NULL);
	db_use(was);
	return st;
}

/* ---- the tables of an account's storage ---------------------------------------- */

/*
 * A table copied row by row. The selected columns (types) start with the
 * nkey columns of the key that orders the rows after user_id; upsert
 * takes user_id and then every selected column.
 */
struct table {
	const char *types;
	size_t nkey;
	const char *first;  /* user_id, limit */
	const char *after;  /* user_id, key..., limit */
	const char *newest; /* user_id: the greatest key (NULL: copied whole) */
	const char *upsert;
	const char *clear;  /* user_id, limit */
};

#define WBO_COLUMNS \
	"collection, id, parentid, predecessorid, sortindex, modified, payload, payload_size, expires"
#define HISTORY_COLUMNS \
	"replaced, collection, id, parentid, predecessorid, sortindex, modified, payload, " \
	"payload_size, expires"
#define LOG_COLUMNS "stamp, collection, previous, written, replaced, deleted, bytes, agent"

enum { T_WBO, T_HISTORY, T_LOG, T_USAGE, T__MAX };

static const struct table tables[T__MAX] = {
	[T_WBO] = {
		.types = "ssssiisii", .nkey = 2,
		.first = "SELECT " WBO_COLUMNS " FROM wbo WHERE user_id = ? "
			 "ORDER BY collection, id LIMIT ?",
		.after = "SELECT " WBO_COLUMNS " FROM wbo WHERE user_id = ? "
			 "AND (collection, id) > (?, ?) ORDER BY collection, id LIMIT ?",
		.upsert = "INSERT INTO wbo (user_id, " WBO_COLUMNS ") "
			  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE "
			  "parentid = VALUES(parentid), predecessorid = VALUES(predecessorid), "
			  "sortindex = VALUES(sortindex), modified = VALUES(modified), "
			  "payload = VALUES(payload), payload_size = VALUES(payload_size), "
			  "expires = VALUES(expires)",
		.clear = "DELETE FROM wbo WHERE user_id = ? LIMIT ?",
	},
	[T_HISTORY] = {
		.types = "issssiisii", .nkey = 3,
		.first = "SELECT " HISTORY_COLUMNS " FROM wbo_history WHERE user_id = ? "
			 "ORDER BY replaced, collection, id LIMIT ?",
		.after = "SELECT " HISTORY_COLUMNS " FROM wbo_history WHERE user_id = ? "
			 "AND (replaced, collection, id) > (?, ?, ?) "
			 "ORDER BY replaced, collection, id LIMIT ?",
		.newest = "SELECT " HISTORY_COLUMNS " FROM wbo_history WHERE user_id = ? "
			  "ORDER BY replaced DESC, collection DESC, id DESC LIMIT 1",
		.upsert = "INSERT INTO wbo_history (user_id, " HISTORY_COLUMNS ") "
			  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
			  "ON DUPLICATE KEY UPDATE payload = VALUES(payload)",
		.clear = "DELETE FROM wbo_history WHERE user_id = ? LIMIT ?",
	},
	[T_LOG] = {
		.types = "isiiiiis", .nkey = 2,
		.first = "SELECT " LOG_COLUMNS " FROM write_log WHERE user_id = ? "
			 "ORDER BY stamp, collection LIMIT ?",
		.after = "SELECT " LOG_COLUMNS " FROM write_log WHERE user_id = ? "
			 "AND (stamp, collection) > (?, ?) ORDER BY stamp, collection LIMIT ?",
		.newest = "SELECT " LOG_COLUMNS " FROM write_log WHERE user_id = ? "
			  "ORDER BY stamp DESC, collection DESC LIMIT 1",
		.upsert = "INSERT INTO write_log (user_id, " LOG_COLUMNS ") "
			  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
			  "ON DUPLICATE KEY UPDATE written = VALUES(written)",
		.clear = "DELETE FROM write_log WHERE user_id = ? LIMIT ?",
	},
	[T_USAGE] = {
		.types = "ii", .nkey = 0,
		.first = "SELECT bytes, since FROM history_usage WHERE user_id = ? LIMIT ?",
		.upsert = "INSERT INTO history_usage (user_id, bytes, since) VALUES (?, ?, ?) "
			  "ON DUPLICATE KEY UPDATE bytes = VALUES(bytes), since = VALUES(since)",
		.clear = "DELETE FROM history_usage WHERE user_id = ? LIMIT ?",
	},
};

/*
 * Each write of a move is a short transaction of its own: one that meets a
 * deadlock or a Galera certification failure (DB_RETRY) runs again, after
 * a pause that doubles, at most ATTEMPTS times.
 */
#define ATTEMPTS 12

static void pause_before(int attempt)
{
	long ms = 20L << (attempt < 5 ? attempt : 5);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Write rows [0, r->n) of t on the current place, in one transaction. */
static enum db_status write_rows_once(const struct table *t, int64_t user_id,
				      const struct rows *r)
{
	enum db_status st = db_begin();
	for (size_t k = 0; k < r->n && st == DB_OK; k++) {
		struct db_param p[MAX_COLS + 1];
		p[0] = DB_INT(user_id);
		for (size_t c = 0; c < r->ncols; c++)
			p[1 + c] = cell_param(r, &r->row[k][c], c);
		st = db_run(t->upsert, p, 1 + r->ncols, NULL, NULL, NULL);
	}
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback_current();
	return st;
}

/* Write rows [0, r->n) of t on place. */
static enum db_status write_rows(size_t place, const struct table *t, int64_t user_id,
				 const struct rows *r)
{
	size_t was = db_use(place);
	enum db_status st = DB_RETRY;
	for (int attempt = 0; attempt < ATTEMPTS && st == DB_RETRY; attempt++) {
		if (attempt > 0)
			pause_before(attempt);
		st = write_rows_once(t, user_id, r);
	}
	db_use(was);
	return st;
}

/* One statement on the current place, run again on DB_RETRY. */
static enum db_status run_again(const char *sql, const struct db_param *p, size_t np,
				uint64_t *affected)
{
	enum db_status st = DB_RETRY;
	for (int attempt = 0; attempt < ATTEMPTS && st == DB_RETRY; attempt++) {
		if (attempt > 0)
			pause_before(attempt);
		st = db_run(sql, p, np, NULL, NULL, affected);
	}
	return st;
}

/* Move r's last row into last, as its only row (its strings go along). */
static void keep_last(struct rows *last, struct rows *r)
{
	if (last->cap == 0) {
		last->cap = 1;
		last->row = xmalloc(sizeof *last->row);
	}
	memcpy(last->row[0], r->row[r->n - 1], sizeof last->row[0]);
	last->n = 1;
	r->n--;
}

/*
 * Copy t's rows of the account from `from` to `to`, in key order,
 * starting after the key in after (a row of t, or NULL: from the first).
 */
static enum db_status copy_table(const struct table *t, size_t from, size_t to,
				 int64_t user_id, const struct cell *after, int64_t *copied)
{
	struct rows r, last;
	rows_init(&r, t->types);
	rows_init(&last, t->types);
	enum db_status st = DB_OK;
	for (;;) {
		const struct cell *key = last.n > 0 ? last.row[0] : after;
		struct db_param p[MAX_KEY + 2];
		size_t np = 0;
		p[np++] = DB_INT(user_id);
		if (key != NULL && t->nkey > 0)
			for (size_t c = 0; c < t->nkey; c++)
				p[np++] = cell_param(&r, &key[c], c);
		p[np++] = DB_INT(BATCH);
		rows_clear(&r);
		st = read_rows(from, key != NULL && t->nkey > 0 ? t->after : t->first, p, np, &r);
		if (st != DB_OK || r.n == 0)
			break;
		st = write_rows(to, t, user_id, &r);
		if (st != DB_OK)
			break;
		*copied += (int64_t)r.n;
		if (r.n < BATCH || t->nkey == 0)
			break;
		/* The batch's last row is the next one's start. */
		rows_clear(&last);
		last.types = r.types;
		keep_last(&last, &r);
	}
	rows_free(&r);
	rows_free(&last);
	return st;
}

enum db_status db_move_clear(size_t place, int64_t user_id)
{
	size_t was = db_use(place);
	enum db_status st = DB_OK;
	for (size_t t = 0; t < T__MAX && st == DB_OK; t++) {
		uint64_t deleted;
		do {
			struct db_param p[] = { DB_INT(user_id), DB_INT(BATCH) };
			deleted = 0;
			st = run_again(tables[t].clear, p, 2, &deleted);
		} while (st == DB_OK && deleted > 0);
	}
	db_use(was);
	return st;
}

enum db_status db_move_copy(size_t from, size_t to, int64_t user_id, struct move_counts *c)
{
	enum db_status st = copy_table(&tables[T_WBO], from, to, user_id, NULL, &c->records);
	for (size_t t = T_HISTORY; t < T__MAX && st == DB_OK; t++)
		st = copy_table(&tables[t], from, to, user_id, NULL, &c->history);
	return st;
}

/* ---- the last changes, with the account frozen ----------------------------------- */

enum reconcile_stmt { WBO_META, WBO_ONE, WBO_DELETE_ONE, RECONCILE_STMT__MAX };

/* The columns compared: all of a record's but the payload's bytes. */
#define META_TYPES "ssssiiii"
static const char *const reconcile_sql[RECONCILE_STMT__MAX] = {
	[WBO_META] = "SELECT collection, id, parentid, predecessorid, sortindex, modified, "
		     "payload_size, expires FROM wbo WHERE user_id = ? ORDER BY collection, id",
	[WBO_ONE] = "SELECT " WBO_COLUMNS " FROM wbo WHERE user_id = ? AND collection = ? "
		    "AND id = ?",
	[WBO_DELETE_ONE] = "DELETE FROM wbo WHERE user_id = ? AND collection = ? AND id = ?",
};

/* Copy the record keyed by key (collection, id) from `from` to `to`. */
static enum db_status recopy(size_t from, size_t to, int64_t user_id, const struct rows *meta,
			     const struct cell *key)
{
	struct rows r;
	rows_init(&r, tables[T_WBO].types);
	struct db_param p[] = { DB_INT(user_id), cell_param(meta, &key[0], 0),
				cell_param(meta, &key[1], 1) };
	enum db_status st = read_rows(from, reconcile_sql[WBO_ONE], p, 3, &r);
	if (st == DB_OK && r.n == 1)
		st = write_rows(to, &tables[T_WBO], user_id, &r);
	rows_free(&r);
	return st;
}

static enum db_status remove_one(size_t place, int64_t user_id, const struct rows *meta,
				 const struct cell *key)
{
	size_t was = db_use(place);
	struct db_param p[] = { DB_INT(user_id), cell_param(meta, &key[0], 0),
				cell_param(meta, &key[1], 1) };
	enum db_status st = run_again(reconcile_sql[WBO_DELETE_ONE], p, 3, NULL);
	db_use(was);
	return st;
}

/* Both sides' records, walked together in key order. */
static enum db_status reconcile_records(size_t from, size_t to, int64_t user_id,
					struct move_counts *c)
{
	struct rows a, b;
	rows_init(&a, META_TYPES);
	rows_init(&b, META_TYPES);
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = read_rows(from, reconcile_sql[WBO_META], p, 1, &a);
	if (st == DB_OK)
		st = read_rows(to, reconcile_sql[WBO_META], p, 1, &b);
	size_t i = 0, j = 0;
	while (st == DB_OK && (i < a.n || j < b.n)) {
		int order = i == a.n ? 1 : j == b.n ? -1 : key_order(&a, a.row[i], b.row[j], 2);
		if (order > 0) { /* only on the target: deleted meanwhile */
			st = remove_one(to, user_id, &b, b.row[j++]);
			c->removed++;
			continue;
		}
		if (order < 0 || !cells_equal(&a, a.row[i], b.row[j], 2, a.ncols)) {
			st = recopy(from, to, user_id, &a, a.row[i]);
			c->records++;
		}
		i++;
		if (order == 0)
			j++;
	}
	rows_free(&a);
	rows_free(&b);
	return st;
}

/* History rows after the newest the target has (they only grow). */
static enum db_status copy_tail(const struct table *t, size_t from, size_t to,
				int64_t user_id, int64_t *copied)
{
	struct rows newest;
	rows_init(&newest, t->types);
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = read_rows(to, t->newest, p, 1, &newest);
	if (st == DB_OK)
		st = copy_table(t, from, to, user_id, newest.n > 0 ? newest.row[0] : NULL,
				copied);
	rows_free(&newest);
	return st;
}

enum db_status db_move_reconcile(size_t from, size_t to, int64_t user_id,
				 struct move_counts *c)
{
	enum db_status st = reconcile_records(from, to, user_id, c);
	if (st == DB_OK)
		st = copy_tail(&tables[T_HISTORY], from, to, user_id, &c->history);
	if (st == DB_OK)
		st = copy_tail(&tables[T_LOG], from, to, user_id, &c->history);
	if (st == DB_OK)
		st = copy_table(&tables[T_USAGE], from, to, user_id, NULL, &c->history);
	return st;
}
