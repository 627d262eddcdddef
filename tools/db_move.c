/* db_move.c - the moves table and the copy of an account's rows between places (db_move.h). */
#include "db_move.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "admin_backup_db.h"
#include "buf.h"
#include "db_admin.h"
#include "db_storage.h"
#include "util.h"

/* Rows per transaction on the target. */
#define BATCH 500

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

/* ---- retries ------------------------------------------------------------------- */

#define ATTEMPTS 12

enum db_status db_move_retry(db_move_step_fn step, void *ctx)
{
	enum db_status st = DB_RETRY;
	for (int attempt = 0; attempt < ATTEMPTS && st == DB_RETRY; attempt++) {
		if (attempt > 0) {
			sleep_micros((int64_t)20000 << (attempt < 5 ? attempt : 5));
		}
		st = step(ctx);
	}
	return st;
}

/* ---- an account's rows, read on one place and kept to write on another --------- */

/*
 * The readers (db_admin.h, admin_backup_db.h) hand out rows whose strings
 * live only during their callback, and no statement may run on another
 * place meanwhile (db.c fetches into one set of buffers): so what is read
 * is copied here first, every string owned.
 */
struct kept {
	struct db_record *records;
	size_t nrecords, records_cap;
	struct backup_version *versions;
	size_t nversions, versions_cap;
	struct backup_write *writes;
	size_t nwrites, writes_cap;
	char **strings;
	size_t nstrings, strings_cap;
};

static void *grow(void *array, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return array;
	*cap = *cap ? *cap * 2 : 64;
	return xrealloc(array, *cap * size);
}

/* A copy of [s, s + len) that k frees; NULL stays NULL. */
static const char *keep_string(struct kept *k, const char *s, size_t len)
{
	if (s == NULL)
		return NULL;
	k->strings = grow(k->strings, &k->strings_cap, k->nstrings, sizeof *k->strings);
	return k->strings[k->nstrings++] = xstrndup(s, len);
}

static void keep_record_strings(struct kept *k, struct db_record *r)
{
	r->collection = keep_string(k, r->collection, r->collection_len);
	r->row.id = keep_string(k, r->row.id, r->row.id_len);
	r->row.parentid = keep_string(k, r->row.parentid, r->row.parentid_len);
	r->row.predecessorid = keep_string(k, r->row.predecessorid, r->row.predecessorid_len);
	r->row.payload = keep_string(k, r->row.payload, r->row.payload_len);
}

static int keep_record(void *ctx, const struct db_record *r)
{
	struct kept *k = ctx;
	k->records = grow(k->records, &k->records_cap, k->nrecords, sizeof *k->records);
	k->records[k->nrecords] = *r;
	keep_record_strings(k, &k->records[k->nrecords++]);
	return 0;
}

static int keep_version(void *ctx, const struct backup_version *v)
{
	struct kept *k = ctx;
	k->versions = grow(k->versions, &k->versions_cap, k->nversions, sizeof *k->versions);
	k->versions[k->nversions] = *v;
	keep_record_strings(k, &k->versions[k->nversions++].rec);
	return 0;
}

static int keep_write(void *ctx, const struct backup_write *w)
{
	struct kept *k = ctx;
	k->writes = grow(k->writes, &k->writes_cap, k->nwrites, sizeof *k->writes);
	struct backup_write *mine = &k->writes[k->nwrites++];
	*mine = *w;
	mine->collection = keep_string(k, w->collection, w->collection_len);
	mine->agent = keep_string(k, w->agent, w->agent_len);
	return 0;
}

static void kept_free(struct kept *k)
{
	for (size_t i = 0; i < k->nstrings; i++)
		free(k->strings[i]);
	free(k->strings);
	free(k->records);
	free(k->versions);
	free(k->writes);
	memset(k, 0, sizeof *k);
}

/* Read on place: the account's records (all when all), and its history
 * rows after the given `replaced` and stamp. */
static enum db_status read_account(size_t place, int64_t user_id, bool all,
				   int64_t versions_after, int64_t writes_after, struct kept *k)
{
	size_t was = db_use(place);
	enum db_status st = all ? db_admin_export(user_id, keep_record, k) : DB_OK;
	if (st == DB_OK)
		st = backup_db_versions(user_id, versions_after, keep_version, k);
	if (st == DB_OK)
		st = backup_db_writes(user_id, writes_after, keep_write, k);
	db_use(was);
	return st;
}

/* ---- writing them on the target, in short transactions ----------------------------- */

enum part { RECORDS, VERSIONS, WRITES };

/* Rows [first, first + n) of one part of k, for one transaction. */
struct batch {
	const struct kept *k;
	int64_t user_id;
	enum part part;
	size_t first, n;
};

/* A batch in one transaction on the current place: a step of db_move_retry(). */
static enum db_status write_batch(void *ctx)
{
	const struct batch *b = ctx;
	enum db_status st = db_begin();
	if (st == DB_OK && b->part == RECORDS)
		st = db_admin_insert_records(b->user_id, b->k->records + b->first, b->n);
	for (size_t i = b->first; i < b->first + b->n && st == DB_OK && b->part != RECORDS; i++)
		st = b->part == VERSIONS ? backup_db_put_version(b->user_id, &b->k->versions[i])
					 : backup_db_put_write(b->user_id, &b->k->writes[i]);
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback_current();
	return st;
}

/* One part of k (count rows) written on the current place, BATCH rows a transaction. */
static enum db_status write_part(const struct kept *k, int64_t user_id, enum part part,
				 size_t count)
{
	enum db_status st = DB_OK;
	for (size_t first = 0; first < count && st == DB_OK; first += BATCH) {
		struct batch b = { k, user_id, part, first,
				   count - first < BATCH ? count - first : BATCH };
		st = db_move_retry(write_batch, &b);
	}
	return st;
}

/* The history usage row: the source's, or none. */
struct usage {
	int64_t user_id, bytes, since;
};

static enum db_status put_usage(void *ctx)
{
	const struct usage *u = ctx;
	return backup_db_put_usage(u->user_id, u->bytes, u->since);
}

static enum db_status copy_usage(size_t from, size_t to, int64_t user_id)
{
	struct usage u = { user_id, 0, 0 };
	size_t was = db_use(from);
	enum db_status st = backup_db_usage(user_id, &u.bytes, &u.since);
	db_use(to);
	if (st == DB_OK)
		st = db_move_retry(put_usage, &u);
	db_use(was);
	return st == DB_NOT_FOUND ? DB_OK : st;
}

/* k's rows written on place to, the history usage copied from from. */
static enum db_status write_account(size_t from, size_t to, int64_t user_id,
				    const struct kept *k, struct move_counts *c)
{
	size_t was = db_use(to);
	enum db_status st = write_part(k, user_id, RECORDS, k->nrecords);
	if (st == DB_OK)
		st = write_part(k, user_id, VERSIONS, k->nversions);
	if (st == DB_OK)
		st = write_part(k, user_id, WRITES, k->nwrites);
	db_use(was);
	if (st == DB_OK)
		st = copy_usage(from, to, user_id);
	c->records += (int64_t)k->nrecords;
	c->history += (int64_t)(k->nversions + k->nwrites);
	return st;
}

/* ---- clear and copy ------------------------------------------------------------- */

/* The account's rows on the current place: a step of db_move_retry(). */
static enum db_status clear_once(void *ctx)
{
	const int64_t *user_id = ctx;
	enum db_status st = db_begin();
	if (st == DB_OK)
		st = db_storage_forget_user(*user_id);
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback_current();
	return st;
}

enum db_status db_move_clear(size_t place, int64_t user_id)
{
	size_t was = db_use(place);
	enum db_status st = db_move_retry(clear_once, &user_id);
	db_use(was);
	return st;
}

enum db_status db_move_copy(size_t from, size_t to, int64_t user_id, struct move_counts *c)
{
	struct kept k = { 0 };
	enum db_status st = read_account(from, user_id, true, INT64_MIN, INT64_MIN, &k);
	if (st == DB_OK)
		st = write_account(from, to, user_id, &k, c);
	kept_free(&k);
	return st;
}

/* ---- the last changes, with the account frozen ----------------------------------- */

/*
 * A record's key and a signature of every column but the payload's bytes
 * (a new payload always comes with a new modified; sortindex and ttl are
 * compared as they are).
 */
struct meta {
	char *collection, *id;
	struct buf sig;
};

struct metas {
	struct meta *v;
	size_t n, cap;
};

static const char META_SQL[] =
	"SELECT collection, id, parentid, predecessorid, sortindex, modified, payload_size, "
	"expires FROM wbo WHERE user_id = ? ORDER BY collection, id";

static int keep_meta(void *ctx, const struct db_value *row, size_t ncols)
{
	struct metas *s = ctx;
	s->v = grow(s->v, &s->cap, s->n, sizeof *s->v);
	struct meta *m = &s->v[s->n++];
	m->collection = xstrndup(row[0].s, row[0].len);
	m->id = xstrndup(row[1].s, row[1].len);
	buf_init(&m->sig, 64 * 1024);
	for (size_t c = 2; c < ncols; c++) {
		const struct db_value *v = &row[c];
		if (v->is_null) {
			buf_puts(&m->sig, "N;");
		} else if (v->s == NULL) {
			buf_printf(&m->sig, "I%" PRId64 ";", v->i);
		} else {
			buf_printf(&m->sig, "S%zu:", v->len);
			buf_append(&m->sig, v->s, v->len);
		}
	}
	return 0;
}

static void metas_free(struct metas *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].collection);
		free(s->v[i].id);
		buf_free(&s->v[i].sig);
	}
	free(s->v);
}

static enum db_status read_metas(size_t place, int64_t user_id, struct metas *s)
{
	size_t was = db_use(place);
	struct db_param p[] = { DB_INT(user_id) };
	enum db_status st = db_run(META_SQL, p, 1, keep_meta, s, NULL);
	db_use(was);
	return st;
}

/* MariaDB's order of VARBINARY keys: bytes, then length. */
static int key_order(const struct meta *a, const struct meta *b)
{
	int d = strcmp(a->collection, b->collection);
	return d != 0 ? d : strcmp(a->id, b->id);
}

static bool same_columns(const struct meta *a, const struct meta *b)
{
	return a->sig.len == b->sig.len && memcmp(a->sig.data, b->sig.data, a->sig.len) == 0;
}

/* A record only the target has (deleted meanwhile): a step of db_move_retry(). */
struct doomed {
	int64_t user_id;
	const struct meta *m;
};

static enum db_status remove_once(void *ctx)
{
	const struct doomed *d = ctx;
	return db_storage_delete_one(NULL, d->user_id, d->m->collection, d->m->id);
}

/* Both sides' records walked together in key order: what differs is read
 * again from `from` (into k), what only `to` has is deleted there. */
static enum db_status reconcile_records(size_t from, size_t to, int64_t user_id,
					struct kept *k, struct move_counts *c)
{
	struct metas a = { 0 }, b = { 0 };
	enum db_status st = read_metas(from, user_id, &a);
	if (st == DB_OK)
		st = read_metas(to, user_id, &b);
	size_t i = 0, j = 0, was = db_use(from);
	while (st == DB_OK && (i < a.n || j < b.n)) {
		int order = i == a.n ? 1 : j == b.n ? -1 : key_order(&a.v[i], &b.v[j]);
		if (order > 0) {
			db_use(to);
			st = db_move_retry(remove_once, &(struct doomed){ user_id, &b.v[j++] });
			db_use(from);
			c->removed++;
			continue;
		}
		if (order < 0 || !same_columns(&a.v[i], &b.v[j]))
			st = db_admin_export_one(user_id, a.v[i].collection, a.v[i].id, keep_record, k);
		i++;
		if (order == 0)
			j++;
	}
	db_use(was);
	metas_free(&a);
	metas_free(&b);
	return st;
}

enum db_status db_move_reconcile(size_t from, size_t to, int64_t user_id,
				 struct move_counts *c)
{
	struct kept k = { 0 };
	int64_t versions_after = INT64_MIN, writes_after = INT64_MIN;
	size_t was = db_use(to);
	enum db_status st = backup_db_newest(user_id, &versions_after, &writes_after);
	db_use(was);
	if (st == DB_OK)
		st = reconcile_records(from, to, user_id, &k, c);
	if (st == DB_OK)
		st = read_account(from, user_id, false, versions_after, writes_after, &k);
	if (st == DB_OK)
		st = write_account(from, to, user_id, &k, c);
	kept_free(&k);
	return st;
}
