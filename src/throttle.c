/* throttle.c - the policy of throttle.h over the counters of db_throttle.h. */
#include "throttle.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "db_throttle.h"
#include "log.h"

#define KNOWN_LIFETIME ((int64_t)KNOWN_ADDRESS_DAYS * 86400)
/* A correct login renews its address's mark at most once a day: one
 * write per account and address per day, not one per sync. */
#define KNOWN_RENEWAL 86400

bool throttle_address_exempt(const char *list, const char *address)
{
	return client_address_in_list(list, address);
}

/* The network of address into net: false when unknown or not an IP address. */
static bool network_of(const char *address, char net[CLIENT_ADDRESS_MAX])
{
	return address != NULL &&
	       client_address_network(address, net, CLIENT_ADDRESS_MAX) == 0;
}

/* As network_of(), and false for exempt addresses: counted per address. */
static bool counted_network(const struct config *cfg, const char *address,
			    char net[CLIENT_ADDRESS_MAX])
{
	return network_of(address, net) &&
	       !throttle_address_exempt(cfg->throttle_exempt, address);
}

void throttle_login_subjects(const struct config *cfg, const char *name,
			     const char *address, struct login_subjects *out)
{
	char net[CLIENT_ADDRESS_MAX];
	memset(out, 0, sizeof *out);
	/* The account's row is kept even with its limit off: while it is
	 * live, no process answers the account from a kept row (route.c). */
	out->name = name;
	out->address = "";
	out->pair = "";
	if (!network_of(address, net))
		return;
	snprintf(out->pair_buf, sizeof out->pair_buf, "%s %s", name, net);
	out->pair = out->pair_buf;
	if (cfg->login_address_limit > 0 &&
	    !throttle_address_exempt(cfg->throttle_exempt, address)) {
		snprintf(out->address_buf, sizeof out->address_buf, "%s", net);
		out->address = out->address_buf;
	}
}

bool throttle_login_locked(const struct login_counters *c, int64_t now)
{
	const char *why = NULL;
	if (c->address_locked_until > now)
		why = "the client address is locked";
	else if (c->pair_locked_until > now)
		why = "the account is locked for this client address";
	else if (c->name_locked_until > now && c->known_until <= now)
		why = "the account's daily guesses are spent and it has not "
		      "logged in from this address lately";
	if (why != NULL)
		log_debug("login refused unchecked: %s", why);
	return why != NULL;
}

bool throttle_login_success_to_record(const struct login_counters *c, int64_t now)
{
	return c->pair_counted || c->known_until < now + KNOWN_LIFETIME - KNOWN_RENEWAL;
}

/* Count one event; true if it locked subject. Errors are logged. */
static bool count(enum throttle_kind kind, const char *subject, int64_t now,
		  int64_t window, int64_t limit, int64_t lockout)
{
	bool locked_now = false;
	enum db_status st = db_throttle_count(kind, subject, now, window, limit,
					      lockout, &locked_now);
	if (st != DB_OK)
		log_error("could not count a failure of %s: %s", subject,
			  db_status_text(st));
	return st == DB_OK && locked_now;
}

static int64_t count_address(const struct config *cfg, const char *net,
			     int64_t now)
{
	if (cfg->login_address_limit <= 0 ||
	    !count(THROTTLE_LOGIN_ADDRESS, net, now, cfg->login_window,
		   cfg->login_address_limit, cfg->login_lockout))
		return 0;
	log_warn("client address %s reached %lld failed logins within %lld s: "
		 "locked for %lld s", net, (long long)cfg->login_address_limit,
		 (long long)cfg->login_window, (long long)cfg->login_lockout);
	return now + cfg->login_lockout;
}

static void count_account(const struct config *cfg, const char *name,
			  const char *pair, int64_t now)
{
	/* With the limit off the row still counts (throttle_login_subjects). */
	if (count(THROTTLE_LOGIN_USER, name, now, ACCOUNT_WINDOW_SECONDS,
		  cfg->login_account_limit, ACCOUNT_WINDOW_SECONDS))
		log_warn("account %s reached %lld failed logins within a day: for "
			 "a day only addresses it logged in from in the last %d "
			 "days may try its password", name,
			 (long long)cfg->login_account_limit, KNOWN_ADDRESS_DAYS);
	if (pair == NULL || cfg->login_limit <= 0)
		return;
	if (count(THROTTLE_LOGIN_PAIR, pair, now, cfg->login_window,
		  cfg->login_limit, cfg->login_lockout)) {
		log_warn("account and address %s reached %lld failed logins within "
			 "%lld s: locked for %lld s", pair, (long long)cfg->login_limit,
			 (long long)cfg->login_window, (long long)cfg->login_lockout);
		/* While a lock lives, so must the account's row: it keeps
		 * kept rows, which know no locks, out of use (route.c). */
		db_throttle_extend(THROTTLE_LOGIN_USER, name, now + cfg->login_lockout);
	}
}

int64_t throttle_login_failed(const struct config *cfg, const char *name,
			      const char *address, int64_t now)
{
	char net[CLIENT_ADDRESS_MAX];
	bool counted = counted_network(cfg, address, net);
	if (name != NULL) {
		struct login_subjects s;
		throttle_login_subjects(cfg, name, address, &s);
		count_account(cfg, name, counted ? s.pair : NULL, now);
	}
	int64_t address_locked_until = counted ? count_address(cfg, net, now) : 0;
	/* Keep the table small: rows past their window are dead weight. */
	uint64_t removed = 0;
	db_throttle_forget(now, 100, &removed);
	return address_locked_until;
}

void throttle_login_succeeded(const struct config *cfg, const char *name,
			      const char *address, int64_t now)
{
	struct login_subjects s;
	uint64_t removed = 0;
	throttle_login_subjects(cfg, name, address, &s);
	if (s.pair[0] == '\0')
		return;
	enum db_status st = db_throttle_clear(THROTTLE_LOGIN_PAIR, s.pair, &removed);
	if (st == DB_OK)
		st = db_throttle_touch(THROTTLE_LOGIN_KNOWN, s.pair, now, KNOWN_LIFETIME);
	if (st != DB_OK)
		log_error("could not record the correct login of %s: %s", s.pair,
			  db_status_text(st));
	else if (removed > 0)
		log_debug("failed logins of %s cleared by a correct login", s.pair);
}

/* The live row of one subject (an empty row for NULL). */
static enum db_status get_row(enum throttle_kind kind, const char *subject,
			      int64_t now, struct throttle_row *row)
{
	struct throttle_row unused;
	memset(row, 0, sizeof *row);
	if (subject == NULL)
		return DB_OK;
	/* An empty subject matches no row: names and addresses never are. */
	return db_throttle_get(kind, subject, kind, "", now, row, &unused);
}

static bool locked(const struct throttle_row *r, int64_t now)
{
	return r->found && r->locked_until > now;
}

static int64_t wait_for(const struct throttle_row *r, int64_t now)
{
	int64_t wait = r->locked_until - now;
	return wait > 0 ? wait : 1;
}

enum throttle_verdict throttle_address_check(const struct config *cfg,
					     const char *address, int64_t now,
					     enum db_status *st)
{
	char net[CLIENT_ADDRESS_MAX];
	struct throttle_row r;
	bool counted = cfg->login_address_limit > 0 &&
		       counted_network(cfg, address, net);
	*st = get_row(THROTTLE_LOGIN_ADDRESS, counted ? net : NULL, now, &r);
	if (*st != DB_OK)
		return THROTTLE_DB_FAILED;
	return locked(&r, now) ? THROTTLE_DENY : THROTTLE_ALLOW;
}

enum throttle_verdict throttle_reset_request(const struct config *cfg,
					     const char *name, const char *address,
					     int64_t now, int64_t *retry_after,
					     enum db_status *st)
{
	char net[CLIENT_ADDRESS_MAX];
	struct throttle_row by_name, by_address;
	const char *name_subject = cfg->reset_limit > 0 ? name : NULL;
	const char *address_subject = cfg->reset_address_limit > 0 &&
						      counted_network(cfg, address, net)
					      ? net
					      : NULL;
	*retry_after = 0;
	memset(&by_name, 0, sizeof by_name);
	memset(&by_address, 0, sizeof by_address);
	if (name_subject != NULL || address_subject != NULL)
		*st = db_throttle_get(THROTTLE_RESET_USER, name_subject ? name_subject : "",
				      THROTTLE_RESET_ADDRESS,
				      address_subject ? address_subject : "", now,
				      &by_name, &by_address);
	else
		*st = DB_OK;
	if (*st != DB_OK)
		return THROTTLE_DB_FAILED;
	if (locked(&by_name, now) || locked(&by_address, now)) {
		int64_t a = locked(&by_name, now) ? wait_for(&by_name, now) : 0;
		int64_t b = locked(&by_address, now) ? wait_for(&by_address, now) : 0;
		*retry_after = a > b ? a : b;
		return THROTTLE_DENY;
	}
	/* Requests, not failures: the one that reaches the limit still goes
	 * out, and the next one waits for the window to end. */
	if (name_subject != NULL &&
	    count(THROTTLE_RESET_USER, name_subject, now, cfg->reset_window,
		  cfg->reset_limit, cfg->reset_window))
		log_warn("account %s reached %lld password-reset requests within "
			 "%lld s", name_subject, (long long)cfg->reset_limit,
			 (long long)cfg->reset_window);
	if (address_subject != NULL &&
	    count(THROTTLE_RESET_ADDRESS, address_subject, now, cfg->reset_window,
		  cfg->reset_address_limit, cfg->reset_window))
		log_warn("client address %s reached %lld password-reset requests or "
			 "wrong codes within %lld s", address_subject,
			 (long long)cfg->reset_address_limit, (long long)cfg->reset_window);
	return THROTTLE_ALLOW;
}

enum throttle_verdict throttle_code_check(const struct config *cfg,
					  const char *address, int64_t now,
					  int64_t *retry_after, enum db_status *st)
{
	char net[CLIENT_ADDRESS_MAX];
	struct throttle_row r;
	bool counted = cfg->reset_address_limit > 0 &&
		       counted_network(cfg, address, net);
	*retry_after = 0;
	*st = get_row(THROTTLE_RESET_ADDRESS, counted ? net : NULL, now, &r);
	if (*st != DB_OK)
		return THROTTLE_DB_FAILED;
	if (!locked(&r, now))
		return THROTTLE_ALLOW;
	*retry_after = wait_for(&r, now);
	return THROTTLE_DENY;
}

void throttle_code_failed(const struct config *cfg, const char *address,
			  int64_t now)
{
	char net[CLIENT_ADDRESS_MAX];
	if (cfg->reset_address_limit <= 0 || !counted_network(cfg, address, net))
		return;
	if (count(THROTTLE_RESET_ADDRESS, net, now, cfg->reset_window,
		  cfg->reset_address_limit, cfg->reset_window))
		log_warn("client address %s reached %lld password-reset requests or "
			 "wrong codes within %lld s: locked for %lld s", net,
			 (long long)cfg->reset_address_limit,
			 (long long)cfg->reset_window, (long long)cfg->reset_window);
}
