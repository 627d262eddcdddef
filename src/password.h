/*
 * password.h - password hashing and verification.
 *
 * New hashes use scrypt from OpenSSL with the parameters in the string,
 * so the cost can be raised later without breaking old hashes:
 *     $scrypt$ln=14,r=8,p=8$<base64 salt>$<base64 key>
 * The cost (password_cost) is log2 of the work N * p: N = 2^cost up to
 * 2^14 (16 MiB of memory), p = 2^(cost - 14) above that.
 * Hashes imported from older Weave servers verify too and are reported
 * as needing a re-hash: hex MD5 (PHP 1.0, Weave Minimal, FSyncMS),
 * {SSHA} and {SSHA-256} (LDAP, PHP 1.x, the Python server).
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
 * Password strength rule of PROTOCOL.md A.3: at least 8 bytes and not
 * equal to the username (case-insensitive, surrounding blanks ignored).
 */
int password_is_strong(const char *password, size_t len, const char *username);

#endif
