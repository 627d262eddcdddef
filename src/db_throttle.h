/*
 * db_throttle.h - the throttle table: counters of failed logins and of
 * password-reset requests per account name and per client address,
 * shared by every process (throttle.c holds the policy). No HTTP here.
 *
 * Times are seconds since the epoch. A row counts events in a window
 * that starts at its first event; it is live until `expires`, the later
 * of the window's end and the end of a lock.
 */
#ifndef WEAVE_DB_THROTTLE_H
#define WEAVE_DB_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"

enum throttle_kind {
	THROTTLE_LOGIN_USER = 1,    /* failed logins per name, per day */
	THROTTLE_LOGIN_ADDRESS = 2, /* failed logins per client address */
	THROTTLE_RESET_USER = 3,    /* reset-code mails per name */
	THROTTLE_RESET_ADDRESS = 4, /* reset-code mails and wrong codes per address */
	THROTTLE_LOGIN_PAIR = 5,    /* failed logins per "name address" */
	THROTTLE_LOGIN_KNOWN = 6,   /* correct logins per "name address" */
};

struct throttle_row {
	bool found; /* a live row exists */
	int64_t events;
	int64_t window_start;
	int64_t locked_until; /* 0: not locked */
};

/* The live rows of (kind_a, subject_a) and (kind_b, subject_b) at `now`. */
enum db_status db_throttle_get(enum throttle_kind kind_a, const char *subject_a,
			       enum throttle_kind kind_b, const char *subject_b,
			       int64_t now, struct throttle_row *a,
			       struct throttle_row *b);

/*
 * Count one event: a new window starts when the row's has ended or its
 * lock has run out. When the window then holds `limit` events the row is
 * locked until now + lockout, and *locked_now is set for the one call
 * that locked it (so the lock is logged once).
 */
enum db_status db_throttle_count(enum throttle_kind kind, const char *subject,
				 int64_t now, int64_t window, int64_t limit,
				 int64_t lockout, bool *locked_now);

/*
 * Record an event that keeps its row live for `lifetime` seconds from
 * now, however many came before (a correct login marking its address).
 */
enum db_status db_throttle_touch(enum throttle_kind kind, const char *subject,
				 int64_t now, int64_t lifetime);

/* Keep a live row live at least until `until`. */
enum db_status db_throttle_extend(enum throttle_kind kind, const char *subject,
				  int64_t until);

/* Forget the row (a successful login). */
enum db_status db_throttle_clear(enum throttle_kind kind, const char *subject,
				 uint64_t *removed);

/*
 * Forget the rows of kind whose subject starts with prefix, or (suffix
 * true) ends with it: the pairs ("name address") of a name or an address.
 */
enum db_status db_throttle_clear_part(enum throttle_kind kind, const char *part,
				      bool suffix, uint64_t *removed);

/* Delete up to `batch` rows that are no longer live. */
enum db_status db_throttle_forget(int64_t now, int64_t batch, uint64_t *removed);

typedef int (*db_throttle_fn)(void *ctx, enum throttle_kind kind,
			      const char *subject, const struct throttle_row *row,
			      int64_t expires);
/* Every live row, locked ones first (for weave-admin). */
enum db_status db_throttle_list(int64_t now, db_throttle_fn fn, void *ctx);

#endif
