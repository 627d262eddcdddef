/*
 * db_user.h - rows of the users table. No HTTP here.
 *
 * struct user owns its strings; user_free() releases them.
 */
#ifndef WEAVE_DB_USER_H
#define WEAVE_DB_USER_H

#include <stdint.h>

#include "db.h"

struct user {
	int64_t id;
	char username[33];
	char *password_hash;
	char *email;
	int status;       /* 1 enabled, 0 disabled */
	int64_t quota_kb; /* -1: the configured default */
	char *node;       /* NULL: the configured public URL */
	char *alert;
	int64_t last_write;
	int64_t created;
};

enum user_lock {
	USER_LOCK_NONE,
	USER_LOCK_SHARED,    /* waits for a writer of this user to finish */
	USER_LOCK_EXCLUSIVE, /* inside a transaction: serialises this user's writes */
};

/* DB_OK and *out filled, DB_NOT_FOUND, or a failure. */
enum db_status db_user_get(const char *username, enum user_lock lock,
			   struct user *out);
enum db_status db_user_exists(const char *username, int *exists);
/* DB_CONFLICT when the name is taken. */
enum db_status db_user_create(const char *username, const char *password_hash,
			      const char *email, int64_t *id);
/* Removes the user's records and the account; run inside a transaction. */
enum db_status db_user_delete(int64_t id);
enum db_status db_user_set_password(int64_t id, const char *password_hash);
enum db_status db_user_set_last_write(int64_t id, int64_t timestamp);

typedef int (*db_user_fn)(void *ctx, const struct user *u, int64_t records,
			  int64_t bytes);
/* Every user in name order, with record count and stored bytes. */
enum db_status db_user_list(db_user_fn fn, void *ctx);

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

void user_free(struct user *u);

#endif
