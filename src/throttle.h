/*
 * throttle.h - limits on guessing and on mail, built so that nobody can
 * use them to lock an account's owner out. The counters live in the
 * database (db_throttle.h), so every process sees the same ones; the
 * limits and windows come from weave.conf.
 *
 * Passwords. A wrong password (or an unknown name) is counted three
 * times: per account and client address (login_limit per login_window,
 * then that pair is refused for login_lockout), per client address
 * (login_address_limit, the same way: sprays over many names), and per
 * account per day (login_account_limit). The daily count locks nobody
 * out: once spent, the account is "guarded" for a day, and only
 * addresses it logged in from correctly within KNOWN_ADDRESS_DAYS still
 * get their passwords checked. So an attacker at other addresses gets
 * login_account_limit guesses per account per day however many
 * addresses they use, while the owner, at the addresses it syncs from,
 * is never refused for failures it did not make. A correct login clears
 * its pair's count and marks its address known, never the account's
 * daily count (else each sync of the owner would buy the attacker a new
 * budget) nor its address's count (one known password must not buy
 * guesses at others).
 *
 * Addresses are counted by network (client_address_network(): an IPv6
 * /64); behind trusted proxies the address is the one the proxy saw
 * (client_address.h). Addresses in throttle_exempt are not counted per
 * address or per pair; they are subject to the guard like any other.
 *
 * Reset codes and the admin secret. A wrong reset code counts against
 * the reset flow's own per-address limit (reset_address_limit per
 * reset_window, shared with reset-mail requests), never against logins;
 * a wrong admin secret counts as a failed login of the address.
 *
 * A refused attempt is not checked and not counted; the lock is logged
 * once, when it starts.
 */
#ifndef WEAVE_THROTTLE_H
#define WEAVE_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#include "client_address.h"
#include "db.h"
#include "db_user.h"

struct config;

/* How long a correct login keeps its address known to its account. */
#define KNOWN_ADDRESS_DAYS 30
/* The period of login_account_limit. */
#define ACCOUNT_WINDOW_SECONDS 86400

enum throttle_verdict {
	THROTTLE_ALLOW,
	THROTTLE_DENY,      /* a limit is reached */
	THROTTLE_DB_FAILED, /* could not tell: *st says why */
};

/*
 * The counters a login of name from address is subject to, for
 * db_user_get_login(); name and address as the request gave them
 * (address may be NULL).
 */
void throttle_login_subjects(const struct config *cfg, const char *name,
			     const char *address, struct login_subjects *out);

/* Is a login with these counters refused without its password being checked? */
bool throttle_login_locked(const struct login_counters *c, int64_t now);

/* Must a correct login with these counters write (clear its pair, mark its address known)? */
bool throttle_login_success_to_record(const struct login_counters *c, int64_t now);

/*
 * For the admin secret: is the client address locked? In a query of its
 * own; address NULL when unknown.
 */
enum throttle_verdict throttle_address_check(const struct config *cfg,
					     const char *address, int64_t now,
					     enum db_status *st);

/*
 * Count a failed login of name (NULL: no account, the admin secret) from
 * address; database errors are logged and otherwise ignored. Returns
 * when the lock of address ends if this failure locked it, else 0.
 */
int64_t throttle_login_failed(const struct config *cfg, const char *name,
			      const char *address, int64_t now);

/* A correct login of name from address: see throttle_login_success_to_record(). */
void throttle_login_succeeded(const struct config *cfg, const char *name,
			      const char *address, int64_t now);

/*
 * Count a request for a reset-code mail and say whether it may be sent;
 * on THROTTLE_DENY *retry_after holds the seconds until it may.
 */
enum throttle_verdict throttle_reset_request(const struct config *cfg,
					     const char *name, const char *address,
					     int64_t now, int64_t *retry_after,
					     enum db_status *st);

/*
 * May a reset code from address be checked? THROTTLE_DENY with
 * *retry_after when the address spent the reset flow's limit.
 */
enum throttle_verdict throttle_code_check(const struct config *cfg,
					  const char *address, int64_t now,
					  int64_t *retry_after, enum db_status *st);

/* Count a wrong reset code from address (after the request's transaction). */
void throttle_code_failed(const struct config *cfg, const char *address,
			  int64_t now);

/* Is address one of the addresses or networks of list (client_address_in_list)? */
bool throttle_address_exempt(const char *list, const char *address);

#endif
