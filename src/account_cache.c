/* account_cache.c - the per-process account rows of account_cache.h. */
#include "account_cache.h"

#include <string.h>

#include "change_board.h"
#include "util.h"

/* Sets of four by name, so that two busy accounts rarely push each other
 * out; a new row replaces its own name's, or the set's oldest. */
#define SETS 1024
#define WAYS 4

struct slot {
	struct user row; /* row.username "": empty */
	bool usable; /* false: only the name and id are known (see the header) */
	uint64_t generation, epoch;
	int64_t read_at;
};

static struct slot slots[SETS][WAYS];
static int64_t ttl;

static struct slot *set_of(const char *username)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)username; *p; p++)
		h = (h ^ *p) * 16777619u;
	return slots[h % SETS];
}

/* username's slot, or NULL (never an empty one). */
static struct slot *find(const char *username)
{
	struct slot *set = set_of(username);
	for (size_t i = 0; i < WAYS; i++)
		if (set[i].row.username[0] != '\0' &&
		    strcmp(set[i].row.username, username) == 0)
			return &set[i];
	return NULL;
}

static char *dup_or_null(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

static void copy_user(struct user *dst, const struct user *src)
{
	*dst = *src;
	dst->password_hash = dup_or_null(src->password_hash);
	dst->email = dup_or_null(src->email);
	dst->node = dup_or_null(src->node);
	dst->alert = dup_or_null(src->alert);
}

static void clear_slot(struct slot *s)
{
	user_free(&s->row);
	memset(s, 0, sizeof *s);
}

void account_cache_init(int64_t ttl_seconds)
{
	for (size_t i = 0; i < SETS; i++)
		for (size_t j = 0; j < WAYS; j++)
			clear_slot(&slots[i][j]);
	ttl = ttl_seconds;
}

bool account_cache_get(const char *username, int64_t now, struct user *out)
{
	const struct slot *s = find(username);
	if (ttl <= 0 || s == NULL || !s->usable || now < s->read_at ||
	    now - s->read_at >= ttl || !change_board_ready() ||
	    change_board_epoch() != s->epoch ||
	    change_board_generation(s->row.id) != s->generation)
		return false;
	copy_user(out, &s->row);
	return true;
}

void account_cache_probe(const char *username, struct account_probe *probe)
{
	const struct slot *s = find(username);
	probe->user_id = s != NULL ? s->row.id : 0;
	probe->generation = change_board_generation(probe->user_id);
	probe->epoch = change_board_epoch();
}

void account_cache_put(const struct account_probe *probe, const struct user *u,
		       int64_t now)
{
	if (ttl <= 0 || !change_board_ready())
		return;
	struct slot *s = find(u->username);
	if (s == NULL) {
		struct slot *set = set_of(u->username);
		s = &set[0];
		for (size_t i = 1; i < WAYS; i++)
			if (set[i].read_at < s->read_at)
				s = &set[i];
	}
	clear_slot(s);
	if (probe->user_id != u->id || probe->user_id == 0 || u->status != 1 ||
	    probe->epoch != change_board_epoch()) {
		/* Next time the probe knows the id. */
		memcpy(s->row.username, u->username, sizeof s->row.username);
		s->row.id = u->id;
		return;
	}
	s->usable = true;
	s->generation = probe->generation;
	s->epoch = probe->epoch;
	s->read_at = now;
	copy_user(&s->row, u);
}
