/*
 * db_user.h - rows of the users table. No HTTP here.
 *
 * struct user owns its strings; user_free() releases them.
 */
#ifndef WEAVE_DB_USER_H
#define WEAVE_DB_USER_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"

/*
 * users.status. A moving account (weave-admin user move, docs/shards.md)
 * logs in and uses the User API as an enabled one; its storage requests
 * answer 503 + Retry-After while its last records are copied.
 */
#define USER_STATUS_DISABLED 0
#define USER_STATUS_ENABLED 1
#define USER_STATUS_MOVING 2

struct user {
	int64_t id;
	char username[33];
	char *password_hash;
	char *email;
	int status;       /* USER_STATUS_* */
	int64_t quota_kb; /* -1: the configured default */
	char *node;       /* NULL: the configured public URL */
	char *alert;
	int64_t last_write;
	int64_t created;
};

/* Do two users.node values name the same node (NULL: public_url)? */
bool user_node_equal(const char *a, const char *b);

enum user_lock {
	USER_LOCK_NONE,
	USER_LOCK_SHARED,    /* waits for a writer of this user to finish */
	USER_LOCK_EXCLUSIVE, /* inside a transaction: serialises this user's writes */
};

/* DB_OK and *out filled, DB_NOT_FOUND, or a failure. */
enum db_status db_user_get(const char *username, enum user_lock lock,
			   struct user *out);
enum db_status db_user_exists(const char *username, int *exists);

/*
 * The throttle rows a login is subject to (throttle.h), as subjects
 * ("" where none applies): the account's daily count, the client
 * address's count, and the account-and-address pair's count and mark of
 * a recent correct login.
 */
struct login_subjects {
	const char *name;
	const char *address;
	const char *pair;
	char address_buf[64];
	char pair_buf[33 + 64]; /* "name address" */
};

/* What those rows say at the time of the login (seconds; 0: none). */
struct login_counters {
	bool name_counted;            /* the account has failures on record */
	int64_t name_locked_until;    /* its daily count is spent until then */
	int64_t address_locked_until;
	bool pair_counted;            /* this pair has failures on record */
	int64_t pair_locked_until;
	int64_t known_until;          /* a correct login from here keeps it known until */
};

/* The account's verifier in login_verifiers (shared_credential.h). */
struct login_verifier {
	bool found;
	unsigned char mac[32];
	int64_t made; /* seconds, the clock of the web server that made it */
};

/*
 * db_user_get() for a login: the same row and lock, plus the live
 * throttle rows of the login's subjects at `now` (seconds), and with
 * verifier non-NULL the account's shared verifier (never locked), all in
 * one round trip so a login costs no extra query. DB_OK, or DB_NOT_FOUND
 * for an unknown name; *counters (and *verifier) filled in both cases.
 * Pass a verifier only when db_user_verifiers_ready().
 */
enum db_status db_user_get_login(const char *username, enum user_lock lock,
				 const struct login_subjects *subjects, int64_t now,
				 struct user *out, struct login_counters *counters,
				 struct login_verifier *verifier);

/*
 * Whether the database has login_verifiers (schema version 5 or later;
 * before 'weave-admin db upgrade' it has not). Asked at most every 5 s
 * until it has, then known for the process's life.
 */
bool db_user_verifiers_ready(void);

/*
 * Store (or replace) the account's shared verifier. Its own short
 * statement, outside any transaction: it touches no users row, so no
 * trigger of the change log fires and no account generation moves.
 */
enum db_status db_user_put_verifier(int64_t id, const unsigned char mac[32], int64_t made);
/*
 * DB_CONFLICT when the name is taken. node is the account's storage node
 * URL (see db_node_pick()), NULL for this server's public_url.
 */
enum db_status db_user_create(const char *username, const char *password_hash,
			      const char *email, const char *node, int64_t *id);
/* Removes the user's records, shared verifier and the account; run inside
 * a transaction. */
enum db_status db_user_delete(int64_t id);
/* Also deletes the account's shared verifier (dead anyway: the hash changed). */
enum db_status db_user_set_password(int64_t id, const char *password_hash);
enum db_status db_user_set_last_write(int64_t id, int64_t timestamp);

typedef int (*db_user_fn)(void *ctx, const struct user *u, int64_t records,
			  int64_t bytes);

enum db_status db_user_set_email(int64_t id, const char *email);

/*
 * Password-reset codes: one per user, stored as the SHA-256 of the code.
 * db_reset_take() deletes a matching unexpired code (single use) and
 * answers DB_OK, or DB_NOT_FOUND for a wrong or expired one.
 */
enum db_status db_reset_store(int64_t user_id, const unsigned char hash[32],
			      int64_t expires);
enum db_status db_reset_take(int64_t user_id, const unsigned char hash[32],
			     int64_t now);
enum db_status db_reset_clear(int64_t user_id);

/* Registrations from `address` since `since`, and recording one. */
enum db_status db_registrations_since(const char *address, int64_t since,
				      int64_t *count);
enum db_status db_registration_record(const char *address, int64_t now,
				      int64_t forget_before);

/* A copy of from's row whose strings are its own (user_free() it). */
void user_copy(struct user *to, const struct user *from);
void user_free(struct user *u);

/* ---- for weave-admin (and db_node_pick for account creation) ---------- */

/*
 * Choose the storage node for a new account (docs/protocol.md, Storage
 * nodes): the node of the nodes table that has room (fewer accounts than
 * its capacity, or no capacity) and the fewest accounts, ties by age then
 * URL. *url gets a malloc'd URL ending in '/', or NULL when the nodes
 * table is empty, which means this server's public_url. DB_NOT_FOUND
 * when nodes exist but every one is full. Concurrent sign-ups may
 * overshoot a capacity by a few accounts.
 */
enum db_status db_node_pick(char **url);

enum user_status_filter { USER_ANY, USER_ENABLED, USER_DISABLED };

enum user_sort {
	USER_SORT_NAME,     /* username */
	USER_SORT_USAGE,    /* stored bytes, largest first */
	USER_SORT_ACTIVITY, /* last write, most recent first */
	USER_SORT__MAX
};

struct user_filter {
	enum user_status_filter status;
	const char *name_like; /* SQL LIKE pattern on the username, or NULL */
	const char *node;      /* only accounts on this node URL; "" = on the
				  default node (no node set); NULL = any */
	enum user_sort sort;
	int64_t limit;         /* 0: no limit */
	int64_t now;           /* centiseconds: records expired by then are not counted */
};

/* Users with record count and stored bytes, restricted, sorted and limited by f. */
enum db_status db_user_search(const struct user_filter *f, db_user_fn fn,
			      void *ctx);

/* Column setters. DB_NOT_FOUND when no account has that id. */
enum db_status db_user_set_status(int64_t id, int status);
/* quota_kb -1: the configured default (NULL); 0: no quota. */
enum db_status db_user_set_quota(int64_t id, int64_t quota_kb);
/* NULL clears the alert / the node (back to public_url). */
enum db_status db_user_set_alert(int64_t id, const char *alert);
enum db_status db_user_set_node(int64_t id, const char *node);
enum db_status db_user_clear_email(int64_t id);
/*
 * last_write = max(last_write + 1, at_least): a change of the account's
 * records made outside a request (import, migrate) moves last_write too,
 * as every write does, so what is keyed by it (account_cache.h) sees it.
 */
enum db_status db_user_raise_last_write(int64_t id, int64_t at_least);

#endif
