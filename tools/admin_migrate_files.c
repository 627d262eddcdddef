/* admin_migrate_files.c - migrate: servers that kept one SQLite file per user (weave-minimal, the PHP server's SQLite engine). */
/*
 * weave-minimal (Python, posativ/weave-minimal) names each user's file
 * NAME.HEX in its data directory, HEX being the first 16 hex digits of
 * SHA-1 of a fixed salt and the password (there is no other hash), and
 * keeps a table per collection (id, modified in seconds, sortindex,
 * payload, payload_size, parentid, predecessorid, ttl in seconds).
 * The PHP server's SQLite engine keeps its users in DIR/_users and each
 * user's records in DIR/a/b/c/MD5 (MD5 of the name, a-c its first hex
 * digits), one wbo table naming collections, modified in centiseconds.
 * Every file is opened through src_open_sqlite(), hardened like any
 * other source; table names go into SQL only after they passed the
 * collection-name rule (letters, digits, . _ -), inside double quotes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "migrate.h"
#include "util.h"
#include "validate.h"

#define DIR_FILES_MAX 1000000 /* files looked at in a data directory */
#define USER_TABLES_MAX 128  /* collections of one weave-minimal user */

const struct migrate_format migrate_weave_minimal = {
	.name = "weave-minimal",
	.user_key_column = "username",
	.collection = migrate_collection_by_name,
	.modified = migrate_modified_in_seconds,
};

bool migrate_is_directory(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static char *join(const char *dir, const char *name)
{
	struct buf b;
	buf_init(&b, 8192);
	buf_printf(&b, "%s/%s", dir, name);
	return buf_detach(&b, NULL);
}

static struct src_value text_value(const char *s)
{
	struct src_value v = { .is_null = s == NULL, .s = s ? s : "", .len = s ? strlen(s) : 0 };
	return v;
}

/* NAME.HEX16 as weave-minimal writes it: the user and its hash, or false. */
static bool split_minimal_name(const char *file, char *name, size_t cap, char *hex)
{
	const char *dot = strrchr(file, '.');
	if (dot == NULL || dot == file || (size_t)(dot - file) >= cap || strlen(dot + 1) != 16)
		return false;
	for (const char *p = dot + 1; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	memcpy(name, file, (size_t)(dot - file));
	name[dot - file] = '\0';
	memcpy(hex, dot + 1, 17);
	return true;
}

/* One weave-minimal file as a users row; its path kept on the account. */
static void add_minimal_user(struct migration *m, const char *dir, const char *file)
{
	char name[256], hex[17], hash[64];
	struct stat st;
	char *path = join(dir, file);
	if (!split_minimal_name(file, name, sizeof name, hex) || lstat(path, &st) != 0 ||
	    !S_ISREG(st.st_mode)) {
		free(path);
		return;
	}
	snprintf(hash, sizeof hash, "$weave-minimal$%s", hex);
	struct src_value row[6] = {
		text_value(name), text_value(name), text_value(hash),
		text_value(NULL), text_value("1"), text_value(NULL),
	};
	migrate_user_row(m, row, 6);
	m->users[m->nusers - 1].file = path;
}

static int open_weave_minimal(struct migration *m, const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return fail(EXIT_FAILED, "cannot read %s: %s", dir, strerror(errno));
	struct dirent *e;
	size_t seen = 0;
	errno = 0;
	while (seen < DIR_FILES_MAX && (e = readdir(d)) != NULL) {
		add_minimal_user(m, dir, e->d_name);
		seen++;
		errno = 0;
	}
	/* Never a partial list of users: a run must copy all or say so. */
	int err = errno;
	bool more = seen == DIR_FILES_MAX && readdir(d) != NULL;
	closedir(d);
	if (err != 0)
		return fail(EXIT_FAILED, "cannot read %s: %s", dir, strerror(err));
	if (more)
		return fail(EXIT_FAILED, "%s holds more than %d files: not a weave-minimal data "
					 "directory this command reads", dir, DIR_FILES_MAX);
	if (m->nusers == 0)
		return fail(EXIT_FAILED, "%s has no NAME.HASH files: not a weave-minimal data "
					 "directory (nor the PHP server's: no _users file)", dir);
	migrate_users_loaded(m);
	return EXIT_OK;
}

/* DIR/a/b/c/MD5 for the PHP server's user key. */
static char *php_user_file(const char *dir, const char *key, size_t len)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	char hex[33];
	struct buf b;
	if (EVP_Digest(key, len, d, &dlen, EVP_md5(), NULL) != 1)
		return NULL;
	for (unsigned i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	buf_init(&b, 8192);
	buf_printf(&b, "%s/%c/%c/%c/%s", dir, hex[0], hex[1], hex[2], hex);
	return buf_detach(&b, NULL);
}

static int open_php_sqlite(struct migration *m, const char *dir)
{
	struct layout l;
	char *users = join(dir, "_users");
	int rc = src_open_sqlite(&m->src, users);
	free(users);
	if (rc == EXIT_OK)
		rc = src_read_layout(&m->src, &l, false);
	if (rc == EXIT_OK && (!list_has(&l.user_columns, "username") ||
			      !list_has(&l.user_columns, "md5")))
		rc = fail(EXIT_FAILED, "%s: users needs username and md5 columns", m->src.name);
	if (rc == EXIT_OK)
		rc = migrate_load_users(m, &l);
	for (size_t i = 0; rc == EXIT_OK && i < m->nusers; i++)
		m->users[i].file = php_user_file(dir, m->users[i].key, m->users[i].key_len);
	return rc;
}

int migrate_dir_open(struct migration *m, const char *dir, const char *format_opt)
{
	char *users = join(dir, "_users");
	bool php = access(users, F_OK) == 0;
	free(users);
	if (format_opt != NULL && strcmp(format_opt, "php") == 0)
		php = true;
	else if (format_opt != NULL && strcmp(format_opt, "weave-minimal") == 0)
		php = false;
	else if (format_opt != NULL)
		return fail(EXIT_FAILED, "%s is a directory: --format %s reads one database "
					 "file or a MySQL server (a directory is weave-minimal's "
					 "or the PHP server's SQLite data)", dir, format_opt);
	m->dir = xstrdup(dir);
	m->format = php ? &migrate_php_sqlite : &migrate_weave_minimal;
	int rc = php ? open_php_sqlite(m, dir) : open_weave_minimal(m, dir);
	snprintf(m->src.name, sizeof m->src.name, "%s", dir);
	return rc;
}

/* ---- records ---------------------------------------------------------- */

struct file_rows {
	struct migration *m;
	struct legacy_user *u;
	const char *collection; /* weave-minimal: the table; PHP: NULL (a column) */
};

/* A row of a user's file, with the user key (and the table) in front. */
static int file_row(void *ctx, const struct src_value *row, size_t ncols)
{
	struct file_rows *f = ctx;
	struct src_value full[9];
	size_t n = 0;
	full[n++] = (struct src_value){ .s = f->u->key, .len = f->u->key_len };
	if (f->collection != NULL)
		full[n++] = text_value(f->collection);
	for (size_t i = 0; i < ncols && n < 9; i++)
		full[n++] = row[i];
	if (n < 8)
		return 1;
	return migrate_record(f->m, full, n);
}

static int collect_table(void *ctx, const struct src_value *row, size_t ncols)
{
	struct counters *t = ctx;
	if (ncols < 1 || row[0].is_null)
		return 0;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->items = xrealloc(t->items, t->cap * sizeof *t->items);
	}
	/* A name too long to be a collection is kept long enough to fail. */
	snprintf(t->items[t->n].name, sizeof t->items[0].name, "%.*s",
		 (int)(row[0].len < COLLECTION_MAX + 1 ? row[0].len : COLLECTION_MAX + 1),
		 row[0].s);
	t->items[t->n].n = (int64_t)row[0].len;
	t->n++;
	return t->n > USER_TABLES_MAX;
}

/* Each table of a weave-minimal file; NULL, or why the user fails. */
static const char *minimal_tables(struct file_rows *f, struct source *s, char *why,
				  size_t cap)
{
	struct counters tables = { 0 };
	const char *bad = NULL;
	/* SQLite's own tables (sqlite_stat1 after an ANALYZE, ...) hold no records. */
	if (src_query(s, "SELECT name FROM sqlite_master WHERE type = 'table' AND "
			 "name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name", 1,
		      collect_table, &tables) < 0)
		bad = s->error;
	else if (tables.n > USER_TABLES_MAX)
		bad = "it has more than 128 tables";
	for (size_t i = 0; bad == NULL && i < tables.n; i++) {
		const char *t = tables.items[i].name;
		if ((size_t)tables.items[i].n != strlen(t) || !validate_collection(t, strlen(t))) {
			snprintf(why, cap, "table '%.40s' is not a collection name "
					   "(1-32 of A-Z a-z 0-9 . _ -)", t);
			bad = why;
			break;
		}
		char sql[256];
		snprintf(sql, sizeof sql, "SELECT id, parentid, predecessorid, sortindex, "
					  "modified, payload, ttl FROM \"%s\"", t);
		f->collection = t;
		if (src_query(s, sql, 7, file_row, f) < 0 && f->m->fatal == EXIT_OK &&
		    f->u->state != LEGACY_FAILED) {
			snprintf(why, cap, "table %s: %.300s", t, s->error);
			bad = why;
		}
		/* Still pending after an empty table: the next may have rows. */
		if (f->u->state == LEGACY_FAILED || f->m->fatal != EXIT_OK)
			break;
	}
	free(tables.items);
	return bad;
}

/* One user's file into migrate_record(); a missing PHP file is no records. */
static void user_file(struct migration *m, struct legacy_user *u)
{
	struct source s;
	struct file_rows f = { .m = m, .u = u };
	char why[512];
	const char *bad = NULL;
	bool php = m->format == &migrate_php_sqlite;

	if (u->file == NULL || (php && access(u->file, F_OK) != 0 && errno == ENOENT))
		return;
	memset(&s, 0, sizeof s);
	if (src_open_sqlite(&s, u->file) != EXIT_OK) {
		migrate_fail_user(m, u, "its SQLite file cannot be read (above)");
		src_close(&s);
		return;
	}
	if (php) {
		if (src_query(&s, "SELECT collection, id, parentid, predecessorid, sortindex, "
				  "modified, payload FROM wbo", 7, file_row, &f) < 0)
			bad = s.error;
	} else {
		bad = minimal_tables(&f, &s, why, sizeof why);
	}
	if (bad != NULL && m->fatal == EXIT_OK && u->state != LEGACY_FAILED) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%.400s: %.500s", u->file, bad);
		/* Not begun yet (an empty first table): fail it all the same. */
		migrate_fail_user(m, u, msg);
	}
	src_close(&s);
}

int migrate_dir_records(struct migration *m)
{
	for (size_t i = 0; i < m->nusers && m->fatal == EXIT_OK; i++)
		if (m->users[i].state == LEGACY_PENDING)
			user_file(m, &m->users[i]);
	return EXIT_OK;
}
