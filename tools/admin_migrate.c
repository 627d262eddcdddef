/*
 * admin_migrate.c - weave-admin migrate: accounts and records from a
 * Weave Minimal / FSyncMS database (SQLite or MySQL) or from the
 * original PHP server's MySQL schema (PROTOCOL.md B 4.1, 4.3, 4.4).
 *
 * The source is opened read-only and read with fixed query texts (no
 * value ever goes into SQL text): the users (and, PHP, the collection
 * names) into memory, then every record in one stream ordered by user.
 * Each account is written to our database in one transaction: created,
 * then its records, then its last write. An account that exists already
 * is skipped, so a run that stopped can be repeated. An account with a
 * record we cannot store is rolled back whole and reported (exit 1).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mysql.h>
#include <openssl/crypto.h>
#include <sqlite3.h>

#include "admin.h"
#include "auth.h"
#include "db_admin.h"
#include "db_user.h"
#include "util.h"

#define PAYLOAD_MAX 16777215
#define MODIFIED_MAX INT64_C(99999999999999)
#define HASH_MAX 255
#define ALERT_MAX 1024
#define REPORT_MAX 20 /* per-item warnings printed before "... and N more" */

enum source_kind { SOURCE_SQLITE, SOURCE_MYSQL };

enum legacy_format {
	FORMAT_AUTO,
	FORMAT_MINIMAL, /* Weave Minimal: SQLite users(username, md5) + wbo */
	FORMAT_FSYNCMS, /* FSyncMS: the same schema, SQLite or MySQL */
	FORMAT_PHP,     /* PHP server: users(id, ...), wbo(username = id), collections */
	FORMAT__MAX
};

static const char *const format_names[FORMAT__MAX] = {
	[FORMAT_AUTO] = "auto",
	[FORMAT_MINIMAL] = "minimal",
	[FORMAT_FSYNCMS] = "fsyncms",
	[FORMAT_PHP] = "php",
};

/* The PHP server's fixed collection ids (WEAVE_COLLECTION_KEYS). */
static const char *const php_collections[11] = {
	NULL, "clients", "crypto", "forms", "history", "keys",
	"meta", "bookmarks", "prefs", "tabs", "passwords",
};

/* ---- the source database ------------------------------------------------------ */

struct src_value {
	bool is_null;
	const char *s; /* bytes as stored, NUL-terminated copy not guaranteed */
	size_t len;
};

typedef int (*src_row_fn)(void *ctx, const struct src_value *row, size_t ncols);

#define SRC_COLUMNS 16

struct source {
	enum source_kind kind;
	sqlite3 *lite;
	MYSQL *my;
	char name[512]; /* for messages: never the password */
	char error[512];
};

/* Run one fixed query and call fn per row. 0, or -1 with s->error set. */
static int src_query(struct source *s, const char *sql, src_row_fn fn, void *ctx)
{
	struct src_value v[SRC_COLUMNS];
	if (s->kind == SOURCE_SQLITE) {
		sqlite3_stmt *stmt = NULL;
		if (sqlite3_prepare_v2(s->lite, sql, -1, &stmt, NULL) != SQLITE_OK) {
			snprintf(s->error, sizeof s->error, "%s", sqlite3_errmsg(s->lite));
			return -1;
		}
		int rc;
		while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			int n = sqlite3_column_count(stmt);
			if (n > SRC_COLUMNS)
				n = SRC_COLUMNS;
			for (int i = 0; i < n; i++) {
				v[i].is_null = sqlite3_column_type(stmt, i) == SQLITE_NULL;
				/* Text of any type: REAL as "%!.15g", blobs as bytes. */
				v[i].s = v[i].is_null ? NULL
						      : (const char *)sqlite3_column_text(stmt, i);
				v[i].len = v[i].is_null ? 0 : (size_t)sqlite3_column_bytes(stmt, i);
				if (v[i].s == NULL)
					v[i].s = "";
			}
			if (fn(ctx, v, (size_t)n) != 0) {
				rc = SQLITE_DONE;
				break;
			}
		}
		if (rc != SQLITE_DONE)
			snprintf(s->error, sizeof s->error, "%s", sqlite3_errmsg(s->lite));
		sqlite3_finalize(stmt);
		return rc == SQLITE_DONE ? 0 : -1;
	}
	if (mysql_real_query(s->my, sql, strlen(sql)) != 0) {
		snprintf(s->error, sizeof s->error, "%s", mysql_error(s->my));
		return -1;
	}
	/* Streamed row by row: a large wbo table never sits in memory. */
	MYSQL_RES *res = mysql_use_result(s->my);
	if (res == NULL) {
		snprintf(s->error, sizeof s->error, "%s",
			 mysql_errno(s->my) ? mysql_error(s->my) : "no result");
		return -1;
	}
	unsigned int n = mysql_num_fields(res);
	if (n > SRC_COLUMNS)
		n = SRC_COLUMNS;
	MYSQL_ROW row;
	bool stopped = false;
	while ((row = mysql_fetch_row(res)) != NULL) {
		if (stopped)
			continue; /* drain so the connection stays usable */
		unsigned long *lengths = mysql_fetch_lengths(res);
		for (unsigned int i = 0; i < n; i++) {
			v[i].is_null = row[i] == NULL;
			v[i].s = row[i] ? row[i] : "";
			v[i].len = row[i] ? lengths[i] : 0;
		}
		if (fn(ctx, v, n) != 0)
			stopped = true;
	}
	int rc = 0;
	if (mysql_errno(s->my) != 0) {
		snprintf(s->error, sizeof s->error, "%s", mysql_error(s->my));
		rc = -1;
	}
	mysql_free_result(res);
	return rc;
}

/* Decode %XX in place; -1 on a bad escape or a NUL. */
static int percent_decode(char *s)
{
	char *out = s;
	for (const char *p = s; *p != '\0'; p++) {
		if (*p != '%') {
			*out++ = *p;
			continue;
		}
		if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]))
			return -1;
		char hex[3] = { p[1], p[2], '\0' };
		int64_t c = 0;
		for (int i = 0; i < 2; i++)
			c = c * 16 + (isdigit((unsigned char)hex[i])
					      ? hex[i] - '0'
					      : (tolower((unsigned char)hex[i]) - 'a' + 10));
		if (c == 0)
			return -1;
		*out++ = (char)c;
		p += 2;
	}
	*out = '\0';
	return 0;
}

static int open_sqlite(struct source *s, const char *path)
{
	s->kind = SOURCE_SQLITE;
	snprintf(s->name, sizeof s->name, "sqlite:%s", path);
	/* Read-only: never creates the file, never writes to it. */
	if (sqlite3_open_v2(path, &s->lite, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return fail(EXIT_FAILED, "cannot open %s: %s", s->name,
			    s->lite ? sqlite3_errmsg(s->lite) : "out of memory");
	sqlite3_busy_timeout(s->lite, 10000);
	/* One read transaction: a consistent snapshot while the old server runs. */
	if (sqlite3_exec(s->lite, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return fail(EXIT_FAILED, "cannot read %s: %s", s->name,
			    sqlite3_errmsg(s->lite));
	return EXIT_OK;
}

/* mysql://USER[:PASS]@HOST[:PORT]/DB[?socket=PATH] */
static int open_mysql(struct source *s, const char *url, const struct args *a)
{
	char *spec = xstrdup(url + strlen("mysql://"));
	size_t spec_len = strlen(spec);
	char *user = spec, *pass = NULL, *host, *db, *socket = NULL, *port_text = NULL;
	int64_t port = 0;
	struct buf pw;
	int rc = EXIT_OK;

	s->kind = SOURCE_MYSQL;
	buf_init(&pw, 1024);
	char *at = strrchr(spec, '@');
	char *slash = at ? strchr(at, '/') : NULL;
	if (at == NULL || slash == NULL || slash[1] == '\0') {
		rc = usage_error("--from mysql:// needs USER@HOST/DATABASE");
		goto done;
	}
	*at = '\0';
	*slash = '\0';
	host = at + 1;
	db = slash + 1;
	char *query = strchr(db, '?');
	if (query != NULL) {
		*query++ = '\0';
		if (strncmp(query, "socket=", 7) != 0) {
			rc = usage_error("--from mysql://...?%s: only ?socket=PATH is known", query);
			goto done;
		}
		socket = query + 7;
	}
	char *colon = strchr(user, ':');
	if (colon != NULL) {
		*colon = '\0';
		pass = colon + 1;
	}
	if (host[0] == '[') { /* [IPv6]:port */
		char *end = strchr(host, ']');
		if (end == NULL) {
			rc = usage_error("--from: unterminated [address]");
			goto done;
		}
		*end = '\0';
		host++;
		if (end[1] == ':')
			port_text = end + 2;
	} else if ((colon = strchr(host, ':')) != NULL) {
		*colon = '\0';
		port_text = colon + 1;
	}
	if (port_text != NULL &&
	    (rc = parse_number_arg(port_text, 1, 65535, "the MySQL port", &port)) != EXIT_OK)
		goto done;
	if (percent_decode(user) < 0 || (pass && percent_decode(pass) < 0) ||
	    percent_decode(db) < 0 || (socket && percent_decode(socket) < 0) ||
	    user[0] == '\0') {
		rc = usage_error("--from: bad user, password, database or %%-escape in the URL");
		goto done;
	}
	if (pass == NULL && has_opt(a, OPT_PASSWORD_FILE)) {
		if ((rc = read_secret_file(a->opt[OPT_PASSWORD_FILE], &pw)) != EXIT_OK)
			goto done;
		pass = pw.data;
	}
	snprintf(s->name, sizeof s->name, "mysql://%s@%s%s%s/%s", user,
		 host[0] ? host : "localhost", port ? ":" : "", port ? port_text : "", db);

	s->my = mysql_init(NULL);
	if (s->my == NULL) {
		rc = fail(EXIT_FAILED, "out of memory");
		goto done;
	}
	unsigned int timeout = 10, io_timeout = 600;
	mysql_options(s->my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(s->my, MYSQL_OPT_READ_TIMEOUT, &io_timeout);
	/* binary: the bytes as the old server stored them, never converted. */
	mysql_options(s->my, MYSQL_SET_CHARSET_NAME, "binary");
	if (mysql_real_connect(s->my, host[0] ? host : NULL, user, pass, db,
			       (unsigned int)port, socket, 0) == NULL) {
		rc = fail(EXIT_FAILED, "cannot connect to %s: %s", s->name, mysql_error(s->my));
		goto done;
	}
	/* Read only, from one consistent snapshot. */
	if (mysql_query(s->my, "SET SESSION TRANSACTION READ ONLY") != 0 ||
	    mysql_query(s->my, "START TRANSACTION WITH CONSISTENT SNAPSHOT") != 0)
		rc = fail(EXIT_FAILED, "cannot start a read-only transaction on %s: %s",
			  s->name, mysql_error(s->my));
done:
	buf_free_secret(&pw);
	OPENSSL_cleanse(spec, spec_len); /* it may hold the password */
	free(spec);
	return rc;
}

static void close_source(struct source *s)
{
	if (s->lite != NULL) {
		sqlite3_exec(s->lite, "COMMIT", NULL, NULL, NULL);
		sqlite3_close(s->lite);
	}
	if (s->my != NULL)
		mysql_close(s->my);
	s->lite = NULL;
	s->my = NULL;
}

/* ---- what the source holds --------------------------------------------------------- */

struct name_list {
	char names[64][65];
	size_t n;
};

static int collect_name(void *ctx, const struct src_value *row, size_t ncols)
{
	struct name_list *l = ctx;
	(void)ncols;
	if (l->n < 64 && !row[0].is_null) {
		snprintf(l->names[l->n], sizeof l->names[0], "%.*s",
			 (int)(row[0].len < 64 ? row[0].len : 64), row[0].s);
		l->n++;
	}
	return 0;
}

static bool list_has(const struct name_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcasecmp(l->names[i], name) == 0)
			return true;
	return false;
}

struct layout {
	struct name_list tables, user_columns;
};

static int read_layout(struct source *s, struct layout *l)
{
	static const char *const tables_sql[] = {
		[SOURCE_SQLITE] = "SELECT name FROM sqlite_master WHERE type = 'table'",
		[SOURCE_MYSQL] = "SELECT table_name FROM information_schema.tables "
				 "WHERE table_schema = DATABASE()",
	};
	static const char *const columns_sql[] = {
		[SOURCE_SQLITE] = "SELECT name FROM pragma_table_info('users')",
		[SOURCE_MYSQL] = "SELECT column_name FROM information_schema.columns "
				 "WHERE table_schema = DATABASE() AND table_name = 'users'",
	};
	memset(l, 0, sizeof *l);
	if (src_query(s, tables_sql[s->kind], collect_name, &l->tables) < 0 ||
	    src_query(s, columns_sql[s->kind], collect_name, &l->user_columns) < 0)
		return fail(EXIT_FAILED, "cannot read the tables of %s: %s", s->name, s->error);
	if (!list_has(&l->tables, "users") || !list_has(&l->tables, "wbo"))
		return fail(EXIT_FAILED, "%s has no users and wbo tables: not a Weave "
					 "Minimal, FSyncMS or PHP server database", s->name);
	return EXIT_OK;
}

/* The format from --format, checked against the tables, or guessed. */
static int choose_format(const struct args *a, const struct source *s,
			 const struct layout *l, enum legacy_format *out)
{
	enum legacy_format f = FORMAT_AUTO;
	bool php_like = list_has(&l->user_columns, "id");
	if (has_opt(a, OPT_FORMAT)) {
		for (int i = FORMAT_MINIMAL; i < FORMAT__MAX; i++)
			if (strcmp(a->opt[OPT_FORMAT], format_names[i]) == 0)
				f = (enum legacy_format)i;
		if (f == FORMAT_AUTO)
			return usage_error("--format takes minimal, fsyncms or php, not '%s'",
					   a->opt[OPT_FORMAT]);
	}
	if (f == FORMAT_AUTO)
		f = php_like ? FORMAT_PHP
		    : s->kind == SOURCE_SQLITE ? FORMAT_MINIMAL
					       : FORMAT_FSYNCMS;
	if (f == FORMAT_PHP && !php_like)
		return fail(EXIT_FAILED, "%s: users has no id column, so it is not the PHP "
					 "server's schema (try --format %s)",
			    s->name, s->kind == SOURCE_SQLITE ? "minimal" : "fsyncms");
	if (f != FORMAT_PHP && php_like)
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

enum legacy_state {
	LEGACY_PENDING, /* not reached yet */
	LEGACY_ACTIVE,  /* its transaction is open (or, dry run, it would be) */
	LEGACY_DONE,    /* created and committed (dry run: would be) */
	LEGACY_EXISTS,  /* an account of that name exists here: skipped */
	LEGACY_FAILED,  /* not migrated, see why */
};

struct counter {
	char name[COLLECTION_MAX + 1];
	int64_t n;
};

struct counters {
	struct counter *items;
	size_t n, cap;
};

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

struct legacy_user {
	char *key; /* wbo.username as text: the name (Minimal) or the id (PHP) */
	size_t key_len;
	char name[USERNAME_MAX + 1]; /* ours */
	char *hash, *email, *alert;
	int status;
	enum legacy_state state;
	int64_t id; /* ours, once created */
	int64_t records, max_modified, skipped;
	struct counters collections;
	char *why;
};

static char *dup_value(const struct src_value *v)
{
	return v->is_null ? NULL : xstrndup(v->s, v->len);
}

struct migration {
	struct source src;
	enum legacy_format format;
	bool dry_run, quiet;
	struct legacy_user *users;
	size_t nusers, cap;
	struct php_collection *colls;
	size_t ncolls, colls_cap;
	struct legacy_user *current;
	struct db_record batch[DB_INSERT_CHUNK];
	char *owned[DB_INSERT_CHUNK][5];
	size_t nbatch;
	struct counters totals;
	int64_t seen, copied, orphans, orphan_users, warnings, failed, exists, created;
	char last_orphan[128];
	struct progress progress;
	int fatal; /* an exit code once the database failed */
};

static void warn(struct migration *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct migration *m, const char *fmt, ...)
{
	va_list ap;
	if (m->warnings++ >= REPORT_MAX * 5)
		return;
	if (m->progress.on)
		fputc('\n', stderr);
	fputs("weave-admin: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static bool hash_supported(const char *h)
{
	size_t len = strlen(h);
	if (strncmp(h, "$scrypt$", 8) == 0 || strncmp(h, "{SSHA}", 6) == 0 ||
	    strncmp(h, "{SSHA-256}", 10) == 0)
		return true;
	if (len != 32)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)h[i]))
			return false;
	return true;
}

/* Header-safe alert text: control characters become blanks. */
static char *clean_alert(struct migration *m, const char *name, char *alert)
{
	if (alert == NULL || alert[0] == '\0') {
		free(alert);
		return NULL;
	}
	size_t len = strlen(alert);
	if (len > ALERT_MAX || !validate_utf8(alert, len)) {
		warn(m, "%s: the alert is not UTF-8 text of at most %d bytes; dropped",
		     name, ALERT_MAX);
		free(alert);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)alert[i] < 0x20 || alert[i] == 0x7f)
			alert[i] = ' ';
	return alert;
}

static int load_user(void *ctx, const struct src_value *row, size_t ncols)
{
	struct migration *m = ctx;
	(void)ncols;
	if (row[0].is_null || row[1].is_null)
		return 0;
	if (m->nusers == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->users = xrealloc(m->users, m->cap * sizeof *m->users);
	}
	struct legacy_user *u = &m->users[m->nusers++];
	memset(u, 0, sizeof *u);
	u->key = xstrndup(row[0].s, row[0].len);
	u->key_len = row[0].len;
	char *legacy = xstrndup(row[1].s, row[1].len);
	u->hash = row[2].is_null ? xstrdup("") : dup_value(&row[2]);
	u->email = row[3].is_null || row[3].len == 0 ? NULL : dup_value(&row[3]);
	u->status = row[4].is_null || (row[4].len == 1 && row[4].s[0] == '1') ? 1 : 0;
	u->alert = clean_alert(m, legacy, dup_value(&row[5]));

	size_t len = strlen(legacy);
	if (len != row[1].len) {
		u->why = xstrdup("the user name contains a NUL byte");
	} else if (strchr(legacy, '@') != NULL && validate_email(legacy, len)) {
		/* An e-mail login: stored under its Sync 1.1 hashed name. */
		auth_email_to_username(legacy, len, u->name);
		if (u->email == NULL)
			u->email = xstrdup(legacy);
	} else if (validate_username(legacy, len)) {
		memcpy(u->name, legacy, len + 1);
		ascii_lower(u->name);
	} else {
		u->why = xstrdup("the user name is not 1-32 of A-Z a-z 0-9 . _ - "
				 "(nor an e-mail address)");
	}
	if (u->why != NULL)
		snprintf(u->name, sizeof u->name, "%.32s", legacy);
	if (u->why == NULL && u->email != NULL &&
	    (strlen(u->email) > EMAIL_MAX || !validate_email(u->email, strlen(u->email)))) {
		warn(m, "%s: '%s' is not a valid e-mail address; dropped", u->name, u->email);
		free(u->email);
		u->email = NULL;
	}
	if (u->why == NULL && strlen(u->hash) > HASH_MAX)
		u->why = xstrdup("the password hash is longer than 255 bytes");
	else if (u->why == NULL && !hash_supported(u->hash))
		warn(m, "%s: the password hash is not MD5, {SSHA}, {SSHA-256} or scrypt "
			"(bcrypt?): the account is copied but cannot log in until "
			"'weave-admin user passwd %s'", u->name, u->name);
	if (u->why != NULL)
		u->state = LEGACY_FAILED;
	free(legacy);
	return 0;
}

static int key_order(const void *a, const void *b)
{
	const struct legacy_user *x = a, *y = b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);
	if (c != 0)
		return c;
	return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

static struct legacy_user *find_legacy(struct migration *m, const char *key, size_t len)
{
	struct legacy_user probe;
	probe.key = (char *)key;
	probe.key_len = len;
	return bsearch(&probe, m->users, m->nusers, sizeof *m->users, key_order);
}

/* Two legacy accounts that map to one name ("Alice", "alice"): the first
 * in key order is migrated, the others are reported. */
static void mark_collisions(struct migration *m)
{
	for (size_t i = 0; i < m->nusers; i++) {
		struct legacy_user *u = &m->users[i];
		if (u->state == LEGACY_FAILED)
			continue;
		for (size_t j = 0; j < i; j++) {
			struct legacy_user *v = &m->users[j];
			if (v->state != LEGACY_FAILED && strcmp(u->name, v->name) == 0) {
				struct buf why;
				buf_init(&why, 512);
				buf_printf(&why, "its name maps to %s like legacy user '%.64s'",
					   u->name, v->key);
				u->why = buf_detach(&why, NULL);
				u->state = LEGACY_FAILED;
				break;
			}
		}
	}
}

static int load_users(struct migration *m, const struct layout *l)
{
	struct buf sql;
	buf_init(&sql, 1024);
	/* Fixed fragments, chosen by which columns exist. */
	buf_puts(&sql, m->format == FORMAT_PHP ? "SELECT id, username, " : "SELECT username, username, ");
	buf_puts(&sql, list_has(&l->user_columns, "password_hash") ? "password_hash, " : "md5, ");
	buf_puts(&sql, list_has(&l->user_columns, "email") ? "email, " : "NULL, ");
	buf_puts(&sql, list_has(&l->user_columns, "status") ? "status, " : "1, ");
	buf_puts(&sql, list_has(&l->user_columns, "alert") ? "alert " : "NULL ");
	buf_puts(&sql, "FROM users");
	int rc = src_query(&m->src, sql.data, load_user, m);
	buf_free(&sql);
	if (rc < 0)
		return fail(EXIT_FAILED, "cannot read the users of %s: %s", m->src.name,
			    m->src.error);
	qsort(m->users, m->nusers, sizeof *m->users, key_order);
	for (size_t i = 1; i < m->nusers; i++)
		if (key_order(&m->users[i - 1], &m->users[i]) == 0 &&
		    m->users[i].state != LEGACY_FAILED) {
			m->users[i].why = xstrdup("the users table has this user twice");
			m->users[i].state = LEGACY_FAILED;
		}
	mark_collisions(m);
	return EXIT_OK;
}

/* ---- PHP collection names -------------------------------------------------------------- */

struct php_collection {
	char *userid;
	int64_t id;
	char *name;
};

static int load_collection(void *ctx, const struct src_value *row, size_t ncols)
{
	struct migration *m = ctx;
	int64_t id;
	char num[32];
	(void)ncols;
	if (row[0].is_null || row[1].is_null || row[2].is_null || row[1].len >= sizeof num)
		return 0;
	memcpy(num, row[1].s, row[1].len);
	num[row[1].len] = '\0';
	if (parse_int64(num, 0, INT32_MAX, &id) < 0)
		return 0;
	if (m->ncolls == m->colls_cap) {
		m->colls_cap = m->colls_cap ? m->colls_cap * 2 : 64;
		m->colls = xrealloc(m->colls, m->colls_cap * sizeof *m->colls);
	}
	struct php_collection *c = &m->colls[m->ncolls++];
	c->userid = xstrndup(row[0].s, row[0].len);
	c->id = id;
	c->name = xstrndup(row[2].s, row[2].len);
	return 0;
}

/* The name of PHP collection id for the user, or NULL. */
static const char *php_collection_name(struct migration *m, const char *userid, int64_t id)
{
	if (id >= 1 && id <= 10)
		return php_collections[id];
	for (size_t i = 0; i < m->ncolls; i++)
		if (m->colls[i].id == id && strcmp(m->colls[i].userid, userid) == 0)
			return m->colls[i].name;
	return NULL;
}

/* ---- records ----------------------------------------------------------------------------- */

/* A number column as NUL-terminated text; false when too long. */
static bool number_text(const struct src_value *v, char *out, size_t cap)
{
	if (v->is_null || v->len == 0 || v->len >= cap)
		return false;
	memcpy(out, v->s, v->len);
	out[v->len] = '\0';
	return true;
}

/* Any decimal or exponent form through a double, rounded: the fallback. */
static bool number_by_double(const char *text, double scale, int64_t max, int64_t *out)
{
	char *end;
	errno = 0;
	double d = strtod(text, &end);
	if (end == text || *end != '\0' || errno != 0 || !isfinite(d))
		return false;
	d *= scale;
	if (d < -(double)max || d > (double)max)
		return false;
	*out = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
	return true;
}

/* modified: seconds as REAL (Minimal, FSyncMS) or centiseconds (PHP). */
static const char *convert_modified(const struct migration *m, const struct src_value *v,
				    int64_t *out)
{
	char text[64];
	if (v->is_null) {
		*out = 0;
		return NULL;
	}
	if (!number_text(v, text, sizeof text))
		return "modified is not a number";
	if (m->format == FORMAT_PHP) {
		if (parse_int64(text, 0, MODIFIED_MAX, out) == 0 ||
		    (number_by_double(text, 1.0, MODIFIED_MAX, out) && *out >= 0))
			return NULL;
		return "modified is not a centisecond timestamp";
	}
	/* Decimal text ("1265402837.12") is rounded exactly, without a double. */
	if (parse_timestamp(text, out) == 0 && *out <= MODIFIED_MAX)
		return NULL;
	if (number_by_double(text, 100.0, MODIFIED_MAX, out) && *out >= 0)
		return NULL;
	return "modified is not a timestamp in seconds";
}

static const char *convert_sortindex(const struct src_value *v, struct db_record *r)
{
	char text[64];
	int64_t n;
	r->has_sortindex = false;
	if (v->is_null)
		return NULL;
	if (!number_text(v, text, sizeof text))
		return "sortindex is not a number";
	if (parse_int64(text, INT32_MIN, INT32_MAX, &n) < 0 &&
	    !number_by_double(text, 1.0, INT32_MAX, &n))
		return "sortindex is not a 32-bit integer";
	r->has_sortindex = true;
	r->sortindex = n;
	return NULL;
}

static const char *id_field(const struct src_value *v, bool required, const char *what)
{
	static char why[64];
	if (v->is_null && !required)
		return NULL;
	if (v->is_null || (required && v->len == 0) || v->len > WBO_ID_MAX ||
	    memchr(v->s, '\0', v->len) != NULL) {
		snprintf(why, sizeof why, "%s is not 1-64 bytes", what);
		return why;
	}
	return NULL;
}

/* Row: username, collection, id, parentid, predecessorid, sortindex, modified, payload. */
static const char *convert_record(struct migration *m, const struct legacy_user *u,
				  const struct src_value *row, struct db_record *r)
{
	const char *why;
	memset(r, 0, sizeof *r);
	if (m->format == FORMAT_PHP) {
		char num[32];
		int64_t cid;
		const char *name;
		if (!number_text(&row[1], num, sizeof num) ||
		    parse_int64(num, 0, INT32_MAX, &cid) < 0)
			return "the collection id is not a number";
		name = php_collection_name(m, u->key, cid);
		if (name == NULL)
			return "a collection id has no name in the collections table";
		r->collection = name;
		r->collection_len = strlen(name);
	} else {
		if (row[1].is_null)
			return "the collection is NULL";
		r->collection = row[1].s;
		r->collection_len = row[1].len;
	}
	if (!validate_collection(r->collection, r->collection_len))
		return "a collection name is not 1-32 of A-Z a-z 0-9 . _ -";
	if ((why = id_field(&row[2], true, "the id")) != NULL ||
	    (why = id_field(&row[3], false, "parentid")) != NULL ||
	    (why = id_field(&row[4], false, "predecessorid")) != NULL)
		return why;
	r->id = row[2].s;
	r->id_len = row[2].len;
	if (!row[3].is_null) {
		r->parentid = row[3].s;
		r->parentid_len = row[3].len;
	}
	if (!row[4].is_null) {
		r->predecessorid = row[4].s;
		r->predecessorid_len = row[4].len;
	}
	if ((why = convert_sortindex(&row[5], r)) != NULL ||
	    (why = convert_modified(m, &row[6], &r->modified)) != NULL)
		return why;
	if (!row[7].is_null) {
		if (row[7].len > PAYLOAD_MAX)
			return "a payload is larger than 16 MB";
		r->payload = row[7].s;
		r->payload_len = row[7].len;
	}
	/* Minimal's ttl column was never filled or enforced: no expiry. */
	r->expires = DB_RECORD_NEVER;
	return NULL;
}

static void free_batch(struct migration *m)
{
	for (size_t i = 0; i < m->nbatch; i++)
		for (size_t k = 0; k < 5; k++) {
			free(m->owned[i][k]);
			m->owned[i][k] = NULL;
		}
	m->nbatch = 0;
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
	b->id = own(&o[1], r->id, r->id_len);
	b->parentid = own(&o[2], r->parentid, r->parentid_len);
	b->predecessorid = own(&o[3], r->predecessorid, r->predecessorid_len);
	b->payload = own(&o[4], r->payload, r->payload_len);
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
		enum db_status st = db_admin_insert_records(m->current->id, m->batch, m->nbatch);
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
static void fail_user(struct migration *m, struct legacy_user *u, const char *why)
{
	free_batch(m);
	if (!m->dry_run && u->state == LEGACY_ACTIVE && db_in_transaction())
		db_rollback();
	free(u->why);
	u->why = xstrdup(why);
	u->state = LEGACY_FAILED;
	m->copied -= u->records;
	m->failed++;
	report_user(m, u);
	if (m->current == u)
		m->current = NULL;
}

/* Open the account's transaction and create it. */
static void start_user(struct migration *m, struct legacy_user *u)
{
	int exists = 0;
	char *node = NULL;
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
		st = db_user_create(u->name, u->hash, u->email, node, &u->id);
	free(node);
	if (st == DB_OK && u->status != 1)
		st = db_user_set_status(u->id, 0);
	if (st == DB_OK && u->alert != NULL)
		st = db_user_set_alert(u->id, u->alert);
	if (st == DB_CONFLICT) { /* created meanwhile by someone else */
		db_rollback();
		u->state = LEGACY_EXISTS;
		m->exists++;
		m->current = NULL;
		report_user(m, u);
		return;
	}
	if (st != DB_OK) {
		db_rollback();
		set_fatal(m, st, "creating an account");
	}
}

static void finish_user(struct migration *m, struct legacy_user *u)
{
	flush_batch(m);
	if (m->fatal != EXIT_OK)
		return;
	if (!m->dry_run) {
		enum db_status st = DB_OK;
		if (u->max_modified > 0)
			st = db_user_raise_last_write(u->id, u->max_modified);
		if (st == DB_OK)
			st = db_commit();
		else
			db_rollback();
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

static int migrate_record(void *ctx, const struct src_value *row, size_t ncols)
{
	struct migration *m = ctx;
	struct db_record r;
	if (ncols < 8 || m->fatal != EXIT_OK)
		return 1;
	m->seen++;
	progress_update(&m->progress, m->seen);
	struct legacy_user *u = row[0].is_null ? NULL : find_legacy(m, row[0].s, row[0].len);
	if (u == NULL) {
		/* Records of a name that is not in users: nobody could read them. */
		m->orphans++;
		int len = (int)(row[0].len < sizeof m->last_orphan - 1 ? row[0].len
								       : sizeof m->last_orphan - 1);
		if (m->orphan_users == 0 || strncmp(m->last_orphan, row[0].s, (size_t)len) != 0 ||
		    m->last_orphan[len] != '\0') {
			m->orphan_users++;
			snprintf(m->last_orphan, sizeof m->last_orphan, "%.*s", len, row[0].s);
			warn(m, "records of '%s', who is not in the users table, are not copied",
			     m->last_orphan);
		}
		return 0;
	}
	if (u != m->current) {
		if (m->current != NULL)
			finish_user(m, m->current);
		if (m->fatal != EXIT_OK)
			return 1;
		if (u->state == LEGACY_PENDING) {
			start_user(m, u);
		} else if (u->state == LEGACY_DONE) {
			/* Its rows came in two runs (a case-insensitive source order). */
			u->state = LEGACY_ACTIVE;
			m->current = u;
			m->created--;
			enum db_status st = m->dry_run ? DB_OK : db_begin();
			if (st != DB_OK)
				set_fatal(m, st, "starting a transaction");
		}
		if (m->fatal != EXIT_OK)
			return 1;
	}
	if (u->state != LEGACY_ACTIVE) {
		u->skipped++;
		return 0;
	}
	const char *why = convert_record(m, u, row, &r);
	if (why != NULL) {
		struct buf msg;
		buf_init(&msg, 1024);
		buf_printf(&msg, "record '%.64s' in '%.32s': %s", r.id ? r.id : "?",
			   r.collection ? r.collection : "?", why);
		fail_user(m, u, msg.data);
		buf_free(&msg);
		return 0;
	}
	u->records++;
	m->copied++;
	if (r.modified > u->max_modified)
		u->max_modified = r.modified;
	char coll[COLLECTION_MAX + 1];
	snprintf(coll, sizeof coll, "%.*s", (int)r.collection_len, r.collection);
	count_add(&u->collections, coll, 1);
	batch_add(m, &r);
	if (m->nbatch == DB_INSERT_CHUNK)
		flush_batch(m);
	return m->fatal != EXIT_OK;
}

static int count_row(void *ctx, const struct src_value *row, size_t ncols)
{
	char text[32];
	(void)ncols;
	if (!number_text(&row[0], text, sizeof text) ||
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
		printf("%s %" PRId64 " accounts and %" PRId64 " records from %s (%s schema)\n",
		       m->dry_run ? "dry run: would migrate" : "migrated", m->created,
		       m->copied, m->src.name, format_names[m->format]);
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
		free(u->collections.items);
	}
	free(m->users);
	for (size_t i = 0; i < m->ncolls; i++) {
		free(m->colls[i].userid);
		free(m->colls[i].name);
	}
	free(m->colls);
	free(m->totals.items);
	close_source(&m->src);
}

int cmd_migrate(const struct args *a)
{
	struct migration m;
	struct layout l;
	const char *from = a->opt[OPT_FROM];
	int64_t total = 0;
	int rc;

	if (from == NULL)
		return usage_error("--from SOURCE is required");
	if (has_opt(a, OPT_FORMAT) && strcmp(a->opt[OPT_FORMAT], "minimal") != 0 &&
	    strcmp(a->opt[OPT_FORMAT], "fsyncms") != 0 && strcmp(a->opt[OPT_FORMAT], "php") != 0)
		return usage_error("--format takes minimal, fsyncms or php, not '%s'",
				   a->opt[OPT_FORMAT]);
	memset(&m, 0, sizeof m);
	m.dry_run = has_opt(a, OPT_DRY_RUN);
	m.quiet = has_opt(a, OPT_QUIET);
	if (strncmp(from, "sqlite:", 7) == 0) {
		const char *path = from + 7;
		if (strncmp(path, "//", 2) == 0)
			path += 2;
		if (path[0] == '\0')
			return usage_error("--from sqlite: needs a file name");
		rc = open_sqlite(&m.src, path);
	} else if (strncmp(from, "mysql://", 8) == 0) {
		rc = open_mysql(&m.src, from, a);
	} else {
		return usage_error("--from takes sqlite:PATH or mysql://USER@HOST/DB, not '%s'",
				   from);
	}
	if (rc == EXIT_OK)
		rc = read_layout(&m.src, &l);
	if (rc == EXIT_OK)
		rc = choose_format(a, &m.src, &l, &m.format);
	if (rc == EXIT_OK)
		rc = load_users(&m, &l);
	if (rc == EXIT_OK && m.format == FORMAT_PHP && list_has(&l.tables, "collections") &&
	    src_query(&m.src, "SELECT userid, collectionid, name FROM collections",
		      load_collection, &m) < 0)
		rc = fail(EXIT_FAILED, "cannot read the collections of %s: %s", m.src.name,
			  m.src.error);
	if (rc == EXIT_OK && src_query(&m.src, "SELECT COUNT(*) FROM wbo", count_row, &total) < 0)
		rc = fail(EXIT_FAILED, "cannot count the records of %s: %s", m.src.name,
			  m.src.error);
	if (rc != EXIT_OK) {
		free_migration(&m);
		return rc;
	}
	/* Check the target before reading everything. */
	enum db_status st = db_connect();
	if (st != DB_OK) {
		free_migration(&m);
		return db_fail(st, "connecting");
	}
	for (size_t i = 0; i < m.nusers; i++)
		if (m.users[i].state == LEGACY_FAILED) {
			m.failed++;
			report_user(&m, &m.users[i]);
		}

	progress_start(&m.progress, m.dry_run ? "migrate (dry run)" : "migrate", "records",
		       total);
	if (src_query(&m.src,
		      "SELECT username, collection, id, parentid, predecessorid, sortindex, "
		      "modified, payload FROM wbo ORDER BY username",
		      migrate_record, &m) < 0 &&
	    m.fatal == EXIT_OK) {
		if (m.current != NULL && !m.dry_run)
			db_rollback();
		progress_end(&m.progress);
		rc = fail(EXIT_FAILED, "cannot read the records of %s: %s", m.src.name,
			  m.src.error);
		free_migration(&m);
		return rc;
	}
	if (m.fatal == EXIT_OK && m.current != NULL)
		finish_user(&m, m.current);
	/* Accounts without any record. */
	for (size_t i = 0; i < m.nusers && m.fatal == EXIT_OK; i++) {
		struct legacy_user *u = &m.users[i];
		if (u->state != LEGACY_PENDING)
			continue;
		start_user(&m, u);
		if (m.fatal == EXIT_OK && u->state == LEGACY_ACTIVE)
			finish_user(&m, u);
	}
	progress_end(&m.progress);
	if (m.fatal != EXIT_OK) {
		if (db_in_transaction())
			db_rollback();
		fprintf(stderr, "weave-admin: stopped; accounts reported as created are "
				"complete, run migrate again to go on\n");
		rc = m.fatal;
	} else {
		summary(&m);
		rc = m.failed > 0 ? EXIT_FAILED : EXIT_OK;
	}
	free_migration(&m);
	return rc;
}
