/* stamp_cache.c - the host-wide info/collections answers of stamp_cache.h. */
#include "stamp_cache.h"

#include <string.h>
#include <time.h>

#include "change_board.h"
#include "shared_table.h"

/* An entry's payload: the key and figures, then the body with its NUL. */
enum { USER_ID, LAST_WRITE, VALID_UNTIL, NEWEST, ROWS, LEN, BODY };
#define BODY_BYTES ((BOARD_STAMP_WORDS - BODY) * 8)

static struct shared_table table;
static uint64_t table_epoch = UINT64_MAX;
/* What stamp_cache_get() hands out: valid until the next call. */
static uint64_t answer[BOARD_STAMP_WORDS];

static struct shared_table *attached(void)
{
	if (table_epoch != change_board_epoch()) {
		change_board_table(BOARD_STAMPS, &table);
		table_epoch = change_board_epoch();
	}
	return &table;
}

static uint64_t tag_of(int64_t user_id)
{
	return (uint64_t)user_id * UINT64_C(0x9e3779b97f4a7c15) | 1;
}

/* Seconds for the table's expiry, rounded up from centiseconds. */
static int64_t seconds_until(int64_t centiseconds)
{
	return centiseconds >= INT64_MAX - 99 ? INT64_MAX : (centiseconds + 99) / 100;
}

bool stamp_cache_get(int64_t user_id, int64_t last_write, int64_t now,
		     struct stamp_answer *out)
{
	uint64_t *e = answer;
	bool hit = shared_table_get(attached(), tag_of(user_id), now / 100, e) &&
		   (int64_t)e[USER_ID] == user_id && (int64_t)e[LAST_WRITE] == last_write &&
		   now < (int64_t)e[VALID_UNTIL] && e[LEN] < BODY_BYTES;
	change_board_count(hit ? BOARD_STAMP_HITS : BOARD_STAMP_MISSES);
	if (!hit)
		return false;
	char *body = (char *)&e[BODY];
	body[e[LEN]] = '\0';
	out->body = body;
	out->len = (size_t)e[LEN];
	out->newest = (int64_t)e[NEWEST];
	out->rows = (int64_t)e[ROWS];
	return true;
}

void stamp_cache_put(int64_t user_id, int64_t last_write, int64_t valid_until,
		     const struct stamp_answer *a)
{
	uint64_t e[BOARD_STAMP_WORDS] = { 0 };
	if (a->len >= BODY_BYTES)
		return; /* a rare account with very many collections: not kept */
	e[USER_ID] = (uint64_t)user_id;
	e[LAST_WRITE] = (uint64_t)last_write;
	e[VALID_UNTIL] = (uint64_t)valid_until;
	e[NEWEST] = (uint64_t)a->newest;
	e[ROWS] = (uint64_t)a->rows;
	e[LEN] = a->len;
	memcpy(&e[BODY], a->body, a->len);
	shared_table_put(attached(), tag_of(user_id), seconds_until(valid_until),
			 (int64_t)time(NULL), e);
}
