/*
 * admin_migrate_users.c - migrate: the source's users table into legacy
 * accounts: each name mapped to ours (e-mail logins to their Sync 1.1
 * hashed name), its hash, e-mail and alert checked against their bounds
 * before anything is kept, duplicates and collisions marked as failed
 * with the reason; and the run's warnings, made safe for a terminal.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account_name.h"
#include "auth.h"
#include "migrate.h"
#include "password.h"
#include "util.h"

#define HASH_MAX 255
#define KEY_MAX 255
#define LEGACY_NAME_MAX EMAIL_MAX /* an e-mail login at most */
#define ALERT_MAX 1024
#define REPORT_MAX 20 /* per-item warnings printed before "... and N more" */

void migrate_printable(char *s, size_t len)
{
	bool utf8 = validate_utf8(s, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool c1 = utf8 && c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] < 0xa0;
		if (c1)
			s[i + 1] = '?';
		if (c < 0x20 || c == 0x7f || c1 || (!utf8 && c >= 0x80))
			s[i] = '?';
	}
}

void migrate_warn(struct migration *m, const char *fmt, ...)
{
	va_list ap;
	struct buf line;
	if (m->warnings++ >= REPORT_MAX * 5)
		return;
	if (m->progress.on)
		fputc('\n', stderr);
	buf_init(&line, 4096);
	va_start(ap, fmt);
	buf_vprintf(&line, fmt, ap);
	va_end(ap);
	if (line.data != NULL) {
		migrate_printable(line.data, line.len);
		fprintf(stderr, "weave-admin: warning: %s\n", line.data);
	}
	buf_free(&line);
}

/* A copy of v, or NULL when v is NULL or longer than max bytes: a
 * hostile source's values are bounded before anything is kept. */
static char *bounded_value(const struct src_value *v, size_t max)
{
	return v->is_null || v->len > max ? NULL : xstrndup(v->s, v->len);
}

/* A hash of a scheme we verify, but one no login could use (parameters
 * over the caps, malformed): the account is refused, not copied, so a
 * hostile source cannot plant a hash that costs gigabytes per login. */
static bool hash_refused(const char *h, const char *problem)
{
	return problem != NULL && (strncmp(h, "$scrypt$", 8) == 0 || strncmp(h, "$2", 2) == 0 ||
				   strncmp(h, "$weave-minimal$", 15) == 0);
}

/* The hash of row value v into u->hash, bounded and checked: refused
 * (why set), or copied with a warning when no login could use it. */
static void load_hash(struct migration *m, struct legacy_user *u, const struct src_value *v)
{
	u->hash = v->is_null ? xstrdup("") : bounded_value(v, HASH_MAX);
	if (u->hash == NULL || strlen(u->hash) != v->len) {
		free(u->hash);
		u->hash = xstrdup("");
		if (u->why == NULL)
			u->why = xstrdup(v->len > HASH_MAX
						 ? "the password hash is longer than 255 bytes"
						 : "the password hash contains a NUL byte");
		return;
	}
	const char *problem = password_hash_problem(u->hash);
	if (u->why != NULL || problem == NULL)
		return;
	if (hash_refused(u->hash, problem)) {
		struct buf why;
		buf_init(&why, 512);
		buf_printf(&why, "its password hash is refused: %s", problem);
		u->why = buf_detach(&why, NULL);
	} else {
		migrate_warn(m, "%s: the password hash is not MD5, {SSHA}, {SSHA-256}, bcrypt "
			     "or scrypt (%s): the account is copied but cannot log in until "
			     "'weave-admin user passwd %s'", u->name, problem, u->name);
	}
}

/* Header-safe alert text: control characters become blanks. */
static char *load_alert(struct migration *m, const char *name, const struct src_value *v)
{
	if (v->is_null || v->len == 0)
		return NULL;
	char *alert = bounded_value(v, ALERT_MAX);
	if (alert == NULL || !validate_utf8(alert, v->len) || strlen(alert) != v->len) {
		migrate_warn(m, "%s: the alert is not UTF-8 text of at most %d bytes; dropped",
			     name, ALERT_MAX);
		free(alert);
		return NULL;
	}
	for (size_t i = 0; i < v->len; i++)
		if ((unsigned char)alert[i] < 0x20 || alert[i] == 0x7f)
			alert[i] = ' ';
	return alert;
}

/* The legacy name v as ours into u->name, or why not. */
static void load_name(struct legacy_user *u, const struct src_value *v)
{
	char *key_why = u->why; /* a long key is a long name: this says it better */
	u->why = NULL;
	if (v->len > LEGACY_NAME_MAX || memchr(v->s, '\0', v->len) != NULL) {
		u->why = xstrdup(v->len > LEGACY_NAME_MAX
					 ? "the user name is longer than 254 bytes"
					 : "the user name contains a NUL byte");
	} else if (account_name_normalise(v->s, v->len, u->name)) {
		/* An e-mail login is stored under its Sync 1.1 hashed name, and
		 * its name is its address when none was given. */
		if (account_name_is_email(v->s, v->len) && u->email == NULL)
			u->email = xstrndup(v->s, v->len);
		u->why = key_why;
		return;
	} else {
		u->why = xstrdup("the user name is not 1-32 of A-Z a-z 0-9 . _ - "
				 "(nor an e-mail address)");
	}
	free(key_why);
	snprintf(u->name, sizeof u->name, "%.*s", (int)(v->len < 32 ? v->len : 32), v->s);
}

/* The e-mail address v, else the login's own (load_name()), if valid. */
static void load_email(struct migration *m, struct legacy_user *u, const struct src_value *v)
{
	const char *given = u->email;
	size_t len = given ? strlen(given) : 0;
	if (!v->is_null && v->len > 0) {
		given = v->s;
		len = v->len;
	}
	bool ok = given != NULL && len <= EMAIL_MAX && memchr(given, '\0', len) == NULL &&
		  validate_email(given, len);
	if (!ok && given != NULL && u->why == NULL)
		migrate_warn(m, "%s: '%.*s' is not a valid e-mail address of at most %d bytes; "
			     "dropped", u->name, (int)(len < 80 ? len : 80), given, EMAIL_MAX);
	char *email = ok ? xstrndup(given, len) : NULL;
	free(u->email);
	u->email = email;
}

static struct legacy_user *new_user(struct migration *m)
{
	if (m->nusers == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->users = xrealloc(m->users, m->cap * sizeof *m->users);
	}
	struct legacy_user *u = &m->users[m->nusers++];
	memset(u, 0, sizeof *u);
	return u;
}

int migrate_user_row(void *ctx, const struct src_value *row, size_t ncols)
{
	struct migration *m = ctx;
	if (ncols < 6 || row[0].is_null || row[1].is_null)
		return 0;
	struct legacy_user *u = new_user(m);
	/* A key longer than any name or id is kept just long enough to
	 * match nothing: its account fails on its name. */
	u->key_len = row[0].len <= KEY_MAX ? row[0].len : KEY_MAX + 1;
	u->key = xstrndup(row[0].s, u->key_len);
	if (row[0].len > KEY_MAX)
		u->why = xstrdup("its users key is longer than 255 bytes");
	u->status = row[4].is_null || (row[4].len == 1 && row[4].s[0] == '1') ? 1 : 0;
	load_name(u, &row[1]);
	load_email(m, u, &row[3]);
	load_hash(m, u, &row[2]);
	u->alert = load_alert(m, u->name, &row[5]);
	if (u->why != NULL)
		u->state = LEGACY_FAILED;
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

struct legacy_user *migrate_find_user(struct migration *m, const char *key, size_t len)
{
	struct legacy_user probe;
	if (m->nusers == 0)
		return NULL;
	probe.key = (char *)key;
	probe.key_len = len;
	return bsearch(&probe, m->users, m->nusers, sizeof *m->users, key_order);
}

static int name_order(const void *a, const void *b)
{
	const struct legacy_user *x = *(struct legacy_user *const *)a;
	const struct legacy_user *y = *(struct legacy_user *const *)b;
	int c = strcmp(x->name, y->name);
	return c != 0 ? c : (x < y ? -1 : x > y);
}

/* Two legacy accounts that map to one name ("Alice", "alice"): the first
 * in key order is migrated, the others are reported. Sorted by name
 * (then key order), not compared pairwise: a source may have a million
 * users. */
static void mark_collisions(struct migration *m)
{
	struct legacy_user **by_name = xcalloc(m->nusers, sizeof *by_name);
	size_t n = 0;
	for (size_t i = 0; i < m->nusers; i++)
		if (m->users[i].state != LEGACY_FAILED)
			by_name[n++] = &m->users[i];
	qsort(by_name, n, sizeof *by_name, name_order);
	for (size_t i = 1, first = 0; i < n; i++) {
		struct legacy_user *u = by_name[i], *v = by_name[first];
		if (strcmp(u->name, v->name) != 0) {
			first = i;
			continue;
		}
		struct buf why;
		buf_init(&why, 512);
		buf_printf(&why, "its name maps to %s like legacy user '%.64s'", u->name, v->key);
		u->why = buf_detach(&why, NULL);
		u->state = LEGACY_FAILED;
	}
	free(by_name);
}

/* Every account of a users key that appears more than once fails: a
 * record names its account by that key alone, so no record could be
 * told apart (weave-minimal: NAME.HASH files for several passwords). */
static void mark_duplicates(struct migration *m)
{
	for (size_t i = 0, j; i < m->nusers; i = j) {
		for (j = i + 1; j < m->nusers && key_order(&m->users[i], &m->users[j]) == 0; j++)
			;
		for (size_t k = i; j - i > 1 && k < j; k++) {
			struct legacy_user *u = &m->users[k];
			struct buf why;
			buf_init(&why, 512);
			if (m->format == &migrate_weave_minimal)
				buf_printf(&why, "its name has %zu files in the data directory "
						 "(one per password): keep the right one", j - i);
			else
				buf_printf(&why, "the users table has this user %zu times", j - i);
			free(u->why);
			u->why = buf_detach(&why, NULL);
			u->state = LEGACY_FAILED;
		}
	}
}

int migrate_load_users(struct migration *m, const struct layout *l)
{
	struct buf sql;
	buf_init(&sql, 1024);
	/* Fixed fragments, chosen by which columns exist. */
	buf_printf(&sql, "SELECT %s, username, ", m->format->user_key_column);
	buf_puts(&sql, list_has(&l->user_columns, "password_hash") ? "password_hash, " : "md5, ");
	buf_puts(&sql, list_has(&l->user_columns, "email") ? "email, " : "NULL, ");
	buf_puts(&sql, list_has(&l->user_columns, "status") ? "status, " : "1, ");
	buf_puts(&sql, list_has(&l->user_columns, "alert") ? "alert " : "NULL ");
	buf_printf(&sql, "FROM %s", m->src.users_table);
	int rc = src_query(&m->src, sql.data, 6, migrate_user_row, m);
	buf_free(&sql);
	if (rc < 0)
		return fail(EXIT_FAILED, "cannot read the users of %s: %s", m->src.name,
			    m->src.error);
	migrate_users_loaded(m);
	return EXIT_OK;
}

void migrate_users_loaded(struct migration *m)
{
	if (m->nusers == 0)
		return; /* users is NULL: qsort must not see it */
	qsort(m->users, m->nusers, sizeof *m->users, key_order);
	mark_duplicates(m);
	mark_collisions(m);
}
