/* stamp_cache.c - the cache of stamp_cache.h. */
#include "stamp_cache.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define SLOTS 4096 /* a few hundred bytes each when full */

struct slot {
	int64_t user_id; /* 0: empty (ids start at 1) */
	int64_t last_write;
	int64_t valid_until;
	char *body;
	size_t len;
	int64_t newest, rows;
};

static struct slot slots[SLOTS];

static struct slot *slot_of(int64_t user_id)
{
	return &slots[(uint64_t)user_id % SLOTS];
}

bool stamp_cache_get(int64_t user_id, int64_t last_write, int64_t now,
		     struct stamp_answer *out)
{
	const struct slot *s = slot_of(user_id);
	if (s->user_id != user_id || s->last_write != last_write ||
	    now >= s->valid_until)
		return false;
	out->body = s->body;
	out->len = s->len;
	out->newest = s->newest;
	out->rows = s->rows;
	return true;
}

void stamp_cache_put(int64_t user_id, int64_t last_write, int64_t valid_until,
		     const struct stamp_answer *answer)
{
	struct slot *s = slot_of(user_id);
	free(s->body);
	s->body = xmalloc(answer->len + 1);
	memcpy(s->body, answer->body, answer->len);
	s->body[answer->len] = '\0';
	s->len = answer->len;
	s->user_id = user_id;
	s->last_write = last_write;
	s->valid_until = valid_until;
	s->newest = answer->newest;
	s->rows = answer->rows;
}
