/*
 * kdf_gate.h - the password KDF, single-flight and bounded per host.
 *
 * The KDF (scrypt, ~0.2 s of a core) is the cost of a cold login. Two
 * rules keep a herd of cold logins (a restart, the top of the hour, an
 * attacker's guesses) from costing more than it must:
 *  - single flight: a password is verified at most once per account per
 *    host at a time. The first process to need it claims it (an entry in
 *    the shared file's claims table, keyed by the verifier MAC of
 *    account_cache.h, so a claim says nothing without the key); the
 *    others wait for its verdict, and find the credential in the account
 *    cache when it was right. Claims are apart from the cache: a login
 *    whose credential is already verified never reaches them, so an
 *    owner never waits behind an attacker's guesses;
 *  - a bound: at most max_concurrent_kdf KDFs run on the host at once
 *    (slots in the shared file; a slot of a dead process is taken over).
 *    A login that finds none free within KDF_WAIT_MS (a few KDFs' time:
 *    a burst drains, a herd does not) is answered 503 with Retry-After:
 *    KDF_RETRY_AFTER (and that X-Weave-Backoff): a long queue would only
 *    make every login slow.
 * Without the shared file each process claims and bounds for itself.
 */
#ifndef WEAVE_KDF_GATE_H
#define WEAVE_KDF_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache_key.h"
#include "db_user.h"

#define KDF_WAIT_MS 500
#define KDF_RETRY_AFTER 3

/* Set the bound (0: the number of online cores). */
void kdf_gate_init(int64_t max_concurrent);

/* A slot of the bound: -1 if none came free within KDF_WAIT_MS (counted). */
int kdf_gate_enter(void);
void kdf_gate_leave(int slot);

/* A claim on (account, stored hash, password). */
struct kdf_claim {
	unsigned char key[CACHE_MAC_BYTES];
	bool held;
};

/*
 * Before verifying password for u (a current row) with the KDF: true if
 * another process verified it meanwhile (the account cache now vouches
 * for it; no KDF needed). Otherwise false, and claim->held says whether
 * this process holds the claim (it may not: the wait of up to 3 s ran
 * out, or the key failed); call kdf_gate_unclaim() after the KDF, once
 * a right password is in the account cache, so that waiters find it.
 */
bool kdf_gate_claim(const struct user *u, const char *password, size_t len,
		    struct kdf_claim *claim);
void kdf_gate_unclaim(struct kdf_claim *claim);

#endif
