/*
 * account_cache.h - the host's account cache: everything kept for an
 * account, in one entry, under one promise.
 *
 * A sync poll is a read whose account rarely changes. Reading the row
 * and running the password KDF on every poll cost the database a round
 * trip and the CPU 0.2 s, so each account has one entry in the host's
 * shared file (change_board.h), found by every process, holding:
 *  - the kept row: id, status, quota, last_write, created, node, alert,
 *    the password *fingerprint* (a MAC of the stored hash, cache_key.h),
 *    the generation the account's board slot held *before* the row,
 *    and when it was read. No password hash and no e-mail address;
 *  - the verified credential: MAC(id, fingerprint, password), and when
 *    the KDF accepted it;
 *  - the last info/collections answer, with the id and last_write it
 *    was computed under and when its newest record expires.
 * The entry is found by a MAC of the name, so the file names no account.
 *
 * THE PROMISE. Each part is used only while it is provably current:
 *  - the row, for reads only, while the account's board generation is
 *    still the one it held before the row was read (nobody on this host,
 *    nor the change log for other hosts, changed the account since; how
 *    that generation is known: below), the row is younger than
 *    account_cache_seconds, allowed a login (enabled, no failed login on
 *    record) and the client address is not known to be locked. Without
 *    the shared file no row is trusted at all;
 *  - the credential, while MAC(id, fingerprint of the row in hand,
 *    password) equals it and it is younger than auth_cache_seconds. The
 *    row in hand is current (read now, or kept as above), so a changed
 *    password (a new hash, so a new fingerprint) misses at once, and a
 *    deleted, disabled or locked account is refused by its row before
 *    the credential is asked. Wrong passwords are never kept;
 *  - the answer, while the current row's id and last_write are the ones
 *    it was computed under and its newest record has not expired.
 * The parts are written at different times by different processes; each
 * is checked on its own terms, so an entry mixing old and new parts can
 * only miss, never answer wrongly. Lost updates between processes are
 * misses too.
 *
 * Writers: every change to a users row bumps its generation while it
 * holds the row lock (db_user.c, weave-admin), and readers read the row
 * LOCK IN SHARE MODE, so a reader either waits for the write or sees the
 * bump. The time a read answers is taken before the generation is read
 * (login.c, write_begins()).
 *
 * The generation before the row. When the probe knows the id, it reads
 * the slot before the row. On an account's first request it does not,
 * so the probe reads the host's bump count instead (change_board_bumps,
 * every bump of any account), and after the row the put reads the slot
 * and then the count again: if the count did not move, the slot now
 * holds the generation it held before the row, and the row is kept.
 * Why a bump is never missed: change_board_bump() adds to the count
 * before the slot, all with sequentially consistent atomics. A bump of
 * the account that changes its row after our read happens (under the
 * row lock, our read being in share mode) after the probe read the
 * count; if the put's slot read sees it, the count read that follows
 * sees its earlier add, so the row is not kept; if it does not, the
 * generation kept is the old one and that bump drops the row. A write
 * that committed before our read is in the row already. A change the
 * change log brings is bumped after its commit, hence after the probe
 * or inside the row we read: the same two cases. A process killed
 * between the two adds leaves a count moved without a slot: writers
 * bump before they commit, so the connection's loss rolls the change
 * back and the moved count only sends rows being read then to a miss.
 * Any other bump on the host meanwhile is only a miss too: that row is
 * kept from its second read, as before the count existed.
 */
#ifndef WEAVE_ACCOUNT_CACHE_H
#define WEAVE_ACCOUNT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db_user.h"

/* Lifetimes in seconds of kept rows and of credentials; 0 keeps none. */
void account_cache_init(int64_t row_seconds, int64_t credential_seconds);

/* What must be known before reading username's row from the database. */
struct account_probe {
	int64_t user_id;     /* 0: not known yet */
	uint64_t generation; /* of user_id's slot, read before the row */
	uint64_t epoch;      /* of the board it was read from */
	uint64_t bumps;      /* the host's bump count, read before the row
			      * (used when user_id was not known) */
};
void account_cache_probe(const char *username, struct account_probe *probe);

/*
 * The kept row of username, if it may be used at now (seconds) and the
 * password hits its credential: *out filled (password_hash "" and email
 * NULL, which reads never need); the caller frees it with user_free().
 */
bool account_cache_login(const char *username, const char *password, size_t len,
			 int64_t now, struct user *out);

/* Does the credential kept for u (a current row) vouch for password? */
bool account_cache_credential_ok(const struct user *u, const char *password,
				 size_t len, int64_t now);

/* The same, but an entry being written is waited for, not a miss
 * (shared_table_get_settled): for a process about to run the KDF, which
 * a credential just stored makes needless. */
bool account_cache_credential_settled(const struct user *u, const char *password,
				      size_t len, int64_t now);

/* The KDF accepted password for u's stored hash at now: keep the verifier. */
void account_cache_credential_put(const struct user *u, const char *password,
				  size_t len, int64_t now);

/* Keep row u (read after probe was taken) as read at now (seconds). */
void account_cache_put(const struct account_probe *probe, const struct user *u,
		       int64_t now);

/* An info/collections answer. */
struct account_answer {
	const char *body; /* the JSON object; from _get, valid until the next _get
			   * or account_cache_login */
	size_t len;
	int64_t newest;   /* the largest timestamp in it (centiseconds) */
	int64_t rows;     /* collections in it (X-Weave-Records) */
};

/* The answer kept for u (a current row), if still valid at now (centiseconds). */
bool account_cache_answer_get(const struct user *u, int64_t now,
			      struct account_answer *out);

/* Keep an answer computed under u's last_write, valid before valid_until
 * (centiseconds). Answers over about 460 bytes are not kept. */
void account_cache_answer_put(const struct user *u, int64_t valid_until,
			      const struct account_answer *a);

#endif
