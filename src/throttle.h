/*
 * throttle.h - limits on guessing and on mail: failed logins (a wrong
 * password, reset code or admin secret) per account name and per client
 * address, and password-reset mails per name and per address. The
 * counters live in the database (db_throttle.h), so every process sees
 * the same ones; the limits and windows come from weave.conf.
 *
 * A login that reached its limit is refused without its secret being
 * checked until the lock ends; the lock is logged once, when it starts.
 * A successful login clears its account's counter, never its address's
 * (one known password must not buy unlimited guesses at others).
 * Addresses listed in throttle_exempt skip the per-address limits.
 */
#ifndef WEAVE_THROTTLE_H
#define WEAVE_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"

struct config;

enum throttle_verdict {
	THROTTLE_ALLOW,
	THROTTLE_DENY,      /* a limit is reached */
	THROTTLE_DB_FAILED, /* could not tell: *st says why */
};

struct login_counters;

/*
 * The counters a login of name from address is subject to, as subjects
 * for db_user_get_login(): "" where none applies (limit off, exempt or
 * unknown address).
 */
void throttle_login_subjects(const struct config *cfg, const char *name,
			     const char *address, const char **name_subject,
			     const char **address_subject);

/* Is a login with these counters refused without its password being checked? */
bool throttle_login_locked(const struct login_counters *c, int64_t now);

/*
 * The same check in a query of its own, for secrets other than a
 * password (reset codes, the admin secret). name may be NULL (the admin secret has no
 * account), address NULL when unknown. *name_has_failures tells whether
 * a success must clear the account's counter.
 */
enum throttle_verdict throttle_login_check(const struct config *cfg,
					   const char *name, const char *address,
					   int64_t now, bool *name_has_failures,
					   enum db_status *st);

/*
 * Count a failed login; database errors are logged and otherwise ignored.
 * Returns when the lock of address ends if this failure locked it, else 0.
 */
int64_t throttle_login_failed(const struct config *cfg, const char *name,
			      const char *address, int64_t now);

/* A correct login: forget the account's failures. */
void throttle_login_succeeded(const char *name);

/*
 * Count a request for a reset-code mail and say whether it may be sent;
 * on THROTTLE_DENY *retry_after holds the seconds until it may.
 */
enum throttle_verdict throttle_reset_request(const struct config *cfg,
					     const char *name, const char *address,
					     int64_t now, int64_t *retry_after,
					     enum db_status *st);

/* Is address one of the space- or comma-separated addresses of list? */
bool throttle_address_exempt(const char *list, const char *address);

#endif
