/* admin_users.c - weave-admin user ...: accounts and their settings. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "admin.h"
#include "auth.h"
#include "db_admin.h"
#include "db_throttle.h"
#include "admin_usage.h"
#include "db_user.h"
#include "password.h"
#include "storage_place.h"
#include "util.h"

#define ALERT_MAX 1024

int cmd_user_add(const struct args *a)
{
	char name[USERNAME_MAX + 1], hash[PASSWORD_HASH_MAX];
	const char *email = a->opt[OPT_EMAIL];
	char *node = NULL;
	struct buf pw;
	int rc;

	rc = account_name(a->pos[0], name, email ? NULL : &email);
	if (rc != EXIT_OK)
		return rc;
	if (email != NULL && !validate_email(email, strlen(email)))
		return usage_error("'%s' is not a valid e-mail address", email);
	int exists = 0;
	enum db_status st = db_user_exists(name, &exists);
	if (st != DB_OK)
		return db_fail(st, "looking up the user");
	if (exists)
		return fail(EXIT_FAILED, "user %s already exists", name);
	buf_init(&pw, AUTH_PASSWORD_MAX);
	rc = get_new_password(a, &pw);
	if (rc == EXIT_OK)
		rc = hash_new_password(name, &pw, hash);
	buf_free_secret(&pw);
	if (rc == EXIT_OK)
		rc = choose_node(a, &node);
	if (rc != EXIT_OK)
		return rc;
	st = db_user_create(name, hash, email, node, NULL);
	if (st == DB_CONFLICT)
		rc = fail(EXIT_FAILED, "user %s already exists", name);
	else if (st != DB_OK)
		rc = db_fail(st, "creating the user");
	else if (node != NULL)
		printf("created user %s on node %s\n", name, node);
	else
		printf("created user %s\n", name);
	free(node);
	return rc;
}

int cmd_user_passwd(const struct args *a)
{
	char hash[PASSWORD_HASH_MAX];
	struct user u;
	struct buf pw;

	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	buf_init(&pw, AUTH_PASSWORD_MAX);
	rc = get_new_password(a, &pw);
	if (rc == EXIT_OK)
		rc = hash_new_password(u.username, &pw, hash);
	buf_free_secret(&pw);
	if (rc == EXIT_OK) {
		enum db_status st = db_user_set_password(u.id, hash);
		if (st != DB_OK)
			rc = db_fail(st, "setting the password");
		else
			printf("password of %s changed\n", u.username);
	}
	user_free(&u);
	return rc;
}

int cmd_user_delete(const struct args *a)
{
	struct user u;

	if (!has_opt(a, OPT_YES) && !isatty(STDIN_FILENO))
		return usage_error("not on a terminal, so add --yes to delete %s and "
				   "all its data", a->pos[0]);
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	if (!has_opt(a, OPT_YES)) {
		char question[128];
		snprintf(question, sizeof question,
			 "Delete user %s and all of its records? [y/N] ", u.username);
		if (!confirm(question)) {
			user_free(&u);
			return fail(EXIT_FAILED, "not deleted");
		}
	}
	enum db_status st = db_begin();
	/* Locked first: no write of the account runs while its node's
	 * records go (storage_place.h). */
	struct user locked = { 0 };
	if (st == DB_OK)
		st = db_user_get(u.username, USER_LOCK_EXCLUSIVE, &locked);
	if (st == DB_OK)
		st = storage_place_forget_records(&admin_cfg, locked.id, locked.node);
	user_free(&locked);
	if (st == DB_OK)
		st = db_user_delete(u.id);
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback();
	if (st != DB_OK)
		rc = db_fail(st, "deleting the user");
	else
		printf("deleted user %s and its records\n", u.username);
	user_free(&u);
	return rc;
}

/* ---- list ------------------------------------------------------------------ */

static struct json_object *user_json(const struct user *u, int64_t records,
				     int64_t bytes)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "username", json_object_new_string(u->username));
	json_object_object_add(o, "email", json_string_or_null(u->email));
	json_object_object_add(o, "enabled", json_object_new_boolean(u->status == 1));
	json_object_object_add(o, "records", json_object_new_int64(records));
	json_object_object_add(o, "bytes", json_object_new_int64(bytes));
	json_object_object_add(o, "quota_kb",
			       u->quota_kb >= 0 ? json_object_new_int64(u->quota_kb) : NULL);
	json_object_object_add(o, "node", json_string_or_null(u->node));
	json_object_object_add(o, "last_write", json_stamp(u->last_write));
	json_object_object_add(o, "created",
			       u->created > 0 ? json_object_new_int64(u->created) : NULL);
	return o;
}

struct list_ctx {
	struct json_object *array; /* NULL: text output */
	int64_t count;
	struct json_object *locked; /* names locked by failed logins -> true */
	int64_t now;                /* seconds */
};

/* One query for every lock, rather than one per listed account. */
static int collect_locked(void *ctx, enum throttle_kind kind, const char *subject,
			  const struct throttle_row *r, int64_t expires)
{
	struct list_ctx *l = ctx;
	(void)expires;
	if (kind == THROTTLE_LOGIN_USER && r->locked_until > l->now)
		json_object_object_add(l->locked, subject, json_object_new_boolean(1));
	return 0;
}

/* Printed with the first row (or after an empty answer), so that a failed
 * query shows only its message. */
static void list_header(void)
{
	printf("%-32s %-8s %10s %10s  %-23s  %s\n", "USER", "STATUS", "RECORDS", "SIZE",
	       "LAST WRITE", "EMAIL");
}

static int list_one(void *ctx, const struct user *u, int64_t records, int64_t bytes)
{
	struct list_ctx *l = ctx;
	l->count++;
	bool locked = json_object_object_get_ex(l->locked, u->username, NULL);
	if (l->array != NULL) {
		struct json_object *o = user_json(u, records, bytes);
		json_object_object_add(o, "locked", json_object_new_boolean(locked));
		json_object_array_add(l->array, o);
		return 0;
	}
	if (l->count == 1)
		list_header();
	char last[64] = "never", size[32];
	if (u->last_write > 0)
		format_utc(u->last_write / 100, last, sizeof last);
	format_bytes(bytes, size, sizeof size);
	printf("%-32s %-8s %10" PRId64 " %10s  %-23s  %s\n", u->username,
	       u->status != 1 ? "disabled" : locked ? "locked" : "enabled", records, size, last,
	       u->email ? u->email : "-");
	return 0;
}

int cmd_user_list(const struct args *a)
{
	static const char *const sorts[USER_SORT__MAX] = {
		[USER_SORT_NAME] = "name",
		[USER_SORT_USAGE] = "usage",
		[USER_SORT_ACTIVITY] = "activity",
	};
	struct user_filter f = { .status = USER_ANY, .sort = USER_SORT_NAME };
	char like[USERNAME_MAX * 2 + 1], node[NODE_URL_MAX + 1];
	int rc;

	if (has_opt(a, OPT_ENABLED) && has_opt(a, OPT_DISABLED))
		return usage_error("--enabled and --disabled exclude each other");
	if (has_opt(a, OPT_ENABLED))
		f.status = USER_ENABLED;
	if (has_opt(a, OPT_DISABLED))
		f.status = USER_DISABLED;
	if (has_opt(a, OPT_NAME_LIKE)) {
		const char *p = a->opt[OPT_NAME_LIKE];
		if (p[0] == '\0' || strlen(p) >= sizeof like)
			return usage_error("--name-like needs a pattern of 1-%d characters",
					   USERNAME_MAX * 2);
		memcpy(like, p, strlen(p) + 1);
		ascii_lower(like); /* names are stored in lower case */
		f.name_like = like;
	}
	if (has_opt(a, OPT_NODE)) {
		if (strcmp(a->opt[OPT_NODE], "default") == 0)
			f.node = "";
		else if (node_url_normalise(a->opt[OPT_NODE], node, sizeof node) < 0)
			return usage_error("--node needs an http:// or https:// URL or "
					   "'default', not '%s'", a->opt[OPT_NODE]);
		else
			f.node = node;
	}
	if (has_opt(a, OPT_SORT)) {
		int found = -1;
		for (int s = 0; s < USER_SORT__MAX; s++)
			if (strcmp(a->opt[OPT_SORT], sorts[s]) == 0)
				found = s;
		if (found < 0)
			return usage_error("--sort takes name, usage or activity, not '%s'",
					   a->opt[OPT_SORT]);
		f.sort = (enum user_sort)found;
	}
	if (has_opt(a, OPT_LIMIT) &&
	    (rc = parse_number_arg(a->opt[OPT_LIMIT], 1, 1000000000, "--limit",
				   &f.limit)) != EXIT_OK)
		return rc;
	f.now = now_centiseconds();

	struct list_ctx l = { NULL, 0, json_object_new_object(), f.now / 100 };
	if (has_opt(a, OPT_JSON))
		l.array = json_object_new_array();
	enum db_status st = db_throttle_list(l.now, collect_locked, &l);
	if (st == DB_OK)
		st = admin_user_search(&f, list_one, &l);
	json_object_put(l.locked);
	if (st != DB_OK) {
		json_object_put(l.array);
		return db_fail(st, "listing users");
	}
	if (l.array != NULL)
		json_print(l.array);
	else if (l.count == 0)
		list_header();
	return EXIT_OK;
}

/* ---- show -------------------------------------------------------------------- */

struct show_ctx {
	struct json_object *collections; /* name -> {records, bytes, modified} */
	int64_t records, bytes;
	int64_t expired;         /* records past their ttl */
	int64_t failed_logins;   /* today's, for the account */
	int64_t locked_until;    /* 0: not locked to new addresses */
	int64_t quota;           /* effective KB; 0 is none */
	const char *quota_source; /* "account" or "default" */
	const char *node;        /* effective node URL, NULL: this server */
};

static int show_collection(void *ctx, const char *name, size_t len,
			   int64_t records, int64_t bytes, int64_t modified)
{
	struct show_ctx *s = ctx;
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "records", json_object_new_int64(records));
	json_object_object_add(o, "bytes", json_object_new_int64(bytes));
	json_object_object_add(o, "modified", json_stamp(modified));
	char *key = xstrndup(name, len);
	json_object_object_add(s->collections, key, o);
	free(key);
	s->records += records;
	s->bytes += bytes;
	return 0;
}

/* Everything 'user show' prints about u; EXIT_OK or a database failure
 * (s->collections is then freed). */
static int show_read(const struct user *u, struct show_ctx *s)
{
	int64_t now = now_centiseconds(), now_s = now / 100;
	s->collections = json_object_new_object();
	const char *what = "reading the user's records";
	size_t was = db_use(records_place(u));
	enum db_status st = db_admin_user_collections(u->id, now, show_collection, s);
	if (st == DB_OK)
		st = db_admin_count_expired(u->id, now, &s->expired);
	db_use(was);
	/* The day's budget of failed logins spent: new addresses are refused. */
	struct throttle_row login = { 0 }, unused;
	if (st == DB_OK) {
		what = "reading the account's failed logins";
		st = db_throttle_get(THROTTLE_LOGIN_USER, u->username, THROTTLE_RESET_USER,
				     "", now_s, &login, &unused);
	}
	if (st != DB_OK) {
		json_object_put(s->collections);
		return db_fail(st, what);
	}
	s->failed_logins = login.events;
	s->locked_until = login.locked_until > now_s ? login.locked_until : 0;
	/* Effective quota: the account's, else weave.conf's; 0 is none. */
	s->quota = u->quota_kb >= 0 ? u->quota_kb : admin_cfg.quota_kb;
	s->quota_source = u->quota_kb >= 0 ? "account" : "default";
	s->node = u->node ? u->node : admin_cfg.public_url;
	return EXIT_OK;
}

static void show_json(const struct user *u, const struct show_ctx *s)
{
	struct json_object *o = user_json(u, s->records, s->bytes);
	json_object_object_add(o, "node_effective", json_string_or_null(s->node));
	json_object_object_add(o, "locked_until",
			       s->locked_until ? json_object_new_int64(s->locked_until) : NULL);
	json_object_object_add(o, "quota_effective_kb",
			       s->quota > 0 ? json_object_new_int64(s->quota) : NULL);
	json_object_object_add(o, "quota_source", json_object_new_string(s->quota_source));
	json_object_object_add(o, "usage_kb", json_object_new_int64((s->bytes + 1023) / 1024));
	json_object_object_add(o, "expired_records", json_object_new_int64(s->expired));
	json_object_object_add(o, "alert", json_string_or_null(u->alert));
	json_object_object_add(o, "collections", json_object_get(s->collections));
	json_print(o);
}

/* The status line, with the lock and how to lift it. */
static void show_status(const struct user *u, const struct show_ctx *s)
{
	const char *state = u->status == 1 ? "enabled" : "disabled";
	if (s->locked_until == 0) {
		printf("status       %s\n", state);
		return;
	}
	char until[64];
	format_utc(s->locked_until, until, sizeof until);
	printf("status       %s, LOCKED to new addresses until %s after %" PRId64
	       " failed logins today: only addresses it logged in from may try "
	       "its password ('weave-admin user unlock %s' lifts it)\n",
	       state, until, s->failed_logins, u->username);
}

/* Quota, usage and what waits for purge. */
static void show_usage(const struct show_ctx *s)
{
	char size[32];
	if (s->quota > 0)
		printf("quota        %" PRId64 " KB (%s)\n", s->quota, s->quota_source);
	else
		printf("quota        none (%s)\n", s->quota_source);
	format_bytes(s->bytes, size, sizeof size);
	printf("usage        %" PRId64 " KB, %s in %" PRId64 " records",
	       (s->bytes + 1023) / 1024, size, s->records);
	if (s->quota > 0)
		printf(", %.1f%% of the quota",
		       (double)s->bytes * 100.0 / (double)(s->quota * 1024));
	printf("\n");
	if (s->expired > 0)
		printf("expired      %" PRId64 " records waiting for 'weave-admin purge'\n",
		       s->expired);
}

static void show_collections(const struct show_ctx *s)
{
	char when[64], size[32];
	printf("\n%-32s %10s %10s  %s\n", "COLLECTION", "RECORDS", "SIZE", "MODIFIED");
	json_object_object_foreach(s->collections, key, val)
	{
		struct json_object *r, *b, *m;
		json_object_object_get_ex(val, "records", &r);
		json_object_object_get_ex(val, "bytes", &b);
		json_object_object_get_ex(val, "modified", &m);
		format_bytes(json_object_get_int64(b), size, sizeof size);
		snprintf(when, sizeof when, "-");
		if (m != NULL && json_object_get_double(m) > 0)
			format_utc((int64_t)json_object_get_double(m), when, sizeof when);
		printf("%-32s %10" PRId64 " %10s  %s\n", key, json_object_get_int64(r), size,
		       when);
	}
}

static void show_text(const struct user *u, const struct show_ctx *s)
{
	char when[64], last[32];
	printf("user         %s\n", u->username);
	show_status(u, s);
	printf("email        %s\n", u->email ? u->email : "-");
	printf("node         %s%s\n", s->node ? s->node : "this server (URL from the request)",
	       u->node ? "" : "  (default)");
	show_usage(s);
	printf("alert        %s\n", u->alert ? u->alert : "-");
	format_utc(u->created, when, sizeof when);
	printf("created      %s\n", when);
	if (u->last_write > 0) {
		format_utc(u->last_write / 100, when, sizeof when);
		format_timestamp(u->last_write, last, sizeof last);
		printf("last write   %s (%s)\n", when, last);
	} else {
		printf("last write   never\n");
	}
	show_collections(s);
}

int cmd_user_show(const struct args *a)
{
	struct user u;
	struct show_ctx s = { 0 };
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	rc = show_read(&u, &s);
	if (rc == EXIT_OK) {
		if (has_opt(a, OPT_JSON))
			show_json(&u, &s);
		else
			show_text(&u, &s);
		json_object_put(s.collections);
	}
	user_free(&u);
	return rc;
}

/* ---- settings of one account ------------------------------------------------------ */

/* Report the outcome of a setter. */
static int setter_done(enum db_status st, const struct user *u, const char *what)
{
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such user: %s (deleted meanwhile)", u->username);
	if (st != DB_OK)
		return db_fail(st, what);
	return EXIT_OK;
}

int cmd_user_email(const struct args *a)
{
	struct user u;
	bool clear = has_opt(a, OPT_CLEAR);
	if ((a->npos == 2) == clear)
		return usage_error("give either an ADDRESS or --clear");
	if (!clear && !validate_email(a->pos[1], strlen(a->pos[1])))
		return usage_error("'%s' is not a valid e-mail address", a->pos[1]);
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = clear ? db_user_clear_email(u.id)
				  : db_user_set_email(u.id, a->pos[1]);
	rc = setter_done(st, &u, "setting the e-mail address");
	if (rc == EXIT_OK && clear)
		printf("e-mail address of %s removed\n", u.username);
	else if (rc == EXIT_OK)
		printf("e-mail address of %s set to %s\n", u.username, a->pos[1]);
	user_free(&u);
	return rc;
}

static int add_usage(void *ctx, const char *collection, size_t len, int64_t records,
		     int64_t bytes, int64_t modified)
{
	(void)collection;
	(void)len;
	(void)records;
	(void)modified;
	*(int64_t *)ctx += bytes;
	return 0;
}

int cmd_user_quota(const struct args *a)
{
	struct user u;
	int64_t kb;
	const char *v = a->pos[1];
	if (strcmp(v, "default") == 0)
		kb = -1;
	else if (strcmp(v, "none") == 0)
		kb = 0;
	else if (parse_int64(v, 0, INT64_MAX / 1024, &kb) < 0)
		return usage_error("the quota is a number of KB, 'default' or 'none', "
				   "not '%s'", v);
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	rc = setter_done(db_user_set_quota(u.id, kb), &u, "setting the quota");
	if (rc == EXIT_OK && kb < 0)
		printf("quota of %s follows the default (quota_kb = %" PRId64 ")\n",
		       u.username, admin_cfg.quota_kb);
	else if (rc == EXIT_OK && kb == 0)
		printf("%s has no quota\n", u.username);
	else if (rc == EXIT_OK)
		printf("quota of %s set to %" PRId64 " KB\n", u.username, kb);
	int64_t limit = kb < 0 ? admin_cfg.quota_kb : kb, used = 0;
	db_use(records_place(&u));
	if (rc == EXIT_OK && limit > 0 &&
	    db_admin_user_collections(u.id, now_centiseconds(), add_usage, &used) == DB_OK &&
	    (used + 1023) / 1024 > limit)
		fprintf(stderr, "weave-admin: warning: %s already stores %" PRId64 " KB, above "
			"the quota of %" PRId64 " KB: every write but deletes gets 400 "
			"until it deletes data\n", u.username, (used + 1023) / 1024, limit);
	user_free(&u);
	return rc;
}

static int set_status(const struct args *a, int status)
{
	struct user u;
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	rc = setter_done(db_user_set_status(u.id, status), &u, "changing the status");
	if (rc == EXIT_OK)
		printf("user %s %s\n", u.username, status ? "enabled" : "disabled");
	user_free(&u);
	return rc;
}

int cmd_user_disable(const struct args *a)
{
	return set_status(a, 0);
}

int cmd_user_enable(const struct args *a)
{
	return set_status(a, 1);
}

/* Header-safe text: valid UTF-8 without control characters. */
static bool alert_ok(const char *s, size_t len)
{
	if (len == 0 || len > ALERT_MAX || !validate_utf8(s, len))
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int cmd_user_alert(const struct args *a)
{
	struct user u;
	bool clear = has_opt(a, OPT_CLEAR);
	if ((a->npos == 2) == clear)
		return usage_error("give either a TEXT or --clear");
	if (!clear && !alert_ok(a->pos[1], strlen(a->pos[1])))
		return usage_error("the alert must be 1-%d bytes of UTF-8 text without "
				   "control characters (it is sent as an HTTP header)",
				   ALERT_MAX);
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	rc = setter_done(db_user_set_alert(u.id, clear ? NULL : a->pos[1]), &u,
			 "setting the alert");
	if (rc == EXIT_OK)
		printf("alert of %s %s\n", u.username, clear ? "removed" : "set");
	user_free(&u);
	return rc;
}

int cmd_user_node(const struct args *a)
{
	struct user u;
	char url[NODE_URL_MAX + 1];
	bool reset = strcmp(a->pos[1], "default") == 0;
	if (!reset && node_url_normalise(a->pos[1], url, sizeof url) < 0)
		return usage_error("the node is an http:// or https:// URL (at most %d "
				   "characters) or 'default', not '%s'",
				   NODE_URL_MAX, a->pos[1]);
	int rc = find_user(a->pos[0], &u);
	if (rc == EXIT_OK && (rc = node_change_allowed(&u, reset ? NULL : url)) != EXIT_OK)
		user_free(&u);
	if (rc != EXIT_OK)
		return rc;
	rc = setter_done(db_user_set_node(u.id, reset ? NULL : url), &u,
			 "setting the node");
	if (rc == EXIT_OK && reset)
		printf("%s now uses this server (public_url)\n", u.username);
	else if (rc == EXIT_OK)
		printf("%s now uses node %s\n", u.username, url);
	user_free(&u);
	return rc;
}
