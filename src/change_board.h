/*
 * change_board.h - counters every process on this host shares, that say
 * "this account changed" and "this address just failed a login".
 *
 * A FastCGI process keeps account rows it read (account_cache.h) so a
 * sync poll needs no database round trip. For that to be safe, every
 * write to an account through this host must reach every process at
 * once. The board is a small shared-memory file (mmap, MAP_SHARED) of
 * generation counters, one slot per account id modulo the slot count:
 * whoever changes an account bumps its slot (db_user.c does so for every
 * statement that changes a users row), and a kept row is only used while
 * its slot still holds the generation read before the row was. Two
 * accounts sharing a slot only cost each other an extra read.
 *
 * A second table holds, per client address (hashed), when its login lock
 * ends, as far as this host has seen: published when a failure here
 * locks the address, and when a login here finds it locked in the
 * database (a lock made by another web server). The kept-row shortcut is
 * not taken for a locked address.
 *
 * The board also holds the host's account cache (account_cache.h: one
 * entry per account, under keys only processes hold) and the KDF's
 * claims and bound (kdf_gate.h) and each account's queue of uploads
 * (upload_order.h), so that whichever process a request
 * lands on, a password is verified once per host and a row read by one
 * process serves all. change_board_bump() is the one place that
 * invalidates an account everywhere on the host; the change log
 * (change_log.h) calls it for changes made on other hosts.
 *
 * The file is created whole (sized, then marked), mode 0600; a file that
 * others may read or write is refused. It holds no key, no password hash
 * and no e-mail address (docs/security.md, "The host-wide cache file").
 * Counters in it say how often the caches served and how many password
 * verifications the host ran (weave-admin cache).
 *
 * Writes made elsewhere (another web server on the same database, SQL
 * typed by hand) reach the board through the change log (change_log.h)
 * within about a second; if the change log cannot be read,
 * account_cache_seconds bounds how long they go unseen.
 *
 * Opening can fail (no such file for weave-admin, a file owned by
 * someone else, a size that does not match): the board is then absent,
 * reads return 0 and nothing may be cached. All functions are safe to
 * call when it is absent.
 */
#ifndef WEAVE_CHANGE_BOARD_H
#define WEAVE_CHANGE_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared_table.h"

struct config;

/* The host-wide tables, and the payload words of their entries. */
enum board_table {
	BOARD_ACCOUNTS, /* account_cache.c: one entry per account */
	BOARD_CLAIMS,   /* kdf_gate.c: passwords being verified */
	BOARD_TABLE__MAX
};
#define BOARD_ACCOUNT_WORDS 112
#define BOARD_CLAIM_WORDS 5

/* What the board counts, for weave-admin cache and the benchmarks. */
enum board_counter {
	BOARD_VERIFICATIONS,     /* password KDF runs (all, also failed) */
	BOARD_CREDENTIAL_HITS,   /* logins whose password the cache vouched for */
	BOARD_CREDENTIAL_WAITS,  /* ... after waiting for another process's KDF */
	BOARD_ROW_HITS,          /* reads answered from a kept row */
	BOARD_ROW_MISSES,        /* reads that read the row */
	BOARD_STAMP_HITS,        /* info/collections from a kept answer */
	BOARD_STAMP_MISSES,
	BOARD_KDF_BUSY,          /* logins refused 503: too many KDFs at once */
	BOARD_SHARED_HITS,       /* logins vouched for by a verifier in the database */
	BOARD_RESTAMPS,          /* uploads that locked late and had to move their stamp */
	BOARD_TURN_TIMEOUTS,     /* ... that stopped waiting for the upload before theirs */
	BOARD_COUNTER__MAX
};
/* Words for counters in the file: new counters take reserved words, so a
 * file made by an older build keeps its layout (they start at zero). */
#define BOARD_COUNTER_WORDS 24

/* The file the config names, or the default derived from its database
 * settings, written to out (NUL-terminated). -1 if it does not fit. */
int change_board_path(const struct config *cfg, char *out, size_t cap);

/*
 * Map the board at path; create it (mode 0600) if create is set. A file
 * that exists must be a regular file of the right size, owned by this
 * user (or opened by root) and writable by nobody else. Returns 0, or
 * -1 with why in err (the board stays absent). Replaces a board that
 * was open.
 */
int change_board_open(const char *path, bool create, char *err, size_t cap);

void change_board_close(void);

bool change_board_ready(void);

/*
 * If the file at the opened path was removed or replaced (a hand, a
 * cleaner), map what is there now, creating it if the open did: every
 * process must count on the same file. Costs one stat(). Failures are
 * logged once, and leave the board absent.
 */
void change_board_refresh(void);

/* Changes with every open and unmapping: generations read from one
 * mapping mean nothing in another, and tables must be attached again. */
uint64_t change_board_epoch(void);

/* The generation of user_id's slot; 0 when the board is absent. */
uint64_t change_board_generation(int64_t user_id);

/* Invalidate every process's kept row of user_id (and its slot mates). */
void change_board_bump(int64_t user_id);

/*
 * One account slot's queue of uploads (upload_order.h): the last stamp
 * handed out, the highest stamp whose upload has gone past its turn, a
 * word its waiters sleep on (futex), and how many are in flight.
 */
struct upload_queue_slot {
	_Atomic int64_t handed;
	_Atomic int64_t passed;
	_Atomic uint32_t wake;
	_Atomic uint32_t active; /* uploads in flight */
};

/* The slot number of an account's queue, by its name (shared with its
 * slot mates); the queue of a slot number, NULL when the board is
 * absent. */
uint64_t change_board_upload_slot_of(const char *account);
struct upload_queue_slot *change_board_upload_slot(uint64_t slot);

/* Bumps of any account on this host so far: while it stays the same, no
 * generation changed (a row read before the id was known may be kept
 * with the generation read after it). 0 when the board is absent. */
uint64_t change_board_bumps(void);

/* Bumps asked for while the board was absent (weave-admin tells the
 * admin that running servers will see those changes late). */
unsigned long change_board_missed_bumps(void);

/* Publish that address's logins are locked until (seconds). */
void change_board_note_address_lock(const char *address, int64_t until);

/* When the lock of address (or of one sharing its slot) ends; 0 if none
 * was published, INT64_MAX when the board is absent (so callers take
 * the safe path). */
int64_t change_board_address_locked_until(const char *address);

/*
 * The table `which` of the board as mapped now; when the board is
 * absent, a private table of this process of the same shape (so what is
 * kept there serves this process only, and account_cache.c trusts no
 * kept row from it: generations are not shared). The one attach path:
 * callers ask again for each use, never keep the pointer's target
 * across requests.
 */
struct shared_table *change_board_table(enum board_table which);

/*
 * The host-wide bound on concurrent password KDFs: take one of the first
 * limit slots (a slot whose process is gone is taken over), at now
 * (seconds). The slot number, or -1 if all are busy. Without a board a
 * process has one slot. change_board_kdf_leave() gives it back.
 */
int change_board_kdf_enter(int limit, int64_t now);
void change_board_kdf_leave(int slot);
/* Slots held now (weave-admin cache, tests). */
int change_board_kdf_running(void);

/* Sleep while *word (a word of the board) still holds seen, until until_ms
 * on the monotonic clock (monotonic_ms) at the latest, or until a wake for
 * one of bits (not 0); and, after changing word, wake up to how_many of
 * its sleepers whose bits meet bits. */
void change_board_sleep(_Atomic uint32_t *word, uint32_t seen, int64_t until_ms,
			uint32_t bits);
void change_board_wake(_Atomic uint32_t *word, int how_many, uint32_t bits);

/* Raise *word (a word of the board) to at least value; a larger value
 * already there stays. Returns what it held before. */
int64_t change_board_raise(_Atomic int64_t *word, int64_t value);

/* Count one event / read a count (0 when the board is absent). */
void change_board_count(enum board_counter c);
uint64_t change_board_counter(enum board_counter c);

#endif
