/* kdf_gate.c - one KDF per account and password per host, and a bound on KDFs at once (kdf_gate.h). */
#include "kdf_gate.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "account_cache.h"
#include "change_board.h"
#include "shared_table.h"
#include "util.h"

#define CLAIM_SECONDS 3      /* a claim lasts at most this */
#define WAIT_STEP_US 2000 /* how often a waiter looks again */

static int bound = 1;

void kdf_gate_init(int64_t max_concurrent)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	bound = max_concurrent > 0 ? (int)max_concurrent : cores > 0 ? (int)cores : 1;
}

int kdf_gate_enter(void)
{
	for (int waited = 0; waited * WAIT_STEP_US < KDF_WAIT_MS * 1000; waited++) {
		int slot = change_board_kdf_enter(bound, now_seconds());
		if (slot >= 0)
			return slot;
		sleep_micros(WAIT_STEP_US);
	}
	change_board_count(BOARD_KDF_BUSY);
	return -1;
}

void kdf_gate_leave(int slot)
{
	change_board_kdf_leave(slot);
}

static uint64_t tag_of(const unsigned char key[CACHE_MAC_BYTES])
{
	uint64_t tag;
	memcpy(&tag, key, sizeof tag);
	return tag != 0 ? tag : 1;
}

/* The pid holding key's claim, 0 if none. */
static uint64_t holder(const struct kdf_claim *c, int64_t now)
{
	uint64_t e[BOARD_CLAIM_WORDS];
	uint64_t pid = 0;
	if (shared_table_get(change_board_table(BOARD_CLAIMS), tag_of(c->key), now, e) &&
	    bytes_equal_const_time(e, c->key, CACHE_MAC_BYTES))
		pid = e[4];
	OPENSSL_cleanse(e, sizeof e);
	return pid;
}

/* Take key's claim if nobody holds it, or its holder died. */
static bool take(struct kdf_claim *c, uint64_t seen, int64_t now)
{
	uint64_t e[BOARD_CLAIM_WORDS] = { 0 };
	struct shared_table *t = change_board_table(BOARD_CLAIMS);
	memcpy(e, c->key, CACHE_MAC_BYTES);
	e[4] = (uint64_t)getpid();
	if (seen == 0)
		c->held = shared_table_add(t, tag_of(c->key), now + CLAIM_SECONDS, now, e) ==
			  SHARED_ADDED;
	else if (kill((pid_t)seen, 0) != 0 && errno == ESRCH)
		c->held = shared_table_put(t, tag_of(c->key), now + CLAIM_SECONDS, now, e);
	OPENSSL_cleanse(e, sizeof e);
	return c->held;
}

bool kdf_gate_claim(const struct user *u, const char *password, size_t len,
		    struct kdf_claim *claim)
{
	unsigned char fp[CACHE_MAC_BYTES];
	memset(claim, 0, sizeof *claim);
	bool keyed = cache_key_fingerprint(u->password_hash, fp) &&
		     cache_key_verifier(u->id, fp, password, len, claim->key);
	OPENSSL_cleanse(fp, sizeof fp);
	if (!keyed)
		return false;
	for (long step = 0; step < CLAIM_SECONDS * 1000000L / WAIT_STEP_US; step++) {
		int64_t now = now_seconds();
		if (account_cache_credential_settled(u, password, len, now)) {
			change_board_count(BOARD_CREDENTIAL_WAITS);
			return true;
		}
		uint64_t pid = holder(claim, now);
		if (pid == (uint64_t)getpid())
			claim->held = true; /* a claim of ours left behind */
		if (claim->held || take(claim, pid, now))
			break;
		sleep_micros(WAIT_STEP_US);
	}
	/* The holder may have stored its credential and left between our
	 * look at the credential and our look at the claim: look again now
	 * that the claim is ours, or both would run the KDF (seen under
	 * ASan, where a KDF is slow). The caller gives the claim back.
	 * Both looks wait out a write of the account's entry in progress
	 * (another request keeping its row or answer): read as a miss, it
	 * cost a second KDF (test_host_cache under ASan again). */
	if (claim->held && account_cache_credential_settled(u, password, len, now_seconds())) {
		change_board_count(BOARD_CREDENTIAL_WAITS);
		return true;
	}
	return false;
}

void kdf_gate_unclaim(struct kdf_claim *claim)
{
	if (claim->held)
		shared_table_remove(change_board_table(BOARD_CLAIMS), tag_of(claim->key));
	OPENSSL_cleanse(claim, sizeof *claim);
}
