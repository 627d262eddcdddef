/*
 * admin_migrate.c - weave-admin migrate: accounts and records from
 * FSyncMS (SQLite or MySQL), the original PHP server (MySQL or its SQLite
 * directory) or weave-minimal (its data directory); docs/migration.md,
 * docs/protocol.md, Data from older servers.
 * This file is what every format shares: choosing the format, the
 * accounts, the records and the transactions; migrate.h names the
 * parts.
 *
 * The source is opened read-only and read with fixed query texts (no
 * value ever goes into SQL text; table names only after a character
 * check): the users (and, PHP, the collection names) into memory, then
 * every record in one stream ordered by user (per user's file for the
 * directory formats).
 * Each account is written to our database in one transaction: created,
 * then its records, then its last write. An account that exists already
 * is skipped, so a run that stopped can be repeated. An account with a
 * record we cannot store is rolled back whole and reported (exit 1).
 * About 600 lines: one account's life (pending, active, done, exists,
 * failed) across the record stream, which reads best in one place.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "db_admin.h"
#include "db_user.h"
#include "migrate.h"
#include "util.h"
#include "validate.h"

#define PAYLOAD_MAX 16777215
#define BATCH_BYTES (4 * 1024 * 1024)
#define FUTURE_SLACK (INT64_C(86400) * 100) /* centiseconds */

static const struct migrate_format *const formats[] = {
	&migrate_fsyncms, &migrate_php, &migrate_weave_minimal,
};

#define FORMAT_NAMES "fsyncms, php or weave-minimal"

/* The format called name, or NULL. "minimal", its name before
 * weave-minimal (Python) was read, stays FSyncMS's layout. */
static const struct migrate_format *find_format(const char *name)
{
	if (strcmp(name, "minimal") == 0)
		return &migrate_fsyncms;
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (strcmp(name, formats[i]->name) == 0)
			return formats[i];
	return NULL;
}

/* The format from --format, checked against the tables, or guessed. */
static int choose_format(const struct args *a, const struct source *s,
			 const struct layout *l, const struct migrate_format **out)
{
	const struct migrate_format *f = NULL;
	bool php_like = list_has(&l->user_columns, "id");
	if (has_opt(a, OPT_FORMAT)) {
		f = find_format(a->opt[OPT_FORMAT]);
		if (f == NULL)
			return usage_error("--format takes " FORMAT_NAMES ", not '%s'",
					   a->opt[OPT_FORMAT]);
		if (f == &migrate_weave_minimal)
			return fail(EXIT_FAILED, "%s: weave-minimal keeps one file per user: "
						 "give its data directory to --from", s->name);
	}
	if (f == NULL)
		f = php_like ? &migrate_php : &migrate_fsyncms;
	bool by_id = strcmp(f->user_key_column, "id") == 0;
	if (by_id && !php_like)
		return fail(EXIT_FAILED, "%s: users has no id column, so it is not the PHP "
					 "server's schema (try --format fsyncms)",
			    s->name);
	if (!by_id && php_like)
		return fail(EXIT_FAILED, "%s: users has an id column, so it is the PHP "
					 "server's schema (try --format php)", s->name);
	if (!list_has(&l->user_columns, "username") ||
	    (!list_has(&l->user_columns, "md5") &&
	     !list_has(&l->user_columns, "password_hash")))
		return fail(EXIT_FAILED, "%s: users needs username and md5 or "
					 "password_hash columns", s->name);
	*out = f;
	return EXIT_OK;
}

/* ---- accounts -------------------------------------------------------------------------- */

static void count_add(struct counters *c, const char *name, int64_t n)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->items[i].name, name) == 0) {
			c->items[i].n += n;
			return;
		}
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->items = xrealloc(c->items, c->cap * sizeof *c->items);
	}
	snprintf(c->items[c->n].name, sizeof c->items[0].name, "%s", name);
	c->items[c->n].n = n;
	c->n++;
}

static int counter_order(const void *a, const void *b)
{
	return strcmp(((const struct counter *)a)->name, ((const struct counter *)b)->name);
}

/* "bookmarks 10, history 25" into out. */
static void counts_text(struct counters *c, struct buf *out)
{
	qsort(c->items, c->n, sizeof *c->items, counter_order);
	for (size_t i = 0; i < c->n; i++)
		buf_printf(out, "%s%s %" PRId64, i ? ", " : "", c->items[i].name,
			   c->items[i].n);
}

/* ---- records ----------------------------------------------------------------------------- */

/* modified, as the format stores it, in centiseconds. */
static const char *convert_modified(const struct migration *m, const struct src_value *v,
				    int64_t *out)
{
	char text[64];
	if (v->is_null) {
		*out = 0;
		return NULL;
	}
	if (!src_number_text(v, text, sizeof text))
		return "modified is not a number";
	const char *why = m->format->modified(text, out);
	/* The account's clock starts at its newest record: one from the
	 * future would stamp every later write there (docs/protocol.md,
	 * Timestamps). A day covers the old server's clock being ahead. */
	if (why == NULL && *out > now_centiseconds() + FUTURE_SLACK)
		why = "modified is more than a day in the future";
	return why;
}

static const char *convert_sortindex(const struct src_value *v, struct db_record *r)
{
	char text[64];
	int64_t n;
	r->row.has_sortindex = false;
	if (v->is_null)
		return NULL;
	if (!src_number_text(v, text, sizeof text))
		return "sortindex is not a number";
	if (parse_int64(text, INT32_MIN, INT32_MAX, &n) < 0 &&
	    !src_number_by_double(text, 1.0, INT32_MAX, &n))
		return "sortindex is not a 32-bit integer";
	r->row.has_sortindex = true;
	r->row.sortindex = n;
	return NULL;
}

/* An id as the API takes it (validate_wbo_id): one the API refuses could
 * never be fetched or deleted by a client. An empty optional id is none. */
static const char *id_field(const struct src_value *v, bool required, const char *what)
{
	static char why[96];
	if (!required && (v->is_null || v->len == 0))
		return NULL;
	if (v->is_null || !validate_wbo_id(v->s, v->len)) {
		snprintf(why, sizeof why, "%s is not 1-64 printable ASCII characters "
					  "without / and ,", what);
		return why;
	}
	return NULL;
}

/* ttl in seconds (weave-minimal kept and enforced it) after modified. */
static const char *convert_ttl(const struct src_value *v, struct db_record *r)
{
	char text[32];
	int64_t ttl;
	r->expires = DB_RECORD_NEVER;
	if (v->is_null)
		return NULL;
	if (!src_number_text(v, text, sizeof text) ||
	    (parse_int64(text, 0, INT32_MAX, &ttl) < 0 &&
	     !src_number_by_double(text, 1.0, INT32_MAX, &ttl)) || ttl < 0)
		return "ttl is not a number of seconds";
	r->expires = r->row.modified + ttl * 100;
	return NULL;
}

/* Row: username, collection, id, parentid, predecessorid, sortindex,
 * modified, payload[, ttl]. */
static const char *convert_record(struct migration *m, const struct legacy_user *u,
				  const struct src_value *row, size_t ncols,
				  struct db_record *r)
{
	const char *why;
	memset(r, 0, sizeof *r);
	if ((why = m->format->collection(u->key, &row[1], &r->collection,
					&r->collection_len)) != NULL)
		return why;
	if (!validate_collection(r->collection, r->collection_len))
		return "a collection name is not 1-32 of A-Z a-z 0-9 . _ -";
	if ((why = id_field(&row[2], true, "the id")) != NULL ||
	    (why = id_field(&row[3], false, "parentid")) != NULL ||
	    (why = id_field(&row[4], false, "predecessorid")) != NULL)
		return why;
	r->row.id = row[2].s;
	r->row.id_len = row[2].len;
	if (!row[3].is_null && row[3].len > 0) {
		r->row.parentid = row[3].s;
		r->row.parentid_len = row[3].len;
	}
	if (!row[4].is_null && row[4].len > 0) {
		r->row.predecessorid = row[4].s;
		r->row.predecessorid_len = row[4].len;
	}
	if ((why = convert_sortindex(&row[5], r)) != NULL ||
	    (why = convert_modified(m, &row[6], &r->row.modified)) != NULL)
		return why;
	if (!row[7].is_null) {
		if (row[7].len > PAYLOAD_MAX)
			return "a payload is larger than 16 MB";
		/* Clients read it inside JSON: anything else breaks the listing. */
		if (!validate_utf8(row[7].s, row[7].len))
			return "a payload is not UTF-8 text";
		r->row.payload = row[7].s;
		r->row.payload_len = row[7].len;
	}
	/* FSyncMS's ttl column was never filled or enforced: no expiry. */
	r->expires = DB_RECORD_NEVER;
	return ncols > 8 ? convert_ttl(&row[8], r) : NULL;
}

static void free_batch(struct migration *m)
{
	for (size_t i = 0; i < m->nbatch; i++)
		for (size_t k = 0; k < 5; k++) {
			free(m->owned[i][k]);
			m->owned[i][k] = NULL;
		}
	m->nbatch = 0;
	m->batch_bytes = 0;
}

static char *own(char **slot, const char *s, size_t len)
{
	*slot = s ? xstrndup(s, len) : NULL;
	return *slot;
}

/* Keep a copy of r: the source row goes away with the next one. */
static void batch_add(struct migration *m, const struct db_record *r)
{
	struct db_record *b = &m->batch[m->nbatch];
	char **o = m->owned[m->nbatch];
	*b = *r;
	b->collection = own(&o[0], r->collection, r->collection_len);
	b->row.id = own(&o[1], r->row.id, r->row.id_len);
	b->row.parentid = own(&o[2], r->row.parentid, r->row.parentid_len);
	b->row.predecessorid = own(&o[3], r->row.predecessorid, r->row.predecessorid_len);
	b->row.payload = own(&o[4], r->row.payload, r->row.payload_len);
	m->nbatch++;
}

static void set_fatal(struct migration *m, enum db_status st, const char *what)
{
	if (m->progress.on)
		fputc('\n', stderr);
	m->fatal = db_fail(st, what);
}

static void flush_batch(struct migration *m)
{
	if (m->nbatch > 0 && !m->dry_run && m->fatal == EXIT_OK) {
		size_t was = db_use(m->place);
		enum db_status st = db_admin_insert_records(m->current->id, m->batch, m->nbatch);
		db_use(was);
		if (st != DB_OK)
			set_fatal(m, st, "inserting records");
	}
	free_batch(m);
}

static void report_user(struct migration *m, struct legacy_user *u)
{
	struct buf line;
	if (m->quiet && u->state != LEGACY_FAILED)
		return;
	buf_init(&line, 64 * 1024);
	if (u->state == LEGACY_DONE) {
		buf_printf(&line, "%s: %s with %" PRId64 " records", u->name,
			   m->dry_run ? "would be created" : "created", u->records);
		if (u->collections.n > 0) {
			buf_puts(&line, " (");
			counts_text(&u->collections, &line);
			buf_puts(&line, ")");
		}
	} else if (u->state == LEGACY_EXISTS) {
		buf_printf(&line, "%s: exists here already, skipped", u->name);
	} else {
		buf_printf(&line, "%s: NOT migrated: %s", u->name, u->why ? u->why : "?");
	}
	if (line.data == NULL)
		buf_puts(&line, "");
	/* Names, ids and messages may hold the source's bytes. */
	migrate_printable(line.data, line.len);
	if (m->progress.on)
		fputs("\r\033[K", stderr);
	if (u->state == LEGACY_FAILED)
		fprintf(stderr, "weave-admin: %s\n", line.data);
	else
		printf("%s\n", line.data);
	fflush(stdout);
	buf_free(&line);
}

/* The account's failure: its transaction is rolled back, nothing of it stays. */
void migrate_fail_user(struct migration *m, struct legacy_user *u, const char *why)
{
	/* Only the current account has a batch and a transaction; another
	 * (one whose file failed before its first row) keeps them intact. */
	if (m->current == u) {
		free_batch(m);
		if (!m->dry_run && u->state == LEGACY_ACTIVE && db_in_transaction())
			db_rollback();
	}
	free(u->why);
	u->why = xstrdup(why);
	u->state = LEGACY_FAILED;
	m->copied -= u->records;
	m->failed++;
	report_user(m, u);
	if (m->current == u)
		m->current = NULL;
}

/* The account row as the old server had it, on node. */
static enum db_status create_user(struct legacy_user *u, const char *node)
{
	enum db_status st = db_user_create(u->name, u->hash, u->email, node, &u->id);
	if (st == DB_OK && u->status != 1)
		st = db_user_set_status(u->id, 0);
	if (st == DB_OK && u->alert != NULL)
		st = db_user_set_alert(u->id, u->alert);
	return st;
}

/* Open the account's transaction and create it. */
/* The current account's records' transaction on its node (storage_place.h);
 * the account database stays current, flush_batch() switches. */
static enum db_status open_records(struct migration *m)
{
	enum db_status st = records_begin(m->place);
	db_use(DB_ACCOUNTS);
	return st;
}

static void start_user(struct migration *m, struct legacy_user *u)
{
	int exists = 0;
	char *node = NULL;
	m->place = DB_ACCOUNTS;
	enum db_status st = db_user_exists(u->name, &exists);
	if (st != DB_OK) {
		set_fatal(m, st, "looking up an account");
		return;
	}
	if (exists) {
		u->state = LEGACY_EXISTS;
		m->exists++;
		report_user(m, u);
		return;
	}
	u->state = LEGACY_ACTIVE;
	m->current = u;
	if (m->dry_run)
		return;
	st = db_begin();
	if (st == DB_OK)
		st = db_node_pick(&node);
	if (st == DB_NOT_FOUND) {
		db_rollback();
		if (m->progress.on)
			fputc('\n', stderr);
		m->fatal = fail(EXIT_FAILED, "every storage node is full: raise a capacity "
					     "or add a node, then run migrate again");
		return;
	}
	if (st == DB_OK)
		st = create_user(u, node);
	/* The records go to the database of the node the account is on, in a
	 * transaction there committed first, as the server's writes do
	 * (storage_place.h); the account's own is in the account database. */
	m->place = config_node_place(&admin_cfg, node);
	if (st == DB_OK)
		st = open_records(m);
	free(node);
	if (st == DB_CONFLICT) { /* created meanwhile by someone else */
		records_rollback();
		u->state = LEGACY_EXISTS;
		m->exists++;
		m->current = NULL;
		report_user(m, u);
		return;
	}
	if (st != DB_OK) {
		records_rollback();
		set_fatal(m, st, "creating an account");
	}
}

static void finish_user(struct migration *m, struct legacy_user *u)
{
	flush_batch(m);
	if (m->fatal != EXIT_OK)
		return;
	if (!m->dry_run) {
		enum db_status st = records_commit(m->place);
		if (st == DB_OK && u->max_modified > 0)
			st = db_user_raise_last_write(u->id, u->max_modified);
		if (st == DB_OK)
			st = db_commit();
		else
			records_rollback();
		if (st != DB_OK) {
			set_fatal(m, st, "committing an account");
			return;
		}
	}
	u->state = LEGACY_DONE;
	m->created++;
	m->current = NULL;
	report_user(m, u);
}

/* A record of a name that is not in users: nobody could read it. Each
 * such name is told once per run of its rows. */
static void note_orphan(struct migration *m, const struct src_value *name)
{
	m->orphans++;
	int len = (int)(name->len < sizeof m->last_orphan - 1 ? name->len
							       : sizeof m->last_orphan - 1);
	if (m->orphan_users > 0 && strncmp(m->last_orphan, name->s, (size_t)len) == 0 &&
	    m->last_orphan[len] == '\0')
		return;
	m->orphan_users++;
	snprintf(m->last_orphan, sizeof m->last_orphan, "%.*s", len, name->s);
	migrate_warn(m, "records of '%s', who is not in the users table, are not copied",
		     m->last_orphan);
}

/* The stream reached u's rows: the previous account is finished, u
 * started (or, its rows in a second run, its transaction opened again). */
static void enter_user(struct migration *m, struct legacy_user *u)
{
	if (m->current != NULL)
		finish_user(m, m->current);
	if (m->fatal != EXIT_OK)
		return;
	if (u->state == LEGACY_PENDING) {
		start_user(m, u);
	} else if (u->state == LEGACY_DONE) {
		/* Its rows came in two runs (a case-insensitive source order). */
		u->state = LEGACY_ACTIVE;
		m->current = u;
		m->created--;
		enum db_status st = m->dry_run ? DB_OK : db_begin();
		if (st == DB_OK && !m->dry_run)
			st = open_records(m);
		if (st != DB_OK)
			set_fatal(m, st, "starting a transaction");
	}
}

/* A converted record into the account's batch and counts. */
static void keep_record(struct migration *m, struct legacy_user *u, const struct db_record *r)
{
	char coll[COLLECTION_MAX + 1];
	u->records++;
	m->copied++;
	if (r->row.modified > u->max_modified)
		u->max_modified = r->row.modified;
	snprintf(coll, sizeof coll, "%.*s", (int)r->collection_len, r->collection);
	count_add(&u->collections, coll, 1);
	/* A batch is one large record or at most BATCH_BYTES of payloads:
	 * its INSERT must fit the target's max_allowed_packet (16 MB by
	 * default) and its copies in memory stay small. */
	if (m->nbatch > 0 && m->batch_bytes + r->row.payload_len > BATCH_BYTES)
		flush_batch(m);
	batch_add(m, r);
	m->batch_bytes += r->row.payload_len;
	if (m->nbatch == DB_INSERT_CHUNK)
		flush_batch(m);
}

int migrate_record(void *ctx, const struct src_value *row, size_t ncols)
{
	struct migration *m = ctx;
	struct db_record r;
	if (ncols < 8 || m->fatal != EXIT_OK)
		return 1;
	m->seen++;
	progress_update(&m->progress, m->seen);
	struct legacy_user *u = row[0].is_null ? NULL : migrate_find_user(m, row[0].s, row[0].len);
	if (u == NULL) {
		note_orphan(m, &row[0]);
		return 0;
	}
	if (u != m->current)
		enter_user(m, u);
	if (m->fatal != EXIT_OK)
		return 1;
	if (u->state != LEGACY_ACTIVE) {
		u->skipped++;
		return 0;
	}
	const char *why = convert_record(m, u, row, ncols, &r);
	if (why != NULL) {
		struct buf msg;
		buf_init(&msg, 1024);
		buf_printf(&msg, "record '%.64s' in '%.*s': %s", r.row.id ? r.row.id : "?",
			   r.collection ? (int)(r.collection_len < 32 ? r.collection_len : 32) : 1,
			   r.collection ? r.collection : "?", why);
		migrate_fail_user(m, u, msg.data);
		buf_free(&msg);
		return 0;
	}
	keep_record(m, u, &r);
	return m->fatal != EXIT_OK;
}

static int count_row(void *ctx, const struct src_value *row, size_t ncols)
{
	char text[32];
	if (ncols < 1 || !src_number_text(&row[0], text, sizeof text) ||
	    parse_int64(text, 0, INT64_MAX, (int64_t *)ctx) < 0)
		*(int64_t *)ctx = 0;
	return 0;
}

static void summary(struct migration *m)
{
	struct buf line;
	buf_init(&line, 1024 * 1024);
	for (size_t i = 0; i < m->nusers; i++) {
		struct legacy_user *u = &m->users[i];
		if (u->state == LEGACY_DONE)
			for (size_t k = 0; k < u->collections.n; k++)
				count_add(&m->totals, u->collections.items[k].name,
					  u->collections.items[k].n);
	}
	if (!m->quiet) {
		bool prefixed = m->dir == NULL && strcmp(m->src.users_name, "users") != 0;
		printf("%s %" PRId64 " accounts and %" PRId64 " records from %s (%s schema%s%s%s%s)\n",
		       m->dry_run ? "dry run: would migrate" : "migrated", m->created,
		       m->copied, m->src.name, m->format->name, prefixed ? ", tables " : "",
		       prefixed ? m->src.users_name : "", prefixed ? " and " : "",
		       prefixed ? m->src.wbo_name : "");
		if (m->totals.n > 0) {
			counts_text(&m->totals, &line);
			printf("records per collection: %s\n", line.data);
		}
		if (m->exists > 0)
			printf("skipped %" PRId64 " accounts that exist here already\n", m->exists);
	}
	if (m->failed > 0)
		fprintf(stderr, "weave-admin: %" PRId64 " accounts were not migrated "
				"(reasons above); fix the source and run migrate again\n",
			m->failed);
	if (m->orphans > 0)
		fprintf(stderr, "weave-admin: warning: %" PRId64 " records of %" PRId64
				" names missing from the users table were not copied\n",
			m->orphans, m->orphan_users);
	buf_free(&line);
}

static void free_migration(struct migration *m)
{
	free_batch(m);
	for (size_t i = 0; i < m->nusers; i++) {
		struct legacy_user *u = &m->users[i];
		free(u->key);
		if (u->hash != NULL)
			OPENSSL_cleanse(u->hash, strlen(u->hash));
		free(u->hash);
		free(u->email);
		free(u->alert);
		free(u->why);
		free(u->file);
		free(u->collections.items);
	}
	free(m->users);
	if (m->format != NULL && m->format->release != NULL)
		m->format->release();
	free(m->totals.items);
	free(m->dir);
	src_close(&m->src);
}

/* Open --from and read its users and layout; EXIT_OK or told. */
static int open_source(struct migration *m, const struct args *a, int64_t *total)
{
	struct layout l;
	const char *from = a->opt[OPT_FROM];
	int rc;
	if (strncmp(from, "sqlite:", 7) == 0) {
		const char *path = from + 7;
		if (strncmp(path, "//", 2) == 0)
			path += 2;
		if (path[0] == '\0')
			return usage_error("--from sqlite: needs a file or directory name");
		if (migrate_is_directory(path))
			return migrate_dir_open(m, path, a->opt[OPT_FORMAT]);
		rc = src_open_sqlite(&m->src, path);
	} else if (strncmp(from, "mysql://", 8) == 0) {
		rc = src_open_mysql(&m->src, from, a);
	} else {
		return usage_error("--from takes sqlite:PATH or mysql://USER@HOST/DB, not '%s'",
				   from);
	}
	if (rc == EXIT_OK)
		rc = src_read_layout(&m->src, &l, true);
	if (rc == EXIT_OK)
		rc = choose_format(a, &m->src, &l, &m->format);
	if (rc == EXIT_OK)
		rc = migrate_load_users(m, &l);
	if (rc == EXIT_OK && m->format->prepare != NULL)
		rc = m->format->prepare(&m->src, &l);
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s", m->src.wbo_table);
	if (rc == EXIT_OK && src_query(&m->src, sql, 1, count_row, total) < 0)
		rc = fail(EXIT_FAILED, "cannot count the records of %s: %s", m->src.name,
			  m->src.error);
	return rc;
}

/* Every record, in one stream grouped by user; EXIT_OK or told. */
static int stream_records(struct migration *m)
{
	char sql[256];
	if (m->dir != NULL)
		return migrate_dir_records(m);
	/* Grouped by the exact bytes migrate_find_user() compares: a column
	 * declared NOCASE in an SQLite file would interleave "Bob" and "bob"
	 * and split an account's records into two transactions. (In MySQL
	 * the users key is unique under the column's own collation.) */
	snprintf(sql, sizeof sql, "SELECT username, collection, id, parentid, predecessorid, "
				  "sortindex, modified, payload FROM %s ORDER BY username%s",
		 m->src.wbo_table, m->src.kind == SOURCE_SQLITE ? " COLLATE BINARY" : "");
	if (src_query(&m->src, sql, 8, migrate_record, m) < 0 &&
	    m->fatal == EXIT_OK) {
		if (m->current != NULL && !m->dry_run)
			db_rollback();
		return fail(EXIT_FAILED, "cannot read the records of %s: %s", m->src.name,
			    m->src.error);
	}
	return EXIT_OK;
}

/* Copy what open_source() found; the exit code. */
static int run(struct migration *m, int64_t total)
{
	/* Check the target before reading everything. */
	enum db_status st = db_connect();
	if (st != DB_OK)
		return db_fail(st, "connecting");
	for (size_t i = 0; i < m->nusers; i++)
		if (m->users[i].state == LEGACY_FAILED) {
			m->failed++;
			report_user(m, &m->users[i]);
		}
	progress_start(&m->progress, m->dry_run ? "migrate (dry run)" : "migrate", "records",
		       total);
	int rc = stream_records(m);
	if (rc != EXIT_OK) {
		progress_end(&m->progress);
		return rc;
	}
	if (m->fatal == EXIT_OK && m->current != NULL)
		finish_user(m, m->current);
	/* Accounts without any record. */
	for (size_t i = 0; i < m->nusers && m->fatal == EXIT_OK; i++) {
		struct legacy_user *u = &m->users[i];
		if (u->state != LEGACY_PENDING)
			continue;
		start_user(m, u);
		if (m->fatal == EXIT_OK && u->state == LEGACY_ACTIVE)
			finish_user(m, u);
	}
	progress_end(&m->progress);
	if (m->fatal != EXIT_OK) {
		if (db_in_transaction())
			db_rollback();
		fprintf(stderr, "weave-admin: stopped; accounts reported as created are "
				"complete, run migrate again to go on\n");
		return m->fatal;
	}
	summary(m);
	return m->failed > 0 ? EXIT_FAILED : EXIT_OK;
}

int cmd_migrate(const struct args *a)
{
	struct migration m;
	int64_t total = 0;

	if (a->opt[OPT_FROM] == NULL)
		return usage_error("--from SOURCE is required");
	if (has_opt(a, OPT_FORMAT) && find_format(a->opt[OPT_FORMAT]) == NULL)
		return usage_error("--format takes " FORMAT_NAMES ", not '%s'",
				   a->opt[OPT_FORMAT]);
	memset(&m, 0, sizeof m);
	m.dry_run = has_opt(a, OPT_DRY_RUN);
	m.quiet = has_opt(a, OPT_QUIET);
	int rc = open_source(&m, a, &total);
	if (rc == EXIT_OK)
		rc = run(&m, total);
	free_migration(&m);
	return rc;
}
