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

/* Run one fixed query and call fn per row. 0, or -1 with s->error set. */
int src_query(struct source *s, const char *sql, src_row_fn fn, void *ctx)
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

int src_open_sqlite(struct source *s, const char *path)
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
int src_open_mysql(struct source *s, const char *url, const struct args *a)
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
	(void)ncols;
	if (l->n < 64 && !row[0].is_null) {
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

int src_read_layout(struct source *s, struct layout *l)
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

