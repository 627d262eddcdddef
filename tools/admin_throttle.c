/* admin_throttle.c - weave-admin user unlock, throttle list, throttle clear. */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "client_address.h"
#include "db_throttle.h"
#include "util.h"

static const char *kind_name(enum throttle_kind kind)
{
	switch (kind) {
	case THROTTLE_LOGIN_USER:
		return "login/account";
	case THROTTLE_LOGIN_ADDRESS:
		return "login/address";
	case THROTTLE_RESET_USER:
		return "reset/account";
	case THROTTLE_RESET_ADDRESS:
		return "reset/address";
	case THROTTLE_LOGIN_PAIR:
		return "login/pair";
	case THROTTLE_LOGIN_KNOWN:
		return "known/pair";
	}
	return "?";
}

/*
 * Clear the counters (logins, reset mails) of one subject, and the
 * failed logins of the account-and-address pairs it is part of
 * ("name address": pair_part is "name " or " address"). The "known"
 * marks stay: they are no lock.
 */
static int clear_pair(enum throttle_kind login, enum throttle_kind reset,
		      const char *subject, const char *pair_part, bool suffix,
		      const char *what)
{
	uint64_t a = 0, b = 0, c = 0;
	enum db_status st = db_throttle_clear(login, subject, &a);
	if (st == DB_OK)
		st = db_throttle_clear(reset, subject, &b);
	if (st == DB_OK)
		st = db_throttle_clear_part(THROTTLE_LOGIN_PAIR, pair_part, suffix, &c);
	if (st != DB_OK)
		return db_fail(st, "clearing the counters");
	if (a + b + c == 0)
		printf("%s %s had no failed logins or reset requests on record\n",
		       what, subject);
	else
		printf("%s %s unlocked: its failed logins and reset requests are "
		       "forgotten\n", what, subject);
	return EXIT_OK;
}

int cmd_user_unlock(const struct args *a)
{
	char name[USERNAME_MAX + 1];
	/* Unknown names are counted (and locked) too, so no lookup here. */
	int rc = account_name(a->pos[0], name, NULL);
	if (rc != EXIT_OK)
		return rc;
	char prefix[USERNAME_MAX + 2];
	snprintf(prefix, sizeof prefix, "%s ", name);
	return clear_pair(THROTTLE_LOGIN_USER, THROTTLE_RESET_USER, name, prefix,
			  false, "account");
}

int cmd_throttle_clear(const struct args *a)
{
	char net[CLIENT_ADDRESS_MAX], suffix[CLIENT_ADDRESS_MAX + 1];
	/* Counted by network: an IPv6 address by its /64 (throttle.h). */
	if (client_address_network(a->pos[0], net, sizeof net) < 0)
		return usage_error("'%s' is not an IPv4 or IPv6 address", a->pos[0]);
	snprintf(suffix, sizeof suffix, " %s", net);
	return clear_pair(THROTTLE_LOGIN_ADDRESS, THROTTLE_RESET_ADDRESS, net,
			  suffix, true, "client address");
}

struct list_ctx {
	json_object *array;
	int64_t now;
	int count;
	int known; /* known/pair rows left out of the table */
};

static int list_row(void *ctx, enum throttle_kind kind, const char *subject,
		    const struct throttle_row *r, int64_t expires)
{
	struct list_ctx *l = ctx;
	bool is_locked = r->locked_until > l->now;
	l->count++;
	if (l->array != NULL) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "kind", json_object_new_string(kind_name(kind)));
		json_object_object_add(o, "subject", json_object_new_string(subject));
		json_object_object_add(o, "events", json_object_new_int64(r->events));
		json_object_object_add(o, "window_start",
				       json_object_new_int64(r->window_start));
		json_object_object_add(o, "locked_until",
				       is_locked ? json_object_new_int64(r->locked_until)
						 : NULL);
		json_object_object_add(o, "expires", json_object_new_int64(expires));
		json_object_array_add(l->array, o);
		return 0;
	}
	/* One per account and address that logged in lately: many, and no
	 * lock; the table counts them, --json lists them. */
	if (kind == THROTTLE_LOGIN_KNOWN) {
		l->count--;
		l->known++;
		return 0;
	}
	char since[32], until[32];
	if (l->count == 1) /* with the first row: a failure prints no header */
		printf("%-14s %-40s %6s  %-24s %s\n", "KIND", "ACCOUNT/ADDRESS", "COUNT",
		       "SINCE", "LOCKED UNTIL");
	format_utc(r->window_start, since, sizeof since);
	if (is_locked)
		format_utc(r->locked_until, until, sizeof until);
	else
		snprintf(until, sizeof until, "-");
	printf("%-14s %-40s %6" PRId64 "  %-24s %s\n", kind_name(kind), subject,
	       r->events, since, until);
	return 0;
}

int cmd_throttle_list(const struct args *a)
{
	struct list_ctx l = { NULL, now_seconds(), 0, 0 };
	if (has_opt(a, OPT_JSON))
		l.array = json_object_new_array();
	enum db_status st = db_throttle_list(l.now, list_row, &l);
	if (st != DB_OK) {
		json_object_put(l.array);
		return db_fail(st, "listing the counters");
	}
	if (l.array != NULL)
		json_print(l.array);
	else if (l.count == 0)
		printf("(no failed logins or reset requests in their windows)\n");
	if (l.array == NULL && l.known > 0)
		printf("(and %d known account addresses, kind known/pair: --json lists them)\n",
		       l.known);
	return EXIT_OK;
}
