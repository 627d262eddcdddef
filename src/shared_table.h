/*
 * shared_table.h - a bounded cache that several processes read and write
 * at once through shared memory, with no lock: the building block of the
 * host-wide caches (the account cache of account_cache.h, the KDF claims
 * of kdf_gate.h).
 *
 * A table is an array of sets of `ways` entries in a memory region the
 * caller provides (a part of the change board's file, change_board.h, or
 * private memory). An entry holds a 64-bit tag (the key's hash; 0 marks
 * an empty entry), an expiry in seconds and `words` 64-bit words of
 * payload. The caller derives the tag from its key and checks the key
 * kept in the payload: a tag only picks the entry.
 *
 * Concurrency. Every entry is a seqlock: a writer makes the sequence odd,
 * writes, and makes it even again; a reader copies the entry and keeps
 * the copy only if the sequence was the same even number before and
 * after. A reader never waits: an odd sequence (a write in progress, or
 * a writer that died in it) is a miss. Writers first claim the entry
 * with a compare-and-swap of a word holding the claim's time; a claim
 * older than the table's claim_timeout_ms is taken as a dead writer's
 * and stolen. If the "dead" writer was only paused and writes on, its
 * late stores could mix with the new contents while the sequence is even:
 * so each entry also carries a checksum of its tag, expiry and payload,
 * checked on every read. A torn or abandoned entry is therefore only ever
 * a miss, and the next put of its key repairs it.
 *
 * Eviction: a put replaces the entry of the same tag, else an empty or
 * expired one, else the least recently used of the set (reads note their
 * use, at most once a second per entry, to keep shared lines quiet).
 *
 * Nothing here allocates, logs or takes a lock; all functions may be
 * called by any number of processes on the same region at once.
 */
#ifndef WEAVE_SHARED_TABLE_H
#define WEAVE_SHARED_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Words of an entry besides its payload, and the size of a table in
 * words (for sizing regions statically). */
#define SHARED_TABLE_HEADER_WORDS 6
#define SHARED_TABLE_WORDS(sets, ways, words) \
	((size_t)(sets) * (ways) * (1 + SHARED_TABLE_HEADER_WORDS + (words)))

/* A process's view of a table; the entries live in the region. */
struct shared_table {
	void *region;
	uint32_t sets, ways, words;
	uint32_t claim_timeout_ms;
};

/* Bytes of region a table of these dimensions needs. */
size_t shared_table_bytes(uint32_t sets, uint32_t ways, uint32_t words);

/* Fill *t to use region (zeroed memory is an empty table). */
void shared_table_attach(struct shared_table *t, void *region, uint32_t sets,
			 uint32_t ways, uint32_t words);

/*
 * Copy the payload of the entry tagged tag into out (t->words words) if
 * there is one that is whole and expires after now (seconds). A tag of 0
 * is never found.
 */
bool shared_table_get(const struct shared_table *t, uint64_t tag, int64_t now,
		      uint64_t *out);

/*
 * As shared_table_get, but while the tag's set has a write in progress
 * by a live writer (perhaps of this tag), wait for it, at most
 * claim_timeout_ms, instead of missing; a miss is final only if no
 * write in the set began or ended during the look. For a reader that
 * would otherwise do something costly that a finished write makes
 * needless (kdf_gate.h: a second KDF for the same password).
 */
bool shared_table_get_settled(const struct shared_table *t, uint64_t tag, int64_t now,
			      uint64_t *out);

/*
 * Store payload (t->words words) under tag, expiring at expires
 * (seconds). false if the entry to write was being written by a live
 * writer (the put is then skipped: this is a cache) or tag is 0.
 */
bool shared_table_put(struct shared_table *t, uint64_t tag, int64_t expires,
		      int64_t now, const uint64_t *payload);

/*
 * A change of an entry that depends on what it holds (read, modify,
 * write): shared_table_begin claims the entry tag is written to, waiting
 * for a live writer of it (at most claim_timeout_ms), and copies its
 * payload into out (found), or zeros (!found) when it holds no whole,
 * unexpired entry of tag. Every writer claims first, so nobody writes it
 * until shared_table_commit stores the changed payload or
 * shared_table_abandon lets it go: two processes changing different
 * words of one entry both land, where a get then a put could store a
 * copy that lacks the other's words. false (nothing held) if the wait
 * ran out or tag is 0.
 */
struct shared_write {
	void *entry;
	uint64_t token;
	uint64_t tag;
};
bool shared_table_begin(struct shared_table *t, uint64_t tag, int64_t now, uint64_t *out,
			bool *found, struct shared_write *w);
void shared_table_commit(struct shared_table *t, struct shared_write *w, int64_t expires,
			 const uint64_t *payload);
void shared_table_abandon(struct shared_write *w);

/*
 * Store payload under tag only if no live (unexpired) entry has that tag:
 * an atomic "claim this key" across processes. Adds to one set are taken
 * one at a time (under the claim of the set's first entry), so two
 * processes can never both add the same tag.
 */
enum shared_add { SHARED_ADDED, SHARED_EXISTS, SHARED_BUSY };
enum shared_add shared_table_add(struct shared_table *t, uint64_t tag, int64_t expires,
				 int64_t now, const uint64_t *payload);

/* Empty the entry tagged tag, if any. */
void shared_table_remove(struct shared_table *t, uint64_t tag);

/* Entries in use (tag set and not expired at now): for statistics. */
uint64_t shared_table_count(const struct shared_table *t, int64_t now);

/*
 * For the tests only: claim the entry tag would be written to and leave
 * it mid-write (odd sequence, half the payload written), as a writer
 * killed there would. Returns false if the claim failed.
 */
bool shared_table_test_abandon_write(struct shared_table *t, uint64_t tag,
				     int64_t now, const uint64_t *payload);

/* 64-bit FNV-1a of a NUL-terminated string, never 0: a tag. */
uint64_t shared_table_tag_of(const char *s);

#endif
