/*
 * admin_migrate_users.c - migrate: the source's users table into legacy
 * accounts: each name mapped to ours (e-mail logins to their Sync 1.1
 * hashed name), its hash, e-mail and alert checked, duplicates and
 * collisions marked as failed with the reason; and the run's warnings.
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
#define ALERT_MAX 1024
#define REPORT_MAX 20 /* per-item warnings printed before "... and N more" */

void migrate_warn(struct migration *m, const char *fmt, ...)
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

static char *dup_value(const struct src_value *v)
{
	return v->is_null ? NULL : xstrndup(v->s, v->len);
}

/* A hash of a scheme we verify, but one no login could use (parameters
 * over the caps, malformed): the account is refused, not copied, so a
 * hostile source cannot plant a hash that costs gigabytes per login. */
static bool hash_refused(const char *h, const char *problem)
{
	return problem != NULL && (strncmp(h, "$scrypt$", 8) == 0 || strncmp(h, "$2", 2) == 0 ||
				   strncmp(h, "$weave-minimal$", 15) == 0);
}

/* The hash checks of load_user(): refused (why set) or a warning. */
static void check_hash(struct migration *m, struct legacy_user *u)
{
	const char *problem = password_hash_problem(u->hash);
	if (u->why != NULL || problem == NULL)
		return;
	if (strlen(u->hash) > HASH_MAX) {
		u->why = xstrdup("the password hash is longer than 255 bytes");
	} else if (hash_refused(u->hash, problem)) {
		struct buf why;
		buf_init(&why, 512);
		buf_printf(&why, "its password hash is refused: %s", problem);
		u->why = buf_detach(&why, NULL);
	} else {
		migrate_warn(m, "%s: the password hash is not MD5, {SSHA}, {SSHA-256}, bcrypt "
			     "or scrypt: the account is copied but cannot log in until "
			     "'weave-admin user passwd %s'", u->name, u->name);
	}
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
		migrate_warn(m, "%s: the alert is not UTF-8 text of at most %d bytes; dropped",
		     name, ALERT_MAX);
		free(alert);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)alert[i] < 0x20 || alert[i] == 0x7f)
			alert[i] = ' ';
	return alert;
}

int migrate_user_row(void *ctx, const struct src_value *row, size_t ncols)
{
	struct migration *m = ctx;
	if (ncols < 6 || row[0].is_null || row[1].is_null)
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
	} else if (account_name_normalise(legacy, len, u->name)) {
		/* An e-mail login is stored under its Sync 1.1 hashed name, and
		 * its name is its address when none was given. */
		if (account_name_is_email(legacy, len) && u->email == NULL)
			u->email = xstrdup(legacy);
	} else {
		u->why = xstrdup("the user name is not 1-32 of A-Z a-z 0-9 . _ - "
				 "(nor an e-mail address)");
	}
	if (u->why != NULL)
		snprintf(u->name, sizeof u->name, "%.32s", legacy);
	if (u->why == NULL && u->email != NULL &&
	    (strlen(u->email) > EMAIL_MAX || !validate_email(u->email, strlen(u->email)))) {
		migrate_warn(m, "%s: '%s' is not a valid e-mail address; dropped", u->name, u->email);
		free(u->email);
		u->email = NULL;
	}
	check_hash(m, u);
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

struct legacy_user *migrate_find_user(struct migration *m, const char *key, size_t len)
{
	struct legacy_user probe;
	if (m->nusers == 0)
		return NULL;
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
	for (size_t i = 1; i < m->nusers; i++)
		if (key_order(&m->users[i - 1], &m->users[i]) == 0 &&
		    m->users[i].state != LEGACY_FAILED) {
			m->users[i].why = xstrdup("the users table has this user twice");
			m->users[i].state = LEGACY_FAILED;
		}
	mark_collisions(m);
}
