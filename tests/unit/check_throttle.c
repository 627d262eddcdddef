/* check_throttle.c - the pure parts of throttle.c and its weave.conf keys. */
#include <check.h>
#include <string.h>

#include "check_suites.h"
#include "config.h"
#include "throttle.h"

/*
 * The lock rules of throttle_login_locked(): an address or pair lock
 * refuses; the account's spent day refuses only addresses not known.
 */
START_TEST(test_lock_rules)
{
	const int64_t now = 1000000;
	struct login_counters c = { 0 };
	ck_assert(!throttle_login_locked(&c, now));
	c.address_locked_until = now + 1;
	ck_assert(throttle_login_locked(&c, now));
	c.address_locked_until = now; /* ended */
	ck_assert(!throttle_login_locked(&c, now));
	c.pair_locked_until = now + 60;
	ck_assert(throttle_login_locked(&c, now));
	c.pair_locked_until = 0;
	c.name_counted = true;
	c.name_locked_until = now + 86400;
	ck_assert(throttle_login_locked(&c, now));
	c.known_until = now + 1; /* a correct login from here lately */
	ck_assert(!throttle_login_locked(&c, now));
	c.known_until = now; /* too long ago */
	ck_assert(throttle_login_locked(&c, now));
	/* A known address still meets its own pair lock. */
	c.known_until = now + 86400;
	c.pair_locked_until = now + 60;
	ck_assert(throttle_login_locked(&c, now));
}
END_TEST

/* A correct login writes only when it must: a pair to clear, a mark to renew. */
START_TEST(test_success_writes)
{
	const int64_t now = 1000000, life = (int64_t)KNOWN_ADDRESS_DAYS * 86400;
	struct login_counters c = { 0 };
	ck_assert(throttle_login_success_to_record(&c, now)); /* never marked */
	c.known_until = now + life; /* marked just now */
	ck_assert(!throttle_login_success_to_record(&c, now));
	c.known_until = now + life - 86400 + 1;
	ck_assert(!throttle_login_success_to_record(&c, now));
	c.known_until = now + life - 86400 - 1; /* over a day old */
	ck_assert(throttle_login_success_to_record(&c, now));
	c.known_until = now + life;
	c.pair_counted = true;
	ck_assert(throttle_login_success_to_record(&c, now));
}
END_TEST

START_TEST(test_exempt_list)
{
	const char *list = " 127.0.0.1, ::1\t192.0.2.10 ";
	ck_assert(throttle_address_exempt(list, "127.0.0.1"));
	ck_assert(throttle_address_exempt(list, "::1"));
	ck_assert(throttle_address_exempt(list, "192.0.2.10"));
	/* Whole words only: no prefixes, suffixes or empty matches. */
	ck_assert(!throttle_address_exempt(list, "127.0.0.10"));
	ck_assert(!throttle_address_exempt(list, "127.0.0."));
	ck_assert(!throttle_address_exempt(list, "92.0.2.10"));
	ck_assert(!throttle_address_exempt(list, ""));
	ck_assert(!throttle_address_exempt("", "127.0.0.1"));
	ck_assert(!throttle_address_exempt(NULL, "127.0.0.1"));
	ck_assert(!throttle_address_exempt(",,, ", ""));
}
END_TEST

START_TEST(test_config_keys)
{
	static const char text[] = "login_limit = 3\n"
				   "login_address_limit = 0\n"
				   "login_window = 60\n"
				   "login_lockout = 120\n"
				   "reset_limit = 2\n"
				   "reset_address_limit = 7\n"
				   "reset_window = 600\n"
				   "throttle_exempt = 10.0.0.1 10.0.0.2\n"
				   "login_account_limit = 50\n"
				   "trusted_proxies = 10.9.0.0/16\n";
	struct config cfg;
	char err[256];
	config_defaults(&cfg);
	ck_assert_int_eq(cfg.login_limit, 10);
	ck_assert_int_eq(cfg.login_address_limit, 100);
	ck_assert_int_eq(cfg.login_window, 900);
	ck_assert_int_eq(cfg.login_lockout, 900);
	ck_assert_int_eq(cfg.reset_limit, 5);
	ck_assert_int_eq(cfg.reset_address_limit, 20);
	ck_assert_int_eq(cfg.reset_window, 3600);
	ck_assert_str_eq(cfg.throttle_exempt, "");
	ck_assert_int_eq(cfg.login_account_limit, 100);
	ck_assert_str_eq(cfg.trusted_proxies, "");
	ck_assert_msg(config_parse(&cfg, "t.conf", text, strlen(text), err,
				   sizeof err) == 0, "%s", err);
	ck_assert_int_eq(cfg.login_limit, 3);
	ck_assert_int_eq(cfg.login_address_limit, 0);
	ck_assert_int_eq(cfg.login_window, 60);
	ck_assert_int_eq(cfg.login_lockout, 120);
	ck_assert_int_eq(cfg.reset_limit, 2);
	ck_assert_int_eq(cfg.reset_address_limit, 7);
	ck_assert_int_eq(cfg.reset_window, 600);
	ck_assert(throttle_address_exempt(cfg.throttle_exempt, "10.0.0.2"));
	ck_assert_int_eq(cfg.login_account_limit, 50);
	ck_assert(client_address_in_list(cfg.trusted_proxies, "10.9.3.4"));
	config_free(&cfg);

	/* A window of 0 would make every failure its own window: refused. */
	config_defaults(&cfg);
	ck_assert(config_parse(&cfg, "t.conf", "login_window = 0\n", 17, err,
			       sizeof err) < 0);
	ck_assert_ptr_nonnull(strstr(err, "login_window"));
	config_free(&cfg);
}
END_TEST

Suite *throttle_suite(void)
{
	Suite *s = suite_create("throttle");
	TCase *tc = tcase_create("policy");
	tcase_add_test(tc, test_exempt_list);
	tcase_add_test(tc, test_lock_rules);
	tcase_add_test(tc, test_success_writes);
	tcase_add_test(tc, test_config_keys);
	suite_add_tcase(s, tc);
	return s;
}
