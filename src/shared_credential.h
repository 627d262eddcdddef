/*
 * shared_credential.h - verified passwords shared by every web server
 * through the database, so that a login no host has seen (an Apache
 * restart, a new cache file, another front-end of a cluster) does not pay
 * the password KDF again.
 *
 * When the KDF accepts a password, the login also stores the account's
 * verifier in login_verifiers: MAC(id, fingerprint of the stored hash,
 * password) under a key derived from cache_secret in process memory
 * (cache_key.h; never in the database, never in the cache file), and when
 * it was made. The login's read of the user row brings the verifier with
 * it (db_user_get_login(), no extra round trip). On a login the host's
 * account cache does not vouch for, a verifier vouches for the password
 * when:
 *  - it was made less than auth_cache_seconds ago (and not more than
 *    SHARED_CREDENTIAL_SKEW seconds in the future of this host's clock:
 *    web servers' clocks differ a little, never by a day);
 *  - its MAC equals the MAC of the row in hand and the given password.
 * The row in hand is current (read now, by a write under its lock), so a
 * new password (new hash, new fingerprint) fails the MAC at once, and a
 * deleted, disabled or locked account is refused by its row before any
 * credential is asked. Wrong passwords are never stored. A hit is then
 * kept in the host's account cache as if the KDF had run at the
 * verifier's making, so one KDF is trusted at most auth_cache_seconds on
 * every host.
 *
 * On only with cache_secret set (a key of its own per process could not
 * be shared), shared_credentials on (the default) and auth_cache_seconds
 * above 0, and once the schema has the table (db_user_verifiers_ready()).
 * What it trades: docs/security.md, "Verifiers in the database".
 */
#ifndef WEAVE_SHARED_CREDENTIAL_H
#define WEAVE_SHARED_CREDENTIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db_user.h"

struct config;

/* Seconds a verifier may be dated ahead of this host's clock. */
#define SHARED_CREDENTIAL_SKEW 300

/* Read the settings; after cache_key_init(). */
void shared_credential_init(const struct config *cfg);

/* Should this login read (and may it store) verifiers? */
bool shared_credential_wanted(void);

/* Is a verifier made at made (seconds) young enough at now for ttl? Pure. */
bool shared_credential_fresh(int64_t made, int64_t now, int64_t ttl);

/*
 * Does v (read with u, a current row) vouch for password at now
 * (seconds)? On a hit, the host's account cache keeps the credential
 * (account_cache_credential_put) and the board counts it.
 */
bool shared_credential_vouches(const struct user *u, const struct login_verifier *v,
			       const char *password, size_t len, int64_t now);

/*
 * The KDF accepted password for u's stored hash: store the verifier,
 * made at now (seconds). Its own statement: call it with no transaction
 * open. A failure is logged and otherwise ignored (the next login runs
 * the KDF).
 */
void shared_credential_put(const struct user *u, const char *password, size_t len,
			   int64_t now);

#endif
