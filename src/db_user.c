/* db_user.c - SQL for the users table. */
#include "db_user.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "change_board.h"
#include "db_storage.h"
#include "db_schema.h"
#include "db_throttle.h"
#include "util.h"

enum user_stmt {
	USER_GET,
	USER_GET_SHARED,
	USER_GET_EXCLUSIVE,
	USER_EXISTS,
	USER_INSERT,
	USER_DELETE,
	USER_SET_PASSWORD,
	USER_SET_LAST_WRITE,
	USER_SET_EMAIL,
	RESET_STORE,
	RESET_TAKE,
	RESET_CLEAR,
	REGISTRATIONS_SINCE,
	REGISTRATION_RECORD,
	REGISTRATION_FORGET,
	USER_LOGIN,
	USER_LOGIN_SHARED,
	USER_LOGIN_EXCLUSIVE,
	USER_LOGIN_VERIFIER,
	USER_LOGIN_VERIFIER_SHARED,
	USER_LOGIN_VERIFIER_EXCLUSIVE,
	VERIFIER_PUT,
	VERIFIER_DELETE,
	USER_STMT__MAX
};

#define USER_COLUMNS \
	"SELECT id, username, password_hash, email, status, quota_kb, node, " \
	"alert, last_write, created FROM users WHERE username = ?"

/*
 * The login's read: the user row (NULLs for an unknown name, thanks to
 * the one-row derived table) and the login's throttle rows: the lock ends
 * of the account's daily count, of the address and of the pair, and the
 * end of the pair's "known" mark. The row lock covers the users row only;
 * subqueries read without locking. Parameters: kind, subject, now (four
 * times), then the name.
 */
#define THROTTLE_COLUMN(what) \
	"(SELECT t." what " FROM throttle t WHERE t.kind = ? AND " \
	"t.subject = ? AND t.expires > ?)"
#define USER_LOGIN_COLUMNS \
	"SELECT u.id, u.username, u.password_hash, u.email, u.status, " \
	"u.quota_kb, u.node, u.alert, u.last_write, u.created, " \
	THROTTLE_COLUMN("locked_until") ", " \
	THROTTLE_COLUMN("locked_until") ", " \
	THROTTLE_COLUMN("locked_until") ", " \
	THROTTLE_COLUMN("expires")
#define USER_LOGIN_FROM " FROM (SELECT 1) AS one LEFT JOIN users u ON u.username = ?"
#define USER_LOGIN_READ USER_LOGIN_COLUMNS USER_LOGIN_FROM
/*
 * The same with the account's shared verifier (login_verifiers, schema
 * version 5) as two more columns: subqueries, so that the row lock of a
 * write never covers the verifier, whose writers take no users lock.
 */
#define VERIFIER_COLUMN(what) \
	", (SELECT v." what " FROM login_verifiers v WHERE v.user_id = u.id)"
#define USER_LOGIN_VERIFIER_READ \
	USER_LOGIN_COLUMNS VERIFIER_COLUMN("mac") VERIFIER_COLUMN("made") USER_LOGIN_FROM

static const char *const user_sql[USER_STMT__MAX] = {
	[USER_GET] = USER_COLUMNS,
	[USER_GET_SHARED] = USER_COLUMNS " LOCK IN SHARE MODE",
	[USER_GET_EXCLUSIVE] = USER_COLUMNS " FOR UPDATE",
	[USER_EXISTS] = "SELECT 1 FROM users WHERE username = ?",
	[USER_INSERT] = "INSERT INTO users (username, password_hash, email, "
			"node, created) VALUES (?, ?, ?, ?, ?)",
	[USER_DELETE] = "DELETE FROM users WHERE id = ?",
	[USER_SET_PASSWORD] = "UPDATE users SET password_hash = ? WHERE id = ?",
	[USER_SET_LAST_WRITE] = "UPDATE users SET last_write = ? WHERE id = ?",
	[USER_SET_EMAIL] = "UPDATE users SET email = ? WHERE id = ?",
	[RESET_STORE] = "REPLACE INTO reset_codes (user_id, code_hash, expires) "
			"VALUES (?, ?, ?)",
	[RESET_TAKE] = "DELETE FROM reset_codes WHERE user_id = ? AND "
		       "code_hash = ? AND expires > ?",
	[RESET_CLEAR] = "DELETE FROM reset_codes WHERE user_id = ?",
	[REGISTRATIONS_SINCE] = "SELECT COUNT(*) FROM registration_log "
				"WHERE address = ? AND created > ?",
	[REGISTRATION_RECORD] = "INSERT INTO registration_log (address, created) "
				"VALUES (?, ?)",
	[REGISTRATION_FORGET] = "DELETE FROM registration_log WHERE created < ? "
				"LIMIT 1000",
	/* The login's statements (bench/dbceiling.c runs them through
	 * db_user_get_login()). */
	[USER_LOGIN] = USER_LOGIN_READ,
	[USER_LOGIN_SHARED] = USER_LOGIN_READ " LOCK IN SHARE MODE",
	[USER_LOGIN_EXCLUSIVE] = USER_LOGIN_READ " FOR UPDATE",
	[USER_LOGIN_VERIFIER] = USER_LOGIN_VERIFIER_READ,
	[USER_LOGIN_VERIFIER_SHARED] = USER_LOGIN_VERIFIER_READ " LOCK IN SHARE MODE",
	[USER_LOGIN_VERIFIER_EXCLUSIVE] = USER_LOGIN_VERIFIER_READ " FOR UPDATE",
	/* Its own statement, after the KDF and outside any transaction. */
	[VERIFIER_PUT] = "INSERT INTO login_verifiers (user_id, mac, made) VALUES (?, ?, ?) "
			 "ON DUPLICATE KEY UPDATE mac = VALUES(mac), made = VALUES(made)",
	[VERIFIER_DELETE] = "DELETE FROM login_verifiers WHERE user_id = ?",
};

bool user_node_equal(const char *a, const char *b)
{
	return (a == NULL || b == NULL) ? a == b : strcmp(a, b) == 0;
}

static char *dup_value(const struct db_value *v)
{
	return v->is_null ? NULL : xstrndup(v->s, v->len);
}

static void fill_user(struct user *u, const struct db_value *row)
{
	memset(u, 0, sizeof *u);
	u->id = row[0].i;
	size_t n = row[1].len < sizeof u->username ? row[1].len
						   : sizeof u->username - 1;
	memcpy(u->username, row[1].s, n);
	u->username[n] = '\0';
	u->password_hash = dup_value(&row[2]);
	u->email = dup_value(&row[3]);
	u->status = (int)row[4].i;
	u->quota_kb = row[5].is_null ? -1 : row[5].i;
	u->node = dup_value(&row[6]);
	u->alert = dup_value(&row[7]);
	u->last_write = row[8].i;
	u->created = row[9].i;
}

struct get_ctx {
	struct user *out;
	int found;
};

static int get_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct get_ctx *g = ctx;
	(void)ncols;
	fill_user(g->out, row);
	g->found = 1;
	return 1;
}

enum db_status db_user_get(const char *username, enum user_lock lock,
			   struct user *out)
{
	static const enum user_stmt by_lock[] = {
		[USER_LOCK_NONE] = USER_GET,
		[USER_LOCK_SHARED] = USER_GET_SHARED,
		[USER_LOCK_EXCLUSIVE] = USER_GET_EXCLUSIVE,
	};
	struct get_ctx g = { out, 0 };
	struct db_param p[] = { DB_CSTR(username) };
	memset(out, 0, sizeof *out);
	enum db_status st = db_run(user_sql[by_lock[lock]], p, 1, get_row, &g, NULL);
	if (st != DB_OK)
		return st;
	return g.found ? DB_OK : DB_NOT_FOUND;
}

struct login_ctx {
	struct user *out;
	struct login_counters *counters;
	struct login_verifier *verifier;
	bool found;
};

static void fill_verifier(struct login_verifier *v, const struct db_value *row)
{
	v->found = !row[0].is_null && !row[1].is_null && row[0].len == sizeof v->mac;
	if (v->found) {
		memcpy(v->mac, row[0].s, sizeof v->mac);
		v->made = row[1].i;
	}
}

static int login_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct login_ctx *l = ctx;
	if (!row[0].is_null) {
		fill_user(l->out, row);
		l->found = true;
	}
	struct login_counters *c = l->counters;
	c->name_counted = !row[10].is_null;
	c->name_locked_until = row[10].is_null ? 0 : row[10].i;
	c->address_locked_until = row[11].is_null ? 0 : row[11].i;
	c->pair_counted = !row[12].is_null;
	c->pair_locked_until = row[12].is_null ? 0 : row[12].i;
	c->known_until = row[13].is_null ? 0 : row[13].i;
	if (l->verifier != NULL && l->found && ncols >= 16)
		fill_verifier(l->verifier, &row[14]);
	return 1;
}

enum db_status db_user_get_login(const char *username, enum user_lock lock,
				 const struct login_subjects *subjects, int64_t now,
				 struct user *out, struct login_counters *counters,
				 struct login_verifier *verifier)
{
	static const enum user_stmt by_lock[][3] = {
		{ [USER_LOCK_NONE] = USER_LOGIN,
		  [USER_LOCK_SHARED] = USER_LOGIN_SHARED,
		  [USER_LOCK_EXCLUSIVE] = USER_LOGIN_EXCLUSIVE },
		{ [USER_LOCK_NONE] = USER_LOGIN_VERIFIER,
		  [USER_LOCK_SHARED] = USER_LOGIN_VERIFIER_SHARED,
		  [USER_LOCK_EXCLUSIVE] = USER_LOGIN_VERIFIER_EXCLUSIVE },
	};
	struct login_ctx l = { out, counters, verifier, false };
	struct db_param p[] = {
		DB_INT(THROTTLE_LOGIN_USER),	DB_CSTR(subjects->name),    DB_INT(now),
		DB_INT(THROTTLE_LOGIN_ADDRESS), DB_CSTR(subjects->address), DB_INT(now),
		DB_INT(THROTTLE_LOGIN_PAIR),	DB_CSTR(subjects->pair),    DB_INT(now),
		DB_INT(THROTTLE_LOGIN_KNOWN),	DB_CSTR(subjects->pair),    DB_INT(now),
		DB_CSTR(username),
	};
	memset(out, 0, sizeof *out);
	memset(counters, 0, sizeof *counters);
	if (verifier != NULL)
		memset(verifier, 0, sizeof *verifier);
	enum db_status st = db_run(user_sql[by_lock[verifier != NULL][lock]], p, 13, login_row,
				   &l, NULL);
	if (st != DB_OK)
		return st;
	return l.found ? DB_OK : DB_NOT_FOUND;
}

static int exists_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)row;
	(void)ncols;
	*(int *)ctx = 1;
	return 1;
}

enum db_status db_user_exists(const char *username, int *exists)
{
	struct db_param p[] = { DB_CSTR(username) };
	*exists = 0;
	return db_run(user_sql[USER_EXISTS], p, 1, exists_row, exists, NULL);
}

enum db_status db_user_create(const char *username, const char *password_hash,
			      const char *email, const char *node, int64_t *id)
{
	struct db_param p[] = {
		DB_CSTR(username),
		DB_CSTR(password_hash),
		email ? DB_CSTR(email) : DB_NULL,
		node ? DB_CSTR(node) : DB_NULL,
		DB_INT(now_seconds()),
	};
	enum db_status st = db_run(user_sql[USER_INSERT], p, 5, NULL, NULL, NULL);
	if (st == DB_OK && id != NULL) {
		struct user u;
		st = db_user_get(username, USER_LOCK_NONE, &u);
		*id = u.id;
		user_free(&u);
	}
	return st;
}

/*
 * A statement changed account id: every process's kept row of it is stale
 * (account_cache.h). Called while the statement's row lock is held, so a
 * reader either waits for the commit or sees the new generation.
 */
static enum db_status changed(enum db_status st, int64_t id)
{
	if (st == DB_OK)
		change_board_bump(id);
	return st;
}

bool db_user_verifiers_ready(void)
{
	static bool known;
	static time_t asked_at;
	time_t now = time(NULL);
	int64_t version = 0;
	if (known || (asked_at != 0 && now - asked_at < 5 && now >= asked_at))
		return known;
	asked_at = now;
	known = db_schema_version(&version) == DB_OK && version >= DB_SCHEMA_VERIFIERS;
	return known;
}

/*
 * The account's shared verifier goes with its password or the account.
 * Before schema version 5 there is no table, and nothing to delete: the
 * server stores none then (shared_credential.c), so the statement is
 * skipped rather than failing the change during the upgrade window.
 */
static enum db_status forget_verifier(int64_t id)
{
	struct db_param p[] = { DB_INT(id) };
	if (!db_user_verifiers_ready())
		return DB_OK;
	return db_run(user_sql[VERIFIER_DELETE], p, 1, NULL, NULL, NULL);
}

enum db_status db_user_delete(int64_t id)
{
	struct db_param p[] = { DB_INT(id) };
	enum db_status st = db_storage_forget_user(id);
	if (st == DB_OK)
		st = forget_verifier(id);
	if (st != DB_OK)
		return st;
	uint64_t affected = 0;
	st = changed(db_run(user_sql[USER_DELETE], p, 1, NULL, NULL, &affected), id);
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_user_set_password(int64_t id, const char *password_hash)
{
	struct db_param p[] = { DB_CSTR(password_hash), DB_INT(id) };
	uint64_t affected = 0;
	enum db_status st = changed(
		db_run(user_sql[USER_SET_PASSWORD], p, 2, NULL, NULL, &affected), id);
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st == DB_OK ? forget_verifier(id) : st;
}

enum db_status db_user_put_verifier(int64_t id, const unsigned char mac[32], int64_t made)
{
	struct db_param p[] = { DB_INT(id), DB_STR((const char *)mac, 32), DB_INT(made) };
	return db_run(user_sql[VERIFIER_PUT], p, 3, NULL, NULL, NULL);
}

enum db_status db_user_set_last_write(int64_t id, int64_t timestamp)
{
	struct db_param p[] = { DB_INT(timestamp), DB_INT(id) };
	return changed(db_run(user_sql[USER_SET_LAST_WRITE], p, 2, NULL, NULL, NULL),
		       id);
}

struct list_ctx {
	db_user_fn fn;
	void *ctx;
};

static int list_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct list_ctx *l = ctx;
	struct user u;
	(void)ncols;
	fill_user(&u, row);
	int rc = l->fn(l->ctx, &u, row[10].i, row[11].i);
	user_free(&u);
	return rc;
}

enum db_status db_user_set_email(int64_t id, const char *email)
{
	struct db_param p[] = { DB_CSTR(email), DB_INT(id) };
	return changed(db_run(user_sql[USER_SET_EMAIL], p, 2, NULL, NULL, NULL), id);
}

enum db_status db_reset_store(int64_t user_id, const unsigned char hash[32],
			      int64_t expires)
{
	struct db_param p[] = { DB_INT(user_id), DB_STR((const char *)hash, 32),
				DB_INT(expires) };
	return db_run(user_sql[RESET_STORE], p, 3, NULL, NULL, NULL);
}

enum db_status db_reset_take(int64_t user_id, const unsigned char hash[32],
			     int64_t now)
{
	struct db_param p[] = { DB_INT(user_id), DB_STR((const char *)hash, 32),
				DB_INT(now) };
	uint64_t affected = 0;
	enum db_status st = db_run(user_sql[RESET_TAKE], p, 3, NULL, NULL, &affected);
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_reset_clear(int64_t user_id)
{
	struct db_param p[] = { DB_INT(user_id) };
	return db_run(user_sql[RESET_CLEAR], p, 1, NULL, NULL, NULL);
}

static int count_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].i;
	return 0;
}

enum db_status db_registrations_since(const char *address, int64_t since,
				      int64_t *count)
{
	struct db_param p[] = { DB_CSTR(address), DB_INT(since) };
	*count = 0;
	return db_run(user_sql[REGISTRATIONS_SINCE], p, 2, count_row, count, NULL);
}

enum db_status db_registration_record(const char *address, int64_t now,
				      int64_t forget_before)
{
	struct db_param forget[] = { DB_INT(forget_before) };
	enum db_status st = db_run(user_sql[REGISTRATION_FORGET], forget, 1, NULL,
				   NULL, NULL);
	if (st != DB_OK)
		return st;
	struct db_param p[] = { DB_CSTR(address), DB_INT(now) };
	return db_run(user_sql[REGISTRATION_RECORD], p, 2, NULL, NULL, NULL);
}

static char *copy_or_null(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

void user_copy(struct user *to, const struct user *from)
{
	*to = *from;
	to->password_hash = copy_or_null(from->password_hash);
	to->email = copy_or_null(from->email);
	to->node = copy_or_null(from->node);
	to->alert = copy_or_null(from->alert);
}

void user_free(struct user *u)
{
	free(u->password_hash);
	free(u->email);
	free(u->node);
	free(u->alert);
	u->password_hash = NULL;
	u->email = NULL;
	u->node = NULL;
	u->alert = NULL;
}

/* ---- for weave-admin (and db_node_pick for account creation) ----------- */

enum user_admin_stmt {
	NODE_COUNT,
	NODE_PICK,
	USER_SET_STATUS,
	USER_SET_QUOTA,
	USER_SET_ALERT,
	USER_SET_NODE,
	USER_CLEAR_EMAIL,
	USER_RAISE_LAST_WRITE,
	USER_ADMIN_STMT__MAX
};

static const char *const user_admin_sql[USER_ADMIN_STMT__MAX] = {
	[NODE_COUNT] = "SELECT COUNT(*) FROM nodes",
	[NODE_PICK] = "SELECT n.url FROM nodes n LEFT JOIN users u ON u.node = n.url "
		      "GROUP BY n.url, n.capacity, n.created "
		      "HAVING n.capacity IS NULL OR COUNT(u.id) < n.capacity "
		      "ORDER BY COUNT(u.id), n.created, n.url LIMIT 1",
	[USER_SET_STATUS] = "UPDATE users SET status = ? WHERE id = ?",
	[USER_SET_QUOTA] = "UPDATE users SET quota_kb = ? WHERE id = ?",
	[USER_SET_ALERT] = "UPDATE users SET alert = ? WHERE id = ?",
	[USER_SET_NODE] = "UPDATE users SET node = ? WHERE id = ?",
	[USER_CLEAR_EMAIL] = "UPDATE users SET email = NULL WHERE id = ?",
	[USER_RAISE_LAST_WRITE] =
		"UPDATE users SET last_write = GREATEST(last_write + 1, ?) WHERE id = ?",
};

static int url_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(char **)ctx = dup_value(&row[0]);
	return 1;
}

enum db_status db_node_pick(char **url)
{
	int64_t nodes = 0;
	*url = NULL;
	enum db_status st = db_run(user_admin_sql[NODE_COUNT], NULL, 0, count_row,
				   &nodes, NULL);
	if (st != DB_OK || nodes == 0)
		return st;
	st = db_run(user_admin_sql[NODE_PICK], NULL, 0, url_row, url, NULL);
	if (st == DB_OK && *url == NULL)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_user_search(const struct user_filter *f, db_user_fn fn,
			      void *ctx)
{
	static const char *const order[USER_SORT__MAX] = {
		[USER_SORT_NAME] = " ORDER BY u.username",
		[USER_SORT_USAGE] = " ORDER BY 12 DESC, u.username",
		[USER_SORT_ACTIVITY] = " ORDER BY u.last_write DESC, u.username",
	};
	struct db_param p[5];
	size_t n = 0;
	struct buf sql;
	struct list_ctx l = { fn, ctx };

	buf_init(&sql, 4096);
	/* Fixed fragments only; every value is a bound parameter. */
	buf_puts(&sql, "SELECT u.id, u.username, u.password_hash, u.email, u.status, "
		       "u.quota_kb, u.node, u.alert, u.last_write, u.created, "
		       "COUNT(w.id), CAST(COALESCE(SUM(w.payload_size), 0) AS SIGNED) "
		       "FROM users u LEFT JOIN wbo w ON w.user_id = u.id "
		       "AND w.expires > ? WHERE 1 = 1");
	p[n++] = DB_INT(f->now);
	if (f->status != USER_ANY) {
		buf_puts(&sql, " AND u.status = ?");
		p[n++] = DB_INT(f->status == USER_ENABLED ? 1 : 0);
	}
	if (f->name_like != NULL) {
		buf_puts(&sql, " AND u.username LIKE ?");
		p[n++] = DB_CSTR(f->name_like);
	}
	if (f->node != NULL && f->node[0] == '\0') {
		buf_puts(&sql, " AND u.node IS NULL");
	} else if (f->node != NULL) {
		buf_puts(&sql, " AND u.node = ?");
		p[n++] = DB_CSTR(f->node);
	}
	buf_puts(&sql, " GROUP BY u.id");
	buf_puts(&sql, order[f->sort < USER_SORT__MAX ? f->sort : USER_SORT_NAME]);
	if (f->limit > 0) {
		buf_puts(&sql, " LIMIT ?");
		p[n++] = DB_INT(f->limit);
	}
	enum db_status st = db_run(sql.data, p, n, list_row, &l, NULL);
	buf_free(&sql);
	return st;
}

static enum db_status update_one(enum user_admin_stmt which, struct db_param value,
				 int64_t id)
{
	struct db_param p[] = { value, DB_INT(id) };
	uint64_t affected = 0;
	enum db_status st =
		changed(db_run(user_admin_sql[which], p, 2, NULL, NULL, &affected), id);
	/* CLIENT_FOUND_ROWS: an unchanged row still counts as matched. */
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_user_set_status(int64_t id, int status)
{
	return update_one(USER_SET_STATUS, DB_INT(status), id);
}

enum db_status db_user_set_quota(int64_t id, int64_t quota_kb)
{
	return update_one(USER_SET_QUOTA, quota_kb < 0 ? DB_NULL : DB_INT(quota_kb), id);
}

enum db_status db_user_set_alert(int64_t id, const char *alert)
{
	return update_one(USER_SET_ALERT, alert ? DB_CSTR(alert) : DB_NULL, id);
}

enum db_status db_user_set_node(int64_t id, const char *node)
{
	return update_one(USER_SET_NODE, node ? DB_CSTR(node) : DB_NULL, id);
}

enum db_status db_user_clear_email(int64_t id)
{
	struct db_param p[] = { DB_INT(id) };
	uint64_t affected = 0;
	enum db_status st = changed(
		db_run(user_admin_sql[USER_CLEAR_EMAIL], p, 1, NULL, NULL, &affected), id);
	if (st == DB_OK && affected == 0)
		return DB_NOT_FOUND;
	return st;
}

enum db_status db_user_raise_last_write(int64_t id, int64_t at_least)
{
	return update_one(USER_RAISE_LAST_WRITE, DB_INT(at_least), id);
}
