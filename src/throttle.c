/* throttle.c - the policy of throttle.h over the counters of db_throttle.h. */
#include "throttle.h"

#include <string.h>

#include "config.h"
#include "db_throttle.h"
#include "db_user.h"
#include "log.h"

bool throttle_address_exempt(const char *list, const char *address)
{
	size_t len = strlen(address);
	const char *p = list;
	while (p != NULL && *p != '\0') {
		size_t skip = strspn(p, " ,\t");
		p += skip;
		size_t word = strcspn(p, " ,\t");
		if (word == len && word > 0 && memcmp(p, address, len) == 0)
			return true;
		p += word;
	}
	return false;
}

/* The address to count, or NULL when it is unknown or exempt. */
static const char *counted_address(const struct config *cfg, const char *address)
{
	if (address == NULL || address[0] == '\0' ||
	    throttle_address_exempt(cfg->throttle_exempt, address))
		return NULL;
	return address;
}

static bool locked(const struct throttle_row *r, int64_t now)
{
	return r->found && r->locked_until > now;
}

/*
 * The subjects a pair of limits applies to: the name unless its limit is
 * off, the address unless its limit is off or it is unknown or exempt.
 * NULL where none applies.
 */
static void pick_subjects(const struct config *cfg, int64_t name_limit,
			  int64_t address_limit, const char *name,
			  const char *address, const char **name_subject,
			  const char **address_subject)
{
	*name_subject = name_limit > 0 ? name : NULL;
	*address_subject = address_limit > 0 ? counted_address(cfg, address) : NULL;
}

/*
 * Look up the name's and the address's rows of the given kinds; a
 * missing subject gets an empty row. One round trip for both.
 */
static enum db_status get_rows(enum throttle_kind name_kind, const char *name,
			       enum throttle_kind address_kind,
			       const char *address, int64_t now,
			       struct throttle_row *by_name,
			       struct throttle_row *by_address)
{
	memset(by_name, 0, sizeof *by_name);
	memset(by_address, 0, sizeof *by_address);
	if (name == NULL && address == NULL)
		return DB_OK;
	/* An empty subject matches no row: names and addresses never are. */
	return db_throttle_get(name_kind, name ? name : "", address_kind,
			       address ? address : "", now, by_name, by_address);
}

void throttle_login_subjects(const struct config *cfg, const char *name,
			     const char *address, const char **name_subject,
			     const char **address_subject)
{
	pick_subjects(cfg, cfg->login_limit, cfg->login_address_limit, name,
		      address, name_subject, address_subject);
	if (*name_subject == NULL)
		*name_subject = "";
	if (*address_subject == NULL)
		*address_subject = "";
}

bool throttle_login_locked(const struct login_counters *c, int64_t now)
{
	if (c->name_locked_until > now || c->address_locked_until > now) {
		log_debug("login refused unchecked: %s is locked",
			  c->name_locked_until > now ? "the account"
						     : "the client address");
		return true;
	}
	return false;
}

enum throttle_verdict throttle_login_check(const struct config *cfg,
					   const char *name, const char *address,
					   int64_t now, bool *name_has_failures,
					   enum db_status *st)
{
	struct throttle_row by_name, by_address;
	pick_subjects(cfg, cfg->login_limit, cfg->login_address_limit, name,
		      address, &name, &address);
	*name_has_failures = false;
	*st = get_rows(THROTTLE_LOGIN_USER, name, THROTTLE_LOGIN_ADDRESS, address,
		       now, &by_name, &by_address);
	if (*st != DB_OK)
		return THROTTLE_DB_FAILED;
	*name_has_failures = by_name.found;
	struct login_counters c = { by_name.found, by_name.locked_until,
				    by_address.locked_until };
	return throttle_login_locked(&c, now) ? THROTTLE_DENY : THROTTLE_ALLOW;
}

/* Count one event; true if it locked subject. */
static bool count(enum throttle_kind kind, const char *subject, int64_t now,
		  int64_t window, int64_t limit, int64_t lockout, const char *what)
{
	bool locked_now = false;
	enum db_status st = db_throttle_count(kind, subject, now, window, limit,
					      lockout, &locked_now);
	if (st != DB_OK)
		log_error("could not count a %s: %s", what, db_status_text(st));
	else if (locked_now)
		log_warn("%s %s reached %lld %ss within %lld s: locked for %lld s",
			 kind == THROTTLE_LOGIN_USER || kind == THROTTLE_RESET_USER
				 ? "account"
				 : "client address",
			 subject, (long long)limit, what, (long long)window,
			 (long long)lockout);
	return st == DB_OK && locked_now;
}

int64_t throttle_login_failed(const struct config *cfg, const char *name,
			      const char *address, int64_t now)
{
	int64_t address_locked_until = 0;
	pick_subjects(cfg, cfg->login_limit, cfg->login_address_limit, name,
		      address, &name, &address);
	if (name != NULL)
		count(THROTTLE_LOGIN_USER, name, now, cfg->login_window,
		      cfg->login_limit, cfg->login_lockout, "failed login");
	if (address != NULL &&
	    count(THROTTLE_LOGIN_ADDRESS, address, now, cfg->login_window,
		  cfg->login_address_limit, cfg->login_lockout, "failed login"))
		address_locked_until = now + cfg->login_lockout;
	/* Keep the table small: rows past their window are dead weight. */
	uint64_t removed = 0;
	db_throttle_forget(now, 100, &removed);
	return address_locked_until;
}

void throttle_login_succeeded(const char *name)
{
	uint64_t removed = 0;
	enum db_status st = db_throttle_clear(THROTTLE_LOGIN_USER, name, &removed);
	if (st != DB_OK)
		log_error("could not clear the failed logins of %s: %s", name,
			  db_status_text(st));
	else if (removed > 0)
		log_debug("failed logins of %s cleared by a correct login", name);
}

static int64_t wait_for(const struct throttle_row *r, int64_t now)
{
	int64_t wait = r->locked_until - now;
	return wait > 0 ? wait : 1;
}

enum throttle_verdict throttle_reset_request(const struct config *cfg,
					     const char *name, const char *address,
					     int64_t now, int64_t *retry_after,
					     enum db_status *st)
{
	struct throttle_row by_name, by_address;
	*retry_after = 0;
	pick_subjects(cfg, cfg->reset_limit, cfg->reset_address_limit, name,
		      address, &name, &address);
	*st = get_rows(THROTTLE_RESET_USER, name, THROTTLE_RESET_ADDRESS, address,
		       now, &by_name, &by_address);
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
	if (name != NULL)
		count(THROTTLE_RESET_USER, name, now, cfg->reset_window,
		      cfg->reset_limit, cfg->reset_window, "password-reset request");
	if (address != NULL)
		count(THROTTLE_RESET_ADDRESS, address, now, cfg->reset_window,
		      cfg->reset_address_limit, cfg->reset_window,
		      "password-reset request");
	return THROTTLE_ALLOW;
}
