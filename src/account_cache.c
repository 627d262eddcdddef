/* account_cache.c - the one entry per account of account_cache.h, in the host's shared file. */
#include "account_cache.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "cache_key.h"
#include "change_board.h"
#include "shared_table.h"
#include "util.h"

/*
 * An entry's payload words: the row, the credential, the answer, then
 * the row's strings (node, alert, each with its NUL) and the answer's
 * body. MACs take CACHE_MAC_BYTES (4 words).
 */
enum {
	NAME_CHECK, ID, STATUS, QUOTA, LAST_WRITE, CREATED, GENERATION, READ_AT, FLAGS,
	FINGERPRINT, VERIFIER = FINGERPRINT + 4, VERIFIED_AT = VERIFIER + 4,
	ANSWER_LAST_WRITE, ANSWER_VALID_UNTIL, ANSWER_NEWEST, ANSWER_ROWS, ANSWER_LEN,
	STRINGS, BODY = STRINGS + 24, WORDS = BOARD_ACCOUNT_WORDS
};
#define STRING_BYTES ((BODY - STRINGS) * 8)
#define BODY_BYTES ((WORDS - BODY) * 8)
#define ROW 1u       /* flag: the row part is whole */
#define CREDENTIAL 2u
#define ANSWER 4u
#define NODE 16u     /* flag: the row's node is not NULL */
#define ALERT 32u
/* An answer whose records never expire is still dropped after a week. */
#define ANSWER_MAX_SECONDS (7 * 86400)

_Static_assert(BODY < WORDS, "an account entry has no room for its answer");

struct entry {
	uint64_t w[WORDS];
};

static int64_t row_ttl, credential_ttl;
/*
 * The copy of an entry account_cache_login() last answered from, which
 * account_cache_answer_get() then hands out (the body is valid until the
 * next call of either). A warm poll thus reads its shared entry once,
 * not twice. copy_of: the account whose entry it is, 0 when none.
 */
static struct entry answer_copy;
static int64_t copy_of;

void account_cache_init(int64_t row_seconds, int64_t credential_seconds)
{
	row_ttl = row_seconds;
	credential_ttl = credential_seconds;
}

/* Is a copy of name's entry (found) that of the account id (0: any)?
 * If not, *e becomes a fresh entry for them. */
static bool entry_is_of(const uint64_t name[2], int64_t id, bool found, struct entry *e)
{
	if (found && e->w[NAME_CHECK] == name[1] && (id == 0 || (int64_t)e->w[ID] == id))
		return true;
	memset(e, 0, sizeof *e);
	e->w[NAME_CHECK] = name[1];
	e->w[ID] = (uint64_t)id;
	return false;
}

/* username's entry at now, and its tag; false (and *e a fresh entry for
 * id, when id is not 0) if there is none of that account. settled: wait
 * out a write in progress (shared_table_get_settled). */
static bool find_in(const char *username, int64_t id, int64_t now, struct entry *e,
		    uint64_t *tag, bool settled)
{
	uint64_t name[2];
	*tag = 0;
	if (!cache_key_name(username, name))
		return false;
	*tag = name[0];
	struct shared_table *t = change_board_table(BOARD_ACCOUNTS);
	bool found = settled ? shared_table_get_settled(t, name[0], now, e->w)
			     : shared_table_get(t, name[0], now, e->w);
	return entry_is_of(name, id, found, e);
}

static bool find(const char *username, int64_t id, int64_t now, struct entry *e,
		 uint64_t *tag)
{
	return find_in(username, id, now, e, tag, false);
}

/*
 * As find, for a change: the entry is claimed until store() or
 * let_go() (shared_table_begin), so that what another process stores in
 * it meanwhile (a row, a credential, an answer) is not overwritten by
 * this older copy. false (nothing held) if it stayed busy: the change
 * is skipped, as a cache may.
 */
static bool open_entry(const char *username, int64_t id, int64_t now, struct entry *e,
		       struct shared_write *w)
{
	uint64_t name[2];
	bool found;
	if (!cache_key_name(username, name) ||
	    !shared_table_begin(change_board_table(BOARD_ACCOUNTS), name[0], now, e->w,
				&found, w)) {
		OPENSSL_cleanse(e, sizeof *e);
		return false;
	}
	entry_is_of(name, id, found, e);
	return true;
}

static void let_go(struct shared_write *w, struct entry *e)
{
	shared_table_abandon(w);
	OPENSSL_cleanse(e, sizeof *e);
}

static int64_t later(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Store e in the entry opened by open_entry(), until its last valid
 * part expires. */
static void store(struct shared_write *w, struct entry *e, int64_t now)
{
	int64_t until = now + 1;
	if (e->w[FLAGS] & ROW)
		until = later(until, (int64_t)e->w[READ_AT] + row_ttl);
	if (e->w[FLAGS] & CREDENTIAL)
		until = later(until, (int64_t)e->w[VERIFIED_AT] + credential_ttl);
	if (e->w[FLAGS] & ANSWER) {
		int64_t valid = (int64_t)e->w[ANSWER_VALID_UNTIL];
		valid = valid >= INT64_MAX - 99 ? INT64_MAX : (valid + 99) / 100;
		until = later(until, valid < now + ANSWER_MAX_SECONDS ? valid
								      : now + ANSWER_MAX_SECONDS);
	}
	shared_table_commit(change_board_table(BOARD_ACCOUNTS), w, until, e->w);
	OPENSSL_cleanse(e, sizeof *e);
}

/* Does e's verifier (under fingerprint fp) vouch for password at now? */
static bool credential_holds(const struct entry *e, const unsigned char *fp,
			     const char *password, size_t len, int64_t now)
{
	unsigned char v[CACHE_MAC_BYTES];
	int64_t at = (int64_t)e->w[VERIFIED_AT];
	bool hit = credential_ttl > 0 && (e->w[FLAGS] & CREDENTIAL) && now >= at &&
		   now - at < credential_ttl &&
		   cache_key_verifier((int64_t)e->w[ID], fp, password, len, v) &&
		   bytes_equal_const_time(v, &e->w[VERIFIER], CACHE_MAC_BYTES);
	OPENSSL_cleanse(v, sizeof v);
	if (hit)
		change_board_count(BOARD_CREDENTIAL_HITS);
	return hit;
}

/* Pack u's strings into e; false if they do not fit. */
static bool encode_strings(struct entry *e, const struct user *u)
{
	const char *s[2] = { u->node, u->alert };
	const uint64_t flag[2] = { NODE, ALERT };
	char *to = (char *)&e->w[STRINGS];
	size_t at = 0;
	memset(to, 0, STRING_BYTES);
	e->w[FLAGS] &= ~(NODE | ALERT);
	for (int i = 0; i < 2; i++) {
		if (s[i] == NULL)
			continue;
		size_t len = strlen(s[i]) + 1;
		if (len > STRING_BYTES - at)
			return false;
		memcpy(to + at, s[i], len);
		at += len;
		e->w[FLAGS] |= flag[i];
	}
	return true;
}

static void decode(struct entry *e, const char *username, struct user *out)
{
	char *s = (char *)&e->w[STRINGS];
	s[STRING_BYTES - 1] = '\0';
	memset(out, 0, sizeof *out);
	out->id = (int64_t)e->w[ID];
	copy_string(out->username, sizeof out->username, username);
	out->password_hash = xstrdup(""); /* not kept: matches no password */
	if (e->w[FLAGS] & NODE) {
		out->node = xstrdup(s);
		s += strlen(s) + 1;
	}
	if ((e->w[FLAGS] & ALERT) && s < (char *)&e->w[BODY])
		out->alert = xstrdup(s);
	out->status = (int)(int64_t)e->w[STATUS];
	out->quota_kb = (int64_t)e->w[QUOTA];
	out->last_write = (int64_t)e->w[LAST_WRITE];
	out->created = (int64_t)e->w[CREATED];
}

/* A copy of an entry holds the MACs that prove a password (fingerprint
 * and verifier): they do not stay in this process's memory after use.
 * The rest of the entry is what any reader of the row may see. */
static void forget_secrets(struct entry *e)
{
	OPENSSL_cleanse(&e->w[FINGERPRINT], (size_t)(ANSWER_LAST_WRITE - FINGERPRINT) * 8);
}

/* May e's row answer a read at now? */
static bool row_current(const struct entry *e, int64_t now)
{
	int64_t read_at = (int64_t)e->w[READ_AT];
	return row_ttl > 0 && change_board_ready() && (e->w[FLAGS] & ROW) && now >= read_at &&
	       now - read_at < row_ttl &&
	       change_board_generation((int64_t)e->w[ID]) == e->w[GENERATION];
}

bool account_cache_login(const char *username, const char *password, size_t len,
			 int64_t now, struct user *out)
{
	struct entry *e = &answer_copy;
	uint64_t tag;
	bool hit = find(username, 0, now, e, &tag) && row_current(e, now);
	change_board_count(hit ? BOARD_ROW_HITS : BOARD_ROW_MISSES);
	hit = hit && credential_holds(e, (const unsigned char *)&e->w[FINGERPRINT],
				      password, len, now);
	if (hit)
		decode(e, username, out);
	forget_secrets(e);
	copy_of = hit ? out->id : 0;
	return hit;
}

static bool credential_kept(const struct user *u, const char *password, size_t len,
			    int64_t now, bool settled)
{
	struct entry e;
	uint64_t tag;
	unsigned char fp[CACHE_MAC_BYTES];
	bool hit = credential_ttl > 0 && find_in(u->username, u->id, now, &e, &tag, settled) &&
		   cache_key_fingerprint(u->password_hash, fp) &&
		   credential_holds(&e, fp, password, len, now);
	OPENSSL_cleanse(&e, sizeof e);
	OPENSSL_cleanse(fp, sizeof fp);
	return hit;
}

bool account_cache_credential_ok(const struct user *u, const char *password,
				 size_t len, int64_t now)
{
	return credential_kept(u, password, len, now, false);
}

bool account_cache_credential_settled(const struct user *u, const char *password,
				      size_t len, int64_t now)
{
	return credential_kept(u, password, len, now, true);
}

void account_cache_credential_put(const struct user *u, const char *password,
				  size_t len, int64_t now)
{
	struct entry e;
	struct shared_write w;
	unsigned char fp[CACHE_MAC_BYTES];
	if (credential_ttl <= 0 || !open_entry(u->username, u->id, now, &e, &w))
		return;
	if (cache_key_fingerprint(u->password_hash, fp) &&
	    cache_key_verifier(u->id, fp, password, len, (unsigned char *)&e.w[VERIFIER])) {
		e.w[FLAGS] |= CREDENTIAL;
		e.w[VERIFIED_AT] = (uint64_t)now;
		store(&w, &e, now);
	}
	let_go(&w, &e);
	OPENSSL_cleanse(fp, sizeof fp);
}

void account_cache_probe(const char *username, struct account_probe *probe)
{
	struct entry e;
	uint64_t tag;
	copy_of = 0; /* this request's row comes from the database */
	/* Any time will do for a name's id: it is checked against the row. */
	probe->user_id = find(username, 0, 0, &e, &tag) ? (int64_t)e.w[ID] : 0;
	OPENSSL_cleanse(&e, sizeof e);
	probe->generation = change_board_generation(probe->user_id);
	probe->bumps = change_board_bumps();
	probe->epoch = change_board_epoch();
}

void account_cache_put(const struct account_probe *probe, const struct user *u,
		       int64_t now)
{
	struct entry e;
	struct shared_write w;
	if (row_ttl <= 0 || !change_board_ready() || u->username[0] == '\0' ||
	    !open_entry(u->username, u->id, now, &e, &w))
		return;
	e.w[FLAGS] &= ~(uint64_t)ROW;
	/* The generation must be the one before the row: read then (the id
	 * was known), or now if no account of the host changed since. Else
	 * the row only teaches the probe the id, for next time. */
	uint64_t generation = probe->generation;
	bool before = probe->user_id == u->id;
	if (!before) {
		generation = change_board_generation(u->id);
		before = change_board_bumps() == probe->bumps; /* read after the slot */
	}
	if (before && u->status == USER_STATUS_ENABLED && probe->epoch == change_board_epoch() &&
	    encode_strings(&e, u) &&
	    cache_key_fingerprint(u->password_hash, (unsigned char *)&e.w[FINGERPRINT])) {
		e.w[STATUS] = (uint64_t)(int64_t)u->status;
		e.w[QUOTA] = (uint64_t)u->quota_kb;
		e.w[LAST_WRITE] = (uint64_t)u->last_write;
		e.w[CREATED] = (uint64_t)u->created;
		e.w[GENERATION] = generation;
		e.w[READ_AT] = (uint64_t)now;
		e.w[FLAGS] |= ROW;
	}
	store(&w, &e, now);
}

bool account_cache_answer_get(const struct user *u, int64_t now, struct account_answer *out)
{
	struct entry *e = &answer_copy;
	uint64_t tag;
	/* The copy the login of this request answered from, if it did
	 * (a read that loads its row calls account_cache_probe, which drops
	 * the copy): the answer is checked below against that row. */
	bool copied = u->id != 0 && copy_of == u->id;
	copy_of = 0;
	bool hit = (copied || find(u->username, u->id, now / 100, e, &tag)) &&
		   (e->w[FLAGS] & ANSWER) && (int64_t)e->w[ANSWER_LAST_WRITE] == u->last_write &&
		   now < (int64_t)e->w[ANSWER_VALID_UNTIL] && e->w[ANSWER_LEN] < BODY_BYTES;
	change_board_count(hit ? BOARD_STAMP_HITS : BOARD_STAMP_MISSES);
	/* Only the body is handed out. */
	forget_secrets(e);
	if (!hit)
		return false;
	char *body = (char *)&e->w[BODY];
	body[e->w[ANSWER_LEN]] = '\0';
	out->body = body;
	out->len = (size_t)e->w[ANSWER_LEN];
	out->newest = (int64_t)e->w[ANSWER_NEWEST];
	out->rows = (int64_t)e->w[ANSWER_ROWS];
	return true;
}

void account_cache_answer_put(const struct user *u, int64_t valid_until,
			      const struct account_answer *a)
{
	struct entry e;
	struct shared_write w;
	int64_t now = now_seconds();
	if (a->len >= BODY_BYTES || u->username[0] == '\0')
		return; /* a rare account with very many collections: not kept */
	if (!open_entry(u->username, u->id, now, &e, &w))
		return;
	e.w[ANSWER_LAST_WRITE] = (uint64_t)u->last_write;
	e.w[ANSWER_VALID_UNTIL] = (uint64_t)valid_until;
	e.w[ANSWER_NEWEST] = (uint64_t)a->newest;
	e.w[ANSWER_ROWS] = (uint64_t)a->rows;
	e.w[ANSWER_LEN] = a->len;
	memset(&e.w[BODY], 0, BODY_BYTES);
	memcpy(&e.w[BODY], a->body, a->len);
	e.w[FLAGS] |= ANSWER;
	store(&w, &e, now);
}
