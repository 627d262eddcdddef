/*
 * account_cache.h - the host's recent account rows, for reads.
 *
 * A sync poll is a read, and its account row (password hash, status,
 * last_write) rarely changes. Reading it from the database on every poll
 * doubled the poll's cost, so the rows read are kept, in the change board
 * (change_board.h) where every process of the host finds them, and one is
 * used again while both hold:
 *  - the account's slot on the change board (change_board.h) still has
 *    the generation read *before* the row was read: nobody on this host
 *    changed the account since;
 *  - it is younger than account_cache_seconds, which bounds how late
 *    changes made elsewhere (another web server, hand-typed SQL) show.
 *
 * The generation must be read before the row: a write that commits in
 * between then leaves a newer generation behind, and the row is read
 * again next time. Writers bump the slot while they hold the row lock
 * and readers read with LOCK IN SHARE MODE, so a reader either waits for
 * the write or sees the bump.
 *
 * The first read of an account on the host learns only its id (the
 * slot is by id); the row is kept from the second read on, by whichever
 * process makes it. Rows whose strings do not fit an entry (about 300
 * bytes of name, hash, e-mail, node and alert) are never kept. Without a
 * board nothing is kept.
 *
 * Only rows that allow a login are kept (enabled, no failed logins on
 * record); the caller still checks the password (auth.h).
 */
#ifndef WEAVE_ACCOUNT_CACHE_H
#define WEAVE_ACCOUNT_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "db_user.h"

/* Set the lifetime of kept rows, in seconds; 0 keeps none. Empties the
 * cache. */
void account_cache_init(int64_t ttl_seconds);

/* A copy of the row kept for username, if it may be used at now
 * (seconds); the caller frees it with user_free(). */
bool account_cache_get(const char *username, int64_t now, struct user *out);

/* What must be known before reading username's row from the database. */
struct account_probe {
	int64_t user_id;     /* 0: not known yet */
	uint64_t generation; /* of user_id's slot, read before the row */
	uint64_t epoch;      /* of the board it was read from */
};
void account_cache_probe(const char *username, struct account_probe *probe);

/* Keep row u (read after probe was taken) as read at now (seconds). */
void account_cache_put(const struct account_probe *probe, const struct user *u,
		       int64_t now);

#endif
