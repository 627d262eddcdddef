/*
 * stamp_cache.h - the host's recent info/collections answers.
 *
 * A user's collection timestamps change only when the user writes, which
 * raises users.last_write in the same transaction (route.c), or when the
 * newest record of a collection expires. So an answer computed while
 * last_write was L can be sent again as long as last_write is still L
 * and none of those newest records has expired: a sync poll then costs
 * one statement (the user row) instead of two.
 *
 * Kept in the change board (change_board.h) for every process of the
 * host, by user id, in sets of 8; a newer answer replaces an older one.
 * Without a board, in a private table of the same shape. Answers over
 * about 460 bytes (dozens of collections) are not kept.
 */
#ifndef WEAVE_STAMP_CACHE_H
#define WEAVE_STAMP_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stamp_answer {
	const char *body; /* the JSON object, owned by the cache */
	size_t len;
	int64_t newest;   /* the largest timestamp in it (centiseconds) */
	int64_t rows;     /* collections in it (X-Weave-Records) */
};

/*
 * The answer kept for user_id if it was computed under last_write and
 * is still valid at now (centiseconds). out->body stays valid until the
 * next stamp_cache_get().
 */
bool stamp_cache_get(int64_t user_id, int64_t last_write, int64_t now,
		     struct stamp_answer *out);

/* Keep an answer computed under last_write, valid before valid_until. */
void stamp_cache_put(int64_t user_id, int64_t last_write, int64_t valid_until,
		     const struct stamp_answer *answer);

#endif
