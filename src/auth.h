/*
 * auth.h - HTTP Basic credentials: finding the header, decoding it
 * into a fixed-size buffer, mapping e-mail logins. What a verified
 * password leaves behind is account_cache.h's.
 *
 * Credentials are hazardous: struct credentials lives on the stack of
 * the gate and is wiped with auth_credentials_wipe() on every path.
 */
#ifndef WEAVE_AUTH_H
#define WEAVE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

struct request;

#define AUTH_HEADER_MAX 2048
#define AUTH_USER_MAX 255
#define AUTH_PASSWORD_MAX 1024

struct credentials {
	char username[AUTH_USER_MAX + 1]; /* lower-cased; e-mails mapped */
	size_t username_len;
	char password[AUTH_PASSWORD_MAX * 2 + 1]; /* UTF-8 (Latin-1 converted) */
	size_t password_len;
};

enum auth_parse_status {
	AUTH_PARSE_OK,
	AUTH_PARSE_MISSING,   /* no Authorization header at all */
	AUTH_PARSE_NOT_BASIC, /* another scheme */
	AUTH_PARSE_MALFORMED, /* bad base64, no colon, empty user, NUL bytes */
	AUTH_PARSE_TOO_LONG,
	AUTH_PARSE__MAX
};

/*
 * The raw Authorization value from HTTP_AUTHORIZATION, Authorization,
 * AUTHORIZATION or REDIRECT_HTTP_AUTHORIZATION (first found); *source
 * names the variable. NULL when absent.
 */
const char *auth_find_header(const struct request *req, const char **source);

/*
 * Decode "Basic <base64>" into *out: split on the first ':', lower-case
 * the user, map a user containing '@' to its Sync 1.1 hashed name, and
 * convert a password that is not valid UTF-8 from Latin-1.
 */
enum auth_parse_status auth_parse_basic(const char *header,
					struct credentials *out);

const char *auth_parse_status_text(enum auth_parse_status st);

/* lower(base32(sha1(lower(email)))), 32 characters; out holds 33 bytes. */
void auth_email_to_username(const char *email, size_t len, char out[33]);

/*
 * Convert bytes that are not valid UTF-8 from Latin-1 into out (capacity
 * at least 2 * len + 1); valid UTF-8 is copied unchanged. Returns the
 * output length.
 */
size_t auth_password_to_utf8(const char *in, size_t len, char *out);

/* Wipe what auth_parse_basic() wrote into *c: each string up to its
 * length and NUL (the rest it left zero). */
void auth_credentials_wipe(struct credentials *c);

#endif
