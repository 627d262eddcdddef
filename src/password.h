/*
 * password.h - password hashing and verification.
 *
 * New hashes use scrypt from OpenSSL with the parameters in the string,
 * so the cost can be raised later without breaking old hashes:
 *     $scrypt$ln=14,r=8,p=8$<base64 salt>$<base64 key>
 * The cost (password_cost) is log2 of the work N * p: N = 2^cost up to
 * 2^14 (16 MiB of memory), p = 2^(cost - 14) above that.
 * Hashes imported from older Weave servers verify too and are reported
 * as needing a re-hash: hex MD5 (PHP 1.0, FSyncMS), bcrypt $2a$/$2b$/$2y$
 * (FSyncMS, through libxcrypt's crypt_r, cost 4-14), {SSHA} and
 * {SSHA-256} (LDAP, PHP 1.x, the Python server), and
 * $weave-minimal$<16 hex> (weave-minimal's file-name digest: the first
 * 64 bits of SHA-1 of its fixed salt and the password).
 * A stored scrypt hash is refused (PASSWORD_BAD_HASH, no KDF run) when it
 * asks for more than 32 MiB (128 * r * 2^ln), p over 64, or work
 * 128 * r * 2^ln * p over 1 GiB: a hash from elsewhere cannot make a
 * login costlier than our dearest setting.
 *
 * Passwords are byte strings (UTF-8 after auth.c's Latin-1 fallback).
 */
#ifndef WEAVE_PASSWORD_H
#define WEAVE_PASSWORD_H

#include <stddef.h>

#define PASSWORD_HASH_MAX 256

enum password_verdict {
	PASSWORD_MISMATCH,
	PASSWORD_OK,
	PASSWORD_OK_REHASH,  /* correct, but stored with a legacy or weaker scheme */
	PASSWORD_BAD_HASH,   /* the stored string is not a hash we know */
	PASSWORD__MAX
};

/*
 * Hash password with scrypt at cost (10-20; see above) into out
 * (PASSWORD_HASH_MAX bytes). Returns 0, or -1 if OpenSSL fails.
 */
int password_hash(const char *password, size_t len, int cost, char *out,
		  size_t outlen);

/*
 * Check password against a stored hash string in time independent of
 * where the first difference lies. want_cost is the current cost:
 * a scrypt hash of less work reports PASSWORD_OK_REHASH.
 */
enum password_verdict password_verify(const char *password, size_t len,
				      const char *stored, int want_cost);

/*
 * Whether password_verify() could use a stored hash, without running
 * it: NULL, or a static sentence saying why not (unknown scheme, scrypt
 * or bcrypt parameters over the caps above, malformed). For migrate and
 * import, which must not copy a hash no login could use.
 */
const char *password_hash_problem(const char *stored);

/*
 * Password strength rule (docs/protocol.md, User API, step 5 of the
 * create; why: Decisions: User API): at least 8 bytes and not equal to
 * the username (case-insensitive, surrounding blanks ignored).
 */
int password_is_strong(const char *password, size_t len, const char *username);

/* The longest password a login can carry (auth.h AUTH_PASSWORD_MAX). */
#define PASSWORD_NEW_MAX 1024

enum new_password_verdict {
	NEW_PASSWORD_OK,
	NEW_PASSWORD_EMPTY,
	NEW_PASSWORD_WEAK,     /* under 8 bytes, or the user name */
	NEW_PASSWORD_TOO_LONG, /* no login could send it */
	NEW_PASSWORD_NUL,      /* a NUL byte: no login could send it either */
};

/*
 * The one rule for a new password, wherever it is set (registration, a
 * change through the API or the reset page, weave-admin, migrate):
 * password_is_strong(), and sendable by a login.
 */
enum new_password_verdict password_check_new(const char *password, size_t len,
					     const char *username);

/* A sentence for people (pages, weave-admin) saying what is wrong. */
const char *password_check_text(enum new_password_verdict v);

#endif
