/* shared_table.c - the lock-free shared cache of shared_table.h. */
#include "shared_table.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Lock-free 64-bit atomics work across processes on a shared mapping. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

/* The words of an entry before its payload. */
enum { SEQ, CLAIM, TAG, EXPIRES, USED, SUM, HEADER_WORDS };
_Static_assert(HEADER_WORDS == SHARED_TABLE_HEADER_WORDS, "header size");

#define DEFAULT_CLAIM_TIMEOUT_MS 2000
#define PID_BITS 22 /* a claim is (milliseconds << PID_BITS) | pid */
#define READ_TRIES 3

typedef _Atomic uint64_t word;

/*
 * A set is its ways' tags (hints, so that a lookup reads one or two cache
 * lines instead of one per way), then its entries. The tag inside the
 * entry is the one that counts; a hint only says where to look.
 */
static size_t entry_words(const struct shared_table *t)
{
	return HEADER_WORDS + (size_t)t->words;
}

size_t shared_table_bytes(uint32_t sets, uint32_t ways, uint32_t words)
{
	return (size_t)sets * ways * (1 + HEADER_WORDS + (size_t)words) * sizeof(word);
}

void shared_table_attach(struct shared_table *t, void *region, uint32_t sets,
			 uint32_t ways, uint32_t words)
{
	t->region = region;
	t->sets = sets;
	t->ways = ways;
	t->words = words;
	t->claim_timeout_ms = DEFAULT_CLAIM_TIMEOUT_MS;
}

/* Milliseconds on a clock every process of the host shares, unsigned so
 * that the ages below (now - a claim's time) need no casts. */
static uint64_t now_ms(void)
{
	return (uint64_t)monotonic_ms();
}

static word *set_of(const struct shared_table *t, uint64_t tag)
{
	uint64_t h = (tag ^ (tag >> 31)) * UINT64_C(0x9e3779b97f4a7c15);
	size_t set = (size_t)((h >> 32) % t->sets);
	return (word *)t->region + set * t->ways * (1 + entry_words(t));
}

static word *way_of(const struct shared_table *t, word *set, size_t way)
{
	return set + t->ways + way * entry_words(t);
}

/* The hint word of entry e. */
static word *hint_of(const struct shared_table *t, word *set, const word *e)
{
	return set + (size_t)(e - (set + t->ways)) / entry_words(t);
}

/* Not a secure hash: it only has to notice a torn entry. */
static uint64_t checksum(uint64_t tag, uint64_t expires, const uint64_t *p, size_t n)
{
	uint64_t h = UINT64_C(0x6a09e667f3bcc909) ^ tag;
	h = (h ^ expires) * UINT64_C(0x9e3779b97f4a7c15);
	for (size_t i = 0; i < n; i++) {
		h = (h ^ p[i]) * UINT64_C(0x9e3779b97f4a7c15);
		h ^= h >> 29;
	}
	return h;
}

/* A consistent copy of entry e (payload into out); false if torn. */
static bool read_entry(const struct shared_table *t, word *e, uint64_t *tag,
		       uint64_t *expires, uint64_t *out)
{
	for (int attempt = 0; attempt < READ_TRIES; attempt++) {
		uint64_t s1 = atomic_load_explicit(&e[SEQ], memory_order_acquire);
		if (s1 & 1)
			return false; /* being written, or its writer died */
		*tag = atomic_load_explicit(&e[TAG], memory_order_relaxed);
		*expires = atomic_load_explicit(&e[EXPIRES], memory_order_relaxed);
		uint64_t sum = atomic_load_explicit(&e[SUM], memory_order_relaxed);
		for (size_t i = 0; i < t->words; i++)
			out[i] = atomic_load_explicit(&e[HEADER_WORDS + i],
						      memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		uint64_t s2 = atomic_load_explicit(&e[SEQ], memory_order_relaxed);
		if (s1 == s2)
			return sum == checksum(*tag, *expires, out, t->words);
	}
	return false;
}

bool shared_table_get(const struct shared_table *t, uint64_t tag, int64_t now,
		      uint64_t *out)
{
	if (t->region == NULL || tag == 0)
		return false;
	word *set = set_of(t, tag);
	for (size_t w = 0; w < t->ways; w++) {
		if (atomic_load_explicit(&set[w], memory_order_relaxed) != tag)
			continue;
		word *e = way_of(t, set, w);
		uint64_t got_tag, expires;
		if (!read_entry(t, e, &got_tag, &expires, out) || got_tag != tag ||
		    (int64_t)expires <= now)
			continue;
		uint64_t ms = now_ms();
		if (ms - atomic_load_explicit(&e[USED], memory_order_relaxed) > 1000)
			atomic_store_explicit(&e[USED], ms, memory_order_relaxed);
		return true;
	}
	return false;
}

/* Is a claim (CLAIM's value) held by a live writer at time ms? A claim
 * older than the timeout is a dead (or stalled) writer's leftover. One
 * stamped after ms is live: its writer read the clock later than we did
 * (we were preempted between our clock and our load), and its age must
 * not wrap round to "very old". */
static bool claim_live(const struct shared_table *t, uint64_t held, uint64_t ms)
{
	uint64_t at = held >> PID_BITS;
	return held != 0 && (at >= ms || ms - at < t->claim_timeout_ms);
}

/* Is e mid-write by a live writer (not a dead one's leftovers)? */
static bool live_write(const struct shared_table *t, word *e)
{
	if (!(atomic_load_explicit(&e[SEQ], memory_order_acquire) & 1))
		return false;
	return claim_live(t, atomic_load_explicit(&e[CLAIM], memory_order_relaxed), now_ms());
}

/*
 * The sum of the sequences of set's ways: a write that begins or ends
 * between two looks changes it. false if a live writer is at work in
 * the set now (a dead writer's odd sequence only stays as it is).
 */
static bool set_quiet(const struct shared_table *t, word *set, uint64_t *version)
{
	*version = 0;
	for (size_t w = 0; w < t->ways; w++) {
		word *e = way_of(t, set, w);
		if (live_write(t, e))
			return false;
		*version += atomic_load_explicit(&e[SEQ], memory_order_acquire);
	}
	return true;
}

bool shared_table_get_settled(const struct shared_table *t, uint64_t tag, int64_t now,
			      uint64_t *out)
{
	if (t->region == NULL || tag == 0)
		return false;
	word *set = set_of(t, tag);
	uint64_t began = now_ms();
	for (;;) {
		uint64_t before, after;
		bool quiet = set_quiet(t, set, &before);
		if (shared_table_get(t, tag, now, out))
			return true;
		/* A miss counts only if no write overlapped the look: one
		 * that ended just before our check of the set would
		 * otherwise pass for no write at all. */
		if (quiet && set_quiet(t, set, &after) && before == after)
			return false;
		if (now_ms() - began >= t->claim_timeout_ms)
			return false;
		/* A write is a few stores: a writer still at it was
		 * preempted, and will run again within a time slice. */
		if (!quiet)
			sleep_micros(100);
	}
}

/* The way of set holding tag, or NULL: found through the hints, as
 * shared_table_get finds it (a way's hint is set before its tag). With
 * tag 0, an empty way: a way being filled already has its hint. */
static word *way_with_tag(const struct shared_table *t, word *set, uint64_t tag)
{
	for (size_t w = 0; w < t->ways; w++) {
		if (atomic_load_explicit(&set[w], memory_order_relaxed) != tag)
			continue;
		word *e = way_of(t, set, w);
		if (atomic_load_explicit(&e[TAG], memory_order_relaxed) == tag)
			return e;
	}
	return NULL;
}

/*
 * The entry a put of tag writes: tag's own, an empty one, or else an
 * expired one or the least recently used. The first two are found
 * through the hints (one or two cache lines): only a full set has each
 * way's entry read, which on a host with room for its accounts is rare.
 */
static word *victim(const struct shared_table *t, uint64_t tag, int64_t now)
{
	word *set = set_of(t, tag), *best = way_with_tag(t, set, tag);
	if (best != NULL || (best = way_with_tag(t, set, 0)) != NULL)
		return best;
	uint64_t best_used = UINT64_MAX;
	for (size_t w = 0; w < t->ways; w++) {
		word *e = way_of(t, set, w);
		uint64_t etag = atomic_load_explicit(&e[TAG], memory_order_relaxed);
		if (etag == tag)
			return e;
		uint64_t used = atomic_load_explicit(&e[USED], memory_order_relaxed);
		if (etag == 0 ||
		    (int64_t)atomic_load_explicit(&e[EXPIRES], memory_order_relaxed) <= now)
			used = 0; /* free for the taking */
		if (best == NULL || used < best_used) {
			best = e;
			best_used = used;
		}
	}
	return best;
}

/* Claim e for writing: the token to release it with, or 0 if a live
 * writer holds it. */
static uint64_t claim(const struct shared_table *t, word *e)
{
	uint64_t ms = now_ms();
	uint64_t token = ms << PID_BITS | ((uint64_t)getpid() & ((1u << PID_BITS) - 1));
	uint64_t held = atomic_load_explicit(&e[CLAIM], memory_order_relaxed);
	if (claim_live(t, held, ms))
		return 0;
	/* Free, or left by a writer that died (or stalled) mid-write. */
	if (!atomic_compare_exchange_strong(&e[CLAIM], &held, token))
		return 0;
	return token;
}

/* Open e's seqlock for writing; returns the odd sequence to close. */
static uint64_t write_open(word *e)
{
	/* Odd already: a dead writer's; ours continues from it, so a reader
	 * that saw the even value before that writer still sees a change. */
	uint64_t s = atomic_load_explicit(&e[SEQ], memory_order_relaxed) | 1;
	atomic_store_explicit(&e[SEQ], s, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	return s;
}

static void write_fields(const struct shared_table *t, word *e, uint64_t tag,
			 int64_t expires, const uint64_t *payload, size_t upto)
{
	atomic_store_explicit(hint_of(t, set_of(t, tag), e), tag, memory_order_relaxed);
	atomic_store_explicit(&e[TAG], tag, memory_order_relaxed);
	atomic_store_explicit(&e[EXPIRES], (uint64_t)expires, memory_order_relaxed);
	for (size_t i = 0; i < upto; i++)
		atomic_store_explicit(&e[HEADER_WORDS + i], payload[i], memory_order_relaxed);
	atomic_store_explicit(&e[SUM], checksum(tag, (uint64_t)expires, payload, t->words),
			      memory_order_relaxed);
	atomic_store_explicit(&e[USED], now_ms(), memory_order_relaxed);
}

static void release(word *e, uint64_t token)
{
	atomic_compare_exchange_strong(&e[CLAIM], &token, 0);
}

static void write_close(word *e, uint64_t s, uint64_t token)
{
	/* If our claim was stolen meanwhile, the thief owns the sequence:
	 * leave it (the checksum covers whatever mix we made). */
	atomic_compare_exchange_strong_explicit(&e[SEQ], &s, s + 1, memory_order_release,
						memory_order_relaxed);
	release(e, token);
}

/* Write the entry e, claimed with token, whole. */
static void write_claimed(struct shared_table *t, word *e, uint64_t token, uint64_t tag,
			  int64_t expires, const uint64_t *payload)
{
	uint64_t s = write_open(e);
	write_fields(t, e, tag, expires, payload, t->words);
	write_close(e, s, token);
}

bool shared_table_begin(struct shared_table *t, uint64_t tag, int64_t now, uint64_t *out,
			bool *found, struct shared_write *w)
{
	*found = false;
	w->entry = NULL;
	w->token = 0;
	if (t->region == NULL || tag == 0)
		return false;
	uint64_t began = now_ms();
	for (;;) {
		word *e = victim(t, tag, now);
		uint64_t token = claim(t, e);
		/* Claimed: but if tag arrived in another way meanwhile, that
		 * way is the one to change. */
		word *own = token != 0 ? way_with_tag(t, set_of(t, tag), tag) : NULL;
		if (token != 0 && (own == NULL || own == e)) {
			uint64_t got_tag, expires;
			*found = read_entry(t, e, &got_tag, &expires, out) && got_tag == tag &&
				 (int64_t)expires > now;
			if (!*found)
				memset(out, 0, (size_t)t->words * sizeof *out);
			w->entry = e;
			w->token = token;
			w->tag = tag;
			return true;
		}
		if (token != 0)
			release(e, token);
		if (now_ms() - began >= t->claim_timeout_ms)
			return false;
		/* A write is a few stores: see shared_table_get_settled. */
		sleep_micros(100);
	}
}

void shared_table_commit(struct shared_table *t, struct shared_write *w, int64_t expires,
			 const uint64_t *payload)
{
	if (w->entry == NULL)
		return;
	write_claimed(t, w->entry, w->token, w->tag, expires, payload);
	w->entry = NULL;
}

void shared_table_abandon(struct shared_write *w)
{
	if (w->entry != NULL)
		release(w->entry, w->token);
	w->entry = NULL;
}

bool shared_table_put(struct shared_table *t, uint64_t tag, int64_t expires,
		      int64_t now, const uint64_t *payload)
{
	if (t->region == NULL || tag == 0)
		return false;
	word *e = victim(t, tag, now);
	uint64_t token = claim(t, e);
	if (token == 0)
		return false;
	write_claimed(t, e, token, tag, expires, payload);
	return true;
}

/* A way of the set, other than skip, that holds tag live (or is being
 * written: that may be tag arriving). */
static bool tag_live(const struct shared_table *t, word *set, const word *skip,
		     uint64_t tag, int64_t now)
{
	for (size_t w = 0; w < t->ways; w++) {
		word *e = way_of(t, set, w);
		if (e == skip)
			continue;
		if (live_write(t, e))
			return true; /* perhaps of tag */
		if (atomic_load_explicit(&e[SEQ], memory_order_acquire) & 1)
			continue; /* a dead writer's leftovers */
		if (atomic_load_explicit(&e[TAG], memory_order_relaxed) == tag &&
		    (int64_t)atomic_load_explicit(&e[EXPIRES], memory_order_relaxed) > now)
			return true;
	}
	return false;
}

enum shared_add shared_table_add(struct shared_table *t, uint64_t tag, int64_t expires,
				 int64_t now, const uint64_t *payload)
{
	if (t->region == NULL || tag == 0)
		return SHARED_BUSY;
	word *set = set_of(t, tag), *first = way_of(t, set, 0);
	if (tag_live(t, set, NULL, tag, now))
		return SHARED_EXISTS;
	uint64_t set_token = claim(t, first); /* the set's add lock */
	if (set_token == 0)
		return SHARED_BUSY;
	word *e = victim(t, tag, now);
	uint64_t token = e == first ? set_token : claim(t, e);
	enum shared_add result = SHARED_BUSY;
	if (token != 0) {
		if (tag_live(t, set, e, tag, now) ||
		    (atomic_load_explicit(&e[TAG], memory_order_relaxed) == tag &&
		     (int64_t)atomic_load_explicit(&e[EXPIRES], memory_order_relaxed) > now)) {
			result = SHARED_EXISTS;
		} else {
			uint64_t s = write_open(e);
			write_fields(t, e, tag, expires, payload, t->words);
			atomic_compare_exchange_strong_explicit(&e[SEQ], &s, s + 1,
								memory_order_release,
								memory_order_relaxed);
			result = SHARED_ADDED;
		}
		if (e != first)
			release(e, token);
	}
	release(first, set_token);
	return result;
}

void shared_table_remove(struct shared_table *t, uint64_t tag)
{
	if (t->region == NULL || tag == 0)
		return;
	word *set = set_of(t, tag);
	for (size_t w = 0; w < t->ways; w++) {
		word *e = way_of(t, set, w);
		if (atomic_load_explicit(&e[TAG], memory_order_relaxed) != tag)
			continue;
		uint64_t token = claim(t, e);
		if (token == 0)
			continue; /* a writer is replacing it anyway */
		uint64_t s = write_open(e);
		atomic_store_explicit(hint_of(t, set, e), 0, memory_order_relaxed);
		atomic_store_explicit(&e[TAG], 0, memory_order_relaxed);
		atomic_store_explicit(&e[EXPIRES], 0, memory_order_relaxed);
		write_close(e, s, token);
	}
}

uint64_t shared_table_count(const struct shared_table *t, int64_t now)
{
	uint64_t n = 0;
	if (t->region == NULL)
		return 0;
	for (size_t i = 0; i < (size_t)t->sets; i++) {
		word *set = (word *)t->region + i * t->ways * (1 + entry_words(t));
		for (size_t w = 0; w < t->ways; w++) {
			word *e = way_of(t, set, w);
			if (atomic_load_explicit(&e[TAG], memory_order_relaxed) != 0 &&
			    (int64_t)atomic_load_explicit(&e[EXPIRES], memory_order_relaxed) > now)
				n++;
		}
	}
	return n;
}

bool shared_table_test_abandon_write(struct shared_table *t, uint64_t tag,
				     int64_t now, const uint64_t *payload)
{
	if (t->region == NULL || tag == 0)
		return false;
	word *e = victim(t, tag, now);
	if (claim(t, e) == 0)
		return false;
	write_open(e);
	write_fields(t, e, tag, now + 3600, payload, t->words / 2);
	return true;
}

uint64_t shared_table_tag_of(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
		h = (h ^ *p) * UINT64_C(0x100000001b3);
	return h != 0 ? h : 1;
}
