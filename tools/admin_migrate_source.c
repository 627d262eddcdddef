/* admin_migrate_source.c - migrate: read the old server's SQLite or MySQL database. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "migrate.h"
#include "util.h"

#define SRC_COLUMNS 16
/* The largest value a source may hand us: a 16 MB payload and slack.
 * SQLite refuses to build anything longer (a generated column or view
 * of zeroblob(2000000000) fails with "string or blob too big" instead
 * of allocating it); MySQL rows are bounded by max_allowed_packet. */
#define SRC_VALUE_MAX (20 * 1024 * 1024)
#define SRC_SQLITE_HEAP_MAX (INT64_C(256) * 1024 * 1024)

/* The row's values as text; -1 when SQLite could not convert one (out of
 * its bounded heap): a value must never be read past its bytes. */
static int sqlite_values(sqlite3_stmt *stmt, struct src_value *v, size_t want)
{
	for (size_t i = 0; i < want; i++) {
		int c = (int)i;
		v[i].is_null = sqlite3_column_type(stmt, c) == SQLITE_NULL;
		/* Text of any type: REAL as "%!.15g", blobs as bytes. */
		v[i].s = v[i].is_null ? NULL : (const char *)sqlite3_column_text(stmt, c);
		v[i].len = v[i].is_null ? 0 : (size_t)sqlite3_column_bytes(stmt, c);
		if (v[i].s == NULL && !v[i].is_null &&
		    (v[i].len != 0 || sqlite3_errcode(sqlite3_db_handle(stmt)) == SQLITE_NOMEM))
			return -1;
		if (v[i].s == NULL)
			v[i].s = "";
	}
	return 0;
}

static int sqlite_rows(struct source *s, const char *sql, size_t want, src_row_fn fn,
		       void *ctx)
{
	struct src_value v[SRC_COLUMNS];
	sqlite3_stmt *stmt = NULL;
	memset(v, 0, sizeof v);
	if (sqlite3_prepare_v2(s->lite, sql, -1, &stmt, NULL) != SQLITE_OK) {
		snprintf(s->error, sizeof s->error, "%s", sqlite3_errmsg(s->lite));
		return -1;
	}
	if ((size_t)sqlite3_column_count(stmt) != want) {
		snprintf(s->error, sizeof s->error, "a query gave %d columns, not %zu",
			 sqlite3_column_count(stmt), want);
		sqlite3_finalize(stmt);
		return -1;
	}
	int rc;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		if (sqlite_values(stmt, v, want) < 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		if (fn(ctx, v, want) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	if (rc == SQLITE_NOMEM)
		snprintf(s->error, sizeof s->error, "a value could not be read within SQLite's "
						    "bounded memory");
	else if (rc != SQLITE_DONE)
		snprintf(s->error, sizeof s->error, "%s", sqlite3_errmsg(s->lite));
	sqlite3_finalize(stmt);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int mysql_rows(struct source *s, const char *sql, size_t want, src_row_fn fn,
		      void *ctx)
{
	struct src_value v[SRC_COLUMNS];
	memset(v, 0, sizeof v);
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
	bool stopped = mysql_num_fields(res) != want;
	int rc = stopped ? -1 : 0;
	if (stopped)
		snprintf(s->error, sizeof s->error, "a query gave %u columns, not %zu",
			 mysql_num_fields(res), want);
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)) != NULL) {
		if (stopped)
			continue; /* drain so the connection stays usable */
		unsigned long *lengths = mysql_fetch_lengths(res);
		for (size_t i = 0; i < want; i++) {
			v[i].is_null = row[i] == NULL;
			v[i].s = row[i] ? row[i] : "";
			v[i].len = row[i] ? lengths[i] : 0;
		}
		if (fn(ctx, v, want) != 0)
			stopped = true;
	}
	if (mysql_errno(s->my) != 0) {
		snprintf(s->error, sizeof s->error, "%s", mysql_error(s->my));
		rc = -1;
	}
	mysql_free_result(res);
	return rc;
}

int src_query(struct source *s, const char *sql, size_t ncols, src_row_fn fn, void *ctx)
{
	if (ncols == 0 || ncols > SRC_COLUMNS) {
		snprintf(s->error, sizeof s->error, "a query of %zu columns", ncols);
		return -1;
	}
	if (s->kind == SOURCE_SQLITE)
		return sqlite_rows(s, sql, ncols, fn, ctx);
	return mysql_rows(s, sql, ncols, fn, ctx);
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

/* A file from elsewhere is data, not code: no triggers, views or
 * non-innocuous functions run from its schema, no value grows past
 * SRC_VALUE_MAX, and SQLite's whole heap is bounded. */
static int sqlite_harden(sqlite3 *db)
{
	int off = 0;
	sqlite3_hard_heap_limit64(SRC_SQLITE_HEAP_MAX);
	sqlite3_limit(db, SQLITE_LIMIT_LENGTH, SRC_VALUE_MAX);
	sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 64 * 1024);
	sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
	if (sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &off) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &off) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, &off) != SQLITE_OK ||
	    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &off) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA trusted_schema = OFF", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	return 0;
}

int src_open_sqlite(struct source *s, const char *path)
{
	s->kind = SOURCE_SQLITE;
	snprintf(s->name, sizeof s->name, "sqlite:%s", path);
	/* Read-only: never creates the file, never writes to it. */
	if (sqlite3_open_v2(path, &s->lite, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return fail(EXIT_FAILED, "cannot open %s: %s", s->name,
			    s->lite ? sqlite3_errmsg(s->lite) : "out of memory");
	if (sqlite_harden(s->lite) < 0)
		return fail(EXIT_FAILED, "cannot restrict SQLite for %s: %s", s->name,
			    sqlite3_errmsg(s->lite));
	sqlite3_busy_timeout(s->lite, 10000);
	/* One read transaction: a consistent snapshot while the old server runs. */
	if (sqlite3_exec(s->lite, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return fail(EXIT_FAILED, "cannot read %s: %s", s->name,
			    sqlite3_errmsg(s->lite));
	return EXIT_OK;
}

enum src_tls { TLS_DEFAULT, TLS_OFF, TLS_ON, TLS_VERIFY };

struct mysql_url {
	char *user, *pass, *host, *db, *socket, *port_text, *ca;
	int64_t port;
	enum src_tls tls;
};

/* ?socket=PATH&tls=off|on|verify&ca=FILE, in place. */
static int parse_url_query(char *query, struct mysql_url *u)
{
	for (char *item = query; item != NULL;) {
		char *next = strchr(item, '&');
		if (next != NULL)
			*next++ = '\0';
		if (strncmp(item, "socket=", 7) == 0) {
			u->socket = item + 7;
		} else if (strncmp(item, "ca=", 3) == 0) {
			u->ca = item + 3;
		} else if (strcmp(item, "tls=off") == 0) {
			u->tls = TLS_OFF;
		} else if (strcmp(item, "tls=on") == 0) {
			u->tls = TLS_ON;
		} else if (strcmp(item, "tls=verify") == 0) {
			u->tls = TLS_VERIFY;
		} else {
			return usage_error("--from mysql://...?%s: known are socket=PATH, "
					   "tls=off|on|verify and ca=FILE", item);
		}
		item = next;
	}
	if ((u->socket && percent_decode(u->socket) < 0) || (u->ca && percent_decode(u->ca) < 0))
		return usage_error("--from: bad %%-escape in the URL");
	return EXIT_OK;
}

/* HOST[:PORT] or [IPv6][:PORT], in place. */
static int parse_url_host(char *host, struct mysql_url *u)
{
	char *colon;
	u->host = host;
	if (host[0] == '[') {
		char *end = strchr(host, ']');
		if (end == NULL)
			return usage_error("--from: unterminated [address]");
		*end = '\0';
		u->host = host + 1;
		if (end[1] == ':')
			u->port_text = end + 2;
	} else if ((colon = strchr(host, ':')) != NULL) {
		*colon = '\0';
		u->port_text = colon + 1;
	}
	if (u->port_text != NULL)
		return parse_number_arg(u->port_text, 1, 65535, "the MySQL port", &u->port);
	return EXIT_OK;
}

/* mysql://USER@HOST[:PORT]/DB[?QUERY], split in place in spec. */
static int parse_mysql_url(char *spec, struct mysql_url *u)
{
	int rc;
	memset(u, 0, sizeof *u);
	char *at = strrchr(spec, '@');
	char *slash = at ? strchr(at, '/') : NULL;
	if (at == NULL || slash == NULL || slash[1] == '\0')
		return usage_error("--from mysql:// needs USER@HOST/DATABASE");
	*at = '\0';
	*slash = '\0';
	u->user = spec;
	u->db = slash + 1;
	char *query = strchr(u->db, '?');
	if (query != NULL) {
		*query++ = '\0';
		if ((rc = parse_url_query(query, u)) != EXIT_OK)
			return rc;
	}
	char *colon = strchr(u->user, ':');
	if (colon != NULL) {
		*colon = '\0';
		u->pass = colon + 1;
	}
	if ((rc = parse_url_host(at + 1, u)) != EXIT_OK)
		return rc;
	if (percent_decode(u->user) < 0 || percent_decode(u->db) < 0 || u->user[0] == '\0')
		return usage_error("--from: bad user, database or %%-escape in the URL");
	return EXIT_OK;
}

/* The source's password: --password-file, else $WEAVE_MIGRATE_PASSWORD,
 * never the command line (any user of the machine can read it in ps). */
static int source_password(const struct mysql_url *u, const struct args *a, struct buf *pw,
			   const char **out)
{
	*out = NULL;
	if (u->pass != NULL)
		return usage_error("--from: a password in the URL is visible to every user of "
				   "this machine (ps, /proc); give it with --password-file FILE "
				   "or in WEAVE_MIGRATE_PASSWORD");
	if (has_opt(a, OPT_PASSWORD_FILE)) {
		int rc = read_secret_file(a->opt[OPT_PASSWORD_FILE], pw);
		if (rc == EXIT_OK)
			*out = pw->data;
		return rc;
	}
	const char *env = getenv("WEAVE_MIGRATE_PASSWORD");
	if (env != NULL && env[0] != '\0') {
		buf_puts(pw, env);
		*out = pw->data;
	}
	return EXIT_OK;
}

static bool host_is_local(const struct mysql_url *u)
{
	return u->socket != NULL || u->host[0] == '\0' || strcmp(u->host, "localhost") == 0 ||
	       strcmp(u->host, "127.0.0.1") == 0 || strcmp(u->host, "::1") == 0;
}

/* TLS to the source: required and verified for another machine unless
 * ?tls= says otherwise (the records are encrypted by the clients, but
 * the password hashes and e-mail addresses are not). */
static enum src_tls tls_mode(const struct mysql_url *u)
{
	if (u->tls == TLS_DEFAULT)
		return host_is_local(u) ? TLS_OFF : TLS_VERIFY;
	return u->tls;
}

static bool tls_wanted(const struct mysql_url *u)
{
	return tls_mode(u) != TLS_OFF;
}

/* 0, or -1 when the library refused an option: then what was asked for
 * (TLS, the certificate check) would silently not happen. tls=on sets
 * the check off itself: Connector/C 3.4 and later turn it on by default. */
static int set_tls(MYSQL *my, const struct mysql_url *u)
{
	enum src_tls tls = tls_mode(u);
	my_bool yes = 1, verify = tls == TLS_VERIFY;
	if (tls == TLS_OFF)
		return 0;
	if (mysql_options(my, MYSQL_OPT_SSL_ENFORCE, &yes) != 0 ||
	    mysql_options(my, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify) != 0)
		return -1;
	if (tls != TLS_VERIFY)
		return 0;
	if (u->ca != NULL)
		return mysql_options(my, MYSQL_OPT_SSL_CA, u->ca) != 0 ? -1 : 0;
	return mysql_options(my, MYSQL_OPT_SSL_CAPATH, "/etc/ssl/certs") != 0 ? -1 : 0;
}

static int mysql_connect_url(struct source *s, const struct mysql_url *u, const char *pass)
{
	s->my = mysql_init(NULL);
	if (s->my == NULL)
		return fail(EXIT_FAILED, "out of memory");
	unsigned int timeout = 10, io_timeout = 600;
	unsigned long packet = SRC_VALUE_MAX + 1024 * 1024;
	/* No row larger than a payload can make us allocate more; binary:
	 * the bytes as the old server stored them, never converted. */
	if (mysql_options(s->my, MYSQL_OPT_CONNECT_TIMEOUT, &timeout) != 0 ||
	    mysql_options(s->my, MYSQL_OPT_READ_TIMEOUT, &io_timeout) != 0 ||
	    mysql_options(s->my, MYSQL_OPT_MAX_ALLOWED_PACKET, &packet) != 0 ||
	    mysql_options(s->my, MYSQL_SET_CHARSET_NAME, "binary") != 0 || set_tls(s->my, u) < 0)
		return fail(EXIT_FAILED, "%s: the MySQL client library refused a connection "
					 "option", s->name);
	if (mysql_real_connect(s->my, u->host[0] ? u->host : NULL, u->user, pass, u->db,
			       (unsigned int)u->port, u->socket, 0) == NULL)
		return fail(EXIT_FAILED, "cannot connect to %s: %s%s", s->name, mysql_error(s->my),
			    u->tls == TLS_DEFAULT && !host_is_local(u)
				    ? " (TLS with a verified certificate is required for another "
				      "host; see ?tls= and ?ca= in weave-admin(8))"
				    : "");
	/* Connector/C goes on in clear when the server offers no TLS at
	 * all: what was asked for is checked here. */
	if (tls_wanted(u) && mysql_get_ssl_cipher(s->my) == NULL)
		return fail(EXIT_FAILED, "%s: the connection is not encrypted (the server offers "
					 "no TLS); refused, as ?tls=%s asks", s->name,
			    u->tls == TLS_ON ? "on" : "verify (the default for another host)");
	/* Read only, from one consistent snapshot. */
	if (mysql_query(s->my, "SET SESSION TRANSACTION READ ONLY") != 0 ||
	    mysql_query(s->my, "START TRANSACTION WITH CONSISTENT SNAPSHOT") != 0)
		return fail(EXIT_FAILED, "cannot start a read-only transaction on %s: %s",
			    s->name, mysql_error(s->my));
	return EXIT_OK;
}

int src_open_mysql(struct source *s, const char *url, const struct args *a)
{
	char *spec = xstrdup(url + strlen("mysql://"));
	size_t spec_len = strlen(spec);
	struct mysql_url u;
	struct buf pw;
	const char *pass = NULL;

	s->kind = SOURCE_MYSQL;
	buf_init(&pw, 1024);
	int rc = parse_mysql_url(spec, &u);
	if (rc == EXIT_OK)
		rc = source_password(&u, a, &pw, &pass);
	if (rc == EXIT_OK) {
		snprintf(s->name, sizeof s->name, "mysql://%s@%s%s%s/%s", u.user,
			 u.host[0] ? u.host : "localhost", u.port ? ":" : "",
			 u.port ? u.port_text : "", u.db);
		rc = mysql_connect_url(s, &u, pass);
	}
	buf_free_secret(&pw);
	OPENSSL_cleanse(spec, spec_len); /* it may hold the password */
	free(spec);
	return rc;
}

void src_close(struct source *s)
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

/* A number column as NUL-terminated text; false when too long. */
bool src_number_text(const struct src_value *v, char *out, size_t cap)
{
	if (v->is_null || v->len == 0 || v->len >= cap)
		return false;
	memcpy(out, v->s, v->len);
	out[v->len] = '\0';
	return true;
}

/* Any decimal or exponent form through a double, rounded: the fallback. */
bool src_number_by_double(const char *text, double scale, int64_t max, int64_t *out)
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

/* ---- what the source holds -------------------------------------------- */

static int collect_name(void *ctx, const struct src_value *row, size_t ncols)
{
	struct name_list *l = ctx;
	if (ncols >= 1 && l->n < NAMES_MAX && !row[0].is_null) {
		snprintf(l->names[l->n], sizeof l->names[0], "%.*s",
			 (int)(row[0].len < 64 ? row[0].len : 64), row[0].s);
		l->n++;
	}
	return 0;
}

bool list_has(const struct name_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcasecmp(l->names[i], name) == 0)
			return true;
	return false;
}

/* FSyncMS's later fork (martok/FSyncMS) names its tables PREFIX_users
 * and PREFIX_wbo. The prefix of the one such pair into prefix ("" when
 * plain users and wbo exist); EXIT_OK or told. */
static int find_prefix(const struct source *s, const struct name_list *t, char *prefix,
		       size_t cap)
{
	size_t found = 0;
	prefix[0] = '\0';
	if (list_has(t, "users") && list_has(t, "wbo"))
		return EXIT_OK;
	for (size_t i = 0; i < t->n; i++) {
		const char *name = t->names[i];
		size_t len = strlen(name);
		if (len <= 6 || len - 5 >= cap || strcmp(name + len - 6, "_users") != 0 ||
		    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789_") != len)
			continue;
		char wbo[80];
		snprintf(wbo, sizeof wbo, "%.*swbo", (int)(len - 5), name);
		if (!list_has(t, wbo))
			continue;
		if (found++ > 0)
			return fail(EXIT_FAILED, "%s holds several FSyncMS installations (%s and "
						 "%.*s): migrate a copy holding one", s->name, prefix,
				    (int)(len - 5), name);
		snprintf(prefix, cap, "%.*s", (int)(len - 5), name);
	}
	return EXIT_OK;
}

/* The quoted table names of the source, prefix + users / wbo. */
static void set_tables(struct source *s, const char *prefix)
{
	char q = s->kind == SOURCE_MYSQL ? '`' : '"';
	snprintf(s->users_name, sizeof s->users_name, "%susers", prefix);
	snprintf(s->wbo_name, sizeof s->wbo_name, "%swbo", prefix);
	snprintf(s->users_table, sizeof s->users_table, "%c%susers%c", q, prefix, q);
	snprintf(s->wbo_table, sizeof s->wbo_table, "%c%swbo%c", q, prefix, q);
}

int src_read_layout(struct source *s, struct layout *l, bool need_wbo)
{
	/* Only the names migrate looks for: a database it shares with other
	 * applications may hold more tables than the list. */
	static const char *const tables_sql[] = {
		[SOURCE_SQLITE] = "SELECT name FROM sqlite_master WHERE type = 'table' AND "
				  "(name LIKE '%users' OR name LIKE '%wbo' OR name = 'collections')",
		[SOURCE_MYSQL] = "SELECT table_name FROM information_schema.tables "
				 "WHERE table_schema = DATABASE() AND (table_name LIKE '%users' "
				 "OR table_name LIKE '%wbo' OR table_name = 'collections')",
	};
	char prefix[64], sql[256];
	memset(l, 0, sizeof *l);
	if (src_query(s, tables_sql[s->kind], 1, collect_name, &l->tables) < 0)
		return fail(EXIT_FAILED, "cannot read the tables of %s: %s", s->name, s->error);
	if (l->tables.n == NAMES_MAX)
		return fail(EXIT_FAILED, "%s has more than %d tables named *users or *wbo: "
					 "migrate a copy holding one server's", s->name, NAMES_MAX);
	int rc = need_wbo ? find_prefix(s, &l->tables, prefix, sizeof prefix) : EXIT_OK;
	if (rc != EXIT_OK)
		return rc;
	set_tables(s, need_wbo ? prefix : "");
	if (!list_has(&l->tables, s->users_name) ||
	    (need_wbo && !list_has(&l->tables, s->wbo_name)))
		return fail(EXIT_FAILED, "%s has no users and wbo tables: not an FSyncMS or PHP "
					 "server database (weave-minimal: give its data directory)",
			    s->name);
	/* users_name is prefix + users, the prefix letters, digits and _ only. */
	if (s->kind == SOURCE_SQLITE)
		snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s')", s->users_name);
	else
		snprintf(sql, sizeof sql, "SELECT column_name FROM information_schema.columns "
					  "WHERE table_schema = DATABASE() AND table_name = '%s'",
			 s->users_name);
	if (src_query(s, sql, 1, collect_name, &l->user_columns) < 0)
		return fail(EXIT_FAILED, "cannot read the columns of %s in %s: %s", s->users_name,
			    s->name, s->error);
	if (l->user_columns.n == NAMES_MAX)
		return fail(EXIT_FAILED, "%s: %s has more than %d columns: not an old server's",
			    s->name, s->users_name, NAMES_MAX);
	return EXIT_OK;
}
