/* account_cache.c - the host-wide kept account rows of account_cache.h. */
#include "account_cache.h"

#include <stdio.h>
#include <string.h>

#include "change_board.h"
#include "shared_table.h"
#include "util.h"

/*
 * An entry's payload: the row's numbers, then its strings one after the
 * other, each with its NUL (a NULL string is marked in `present`). A row
 * whose strings do not fit is not kept (only its name and id are).
 */
enum { ID, STATUS, QUOTA, LAST_WRITE, CREATED, GENERATION, READ_AT, FLAGS, STRINGS };
#define STRING_BYTES ((BOARD_ROW_WORDS - STRINGS) * 8)
#define USABLE 1u    /* flag: a whole row, not only the name and id */
#define PRESENT 16u  /* flag << i: string i is not NULL */

enum { S_USERNAME, S_HASH, S_EMAIL, S_NODE, S_ALERT, S__MAX };

static int64_t ttl;
static struct shared_table table;
static uint64_t table_epoch = UINT64_MAX;

/* false when there is no board: then nothing is kept. */
static bool attach(void)
{
	if (ttl <= 0 || !change_board_ready())
		return false;
	if (table_epoch != change_board_epoch()) {
		change_board_table(BOARD_ROWS, &table);
		table_epoch = change_board_epoch();
	}
	return true;
}

void account_cache_init(int64_t ttl_seconds)
{
	ttl = ttl_seconds;
	table_epoch = UINT64_MAX;
}

struct entry {
	uint64_t w[BOARD_ROW_WORDS];
};

static char *strings(struct entry *e)
{
	return (char *)&e->w[STRINGS];
}

/* Pack u into e; false if its strings do not fit. */
static bool encode(struct entry *e, const struct user *u)
{
	const char *s[S__MAX] = { u->username, u->password_hash, u->email, u->node,
				  u->alert };
	size_t at = 0;
	memset(e, 0, sizeof *e);
	for (int i = 0; i < S__MAX; i++) {
		if (s[i] == NULL)
			continue;
		size_t len = strlen(s[i]) + 1;
		if (len > STRING_BYTES - at)
			return false;
		memcpy(strings(e) + at, s[i], len);
		at += len;
		e->w[FLAGS] |= PRESENT << i;
	}
	e->w[ID] = (uint64_t)u->id;
	e->w[STATUS] = (uint64_t)(int64_t)u->status;
	e->w[QUOTA] = (uint64_t)u->quota_kb;
	e->w[LAST_WRITE] = (uint64_t)u->last_write;
	e->w[CREATED] = (uint64_t)u->created;
	return true;
}

/* The name kept in e (the first string; "" if none). */
static const char *name_of(struct entry *e)
{
	strings(e)[STRING_BYTES - 1] = '\0';
	return (e->w[FLAGS] & PRESENT) ? strings(e) : "";
}

static void decode(struct entry *e, struct user *out)
{
	char *s[S__MAX] = { 0 };
	size_t at = 0;
	strings(e)[STRING_BYTES - 1] = '\0';
	for (int i = 0; i < S__MAX && at < STRING_BYTES; i++) {
		if (!(e->w[FLAGS] & (PRESENT << i)))
			continue;
		s[i] = strings(e) + at;
		at += strlen(s[i]) + 1;
	}
	memset(out, 0, sizeof *out);
	out->id = (int64_t)e->w[ID];
	snprintf(out->username, sizeof out->username, "%s", s[S_USERNAME] ? s[S_USERNAME] : "");
	out->password_hash = xstrdup(s[S_HASH] != NULL ? s[S_HASH] : "");
	out->email = s[S_EMAIL] != NULL ? xstrdup(s[S_EMAIL]) : NULL;
	out->node = s[S_NODE] != NULL ? xstrdup(s[S_NODE]) : NULL;
	out->alert = s[S_ALERT] != NULL ? xstrdup(s[S_ALERT]) : NULL;
	out->status = (int)(int64_t)e->w[STATUS];
	out->quota_kb = (int64_t)e->w[QUOTA];
	out->last_write = (int64_t)e->w[LAST_WRITE];
	out->created = (int64_t)e->w[CREATED];
}

/* username's entry, whole or name-only, if one is kept at now. */
static bool find(const char *username, int64_t now, struct entry *e)
{
	return attach() &&
	       shared_table_get(&table, shared_table_tag_of(username), now, e->w) &&
	       strcmp(name_of(e), username) == 0;
}

bool account_cache_get(const char *username, int64_t now, struct user *out)
{
	struct entry e;
	if (!find(username, now, &e))
		goto miss;
	int64_t read_at = (int64_t)e.w[READ_AT];
	int64_t id = (int64_t)e.w[ID];
	if (!(e.w[FLAGS] & USABLE) || now < read_at || now - read_at >= ttl ||
	    change_board_generation(id) != e.w[GENERATION])
		goto miss;
	decode(&e, out);
	change_board_count(BOARD_ROW_HITS);
	return true;
miss:
	change_board_count(BOARD_ROW_MISSES);
	return false;
}

void account_cache_probe(const char *username, struct account_probe *probe)
{
	struct entry e;
	/* Any time will do for a name's id: it is checked against the row. */
	probe->user_id = find(username, 0, &e) ? (int64_t)e.w[ID] : 0;
	probe->generation = change_board_generation(probe->user_id);
	probe->epoch = change_board_epoch();
}

void account_cache_put(const struct account_probe *probe, const struct user *u,
		       int64_t now)
{
	struct entry e;
	if (!attach() || u->username[0] == '\0')
		return;
	bool whole = encode(&e, u);
	if (!whole || probe->user_id != u->id || probe->user_id == 0 || u->status != 1 ||
	    probe->epoch != change_board_epoch()) {
		/* Next time the probe knows the id. */
		memset(&e, 0, sizeof e);
		snprintf(strings(&e), STRING_BYTES, "%s", u->username);
		e.w[FLAGS] = PRESENT << S_USERNAME;
		e.w[ID] = (uint64_t)u->id;
	} else {
		e.w[FLAGS] |= USABLE;
		e.w[GENERATION] = probe->generation;
	}
	e.w[READ_AT] = (uint64_t)now;
	shared_table_put(&table, shared_table_tag_of(u->username), now + ttl, now, e.w);
}
