/* check_throttle.c - the pure parts of throttle.c and its weave.conf keys. */
#include <check.h>
#include <string.h>

#include "check_suites.h"
#include "config.h"
#include "throttle.h"

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
				   "throttle_exempt = 10.0.0.1 10.0.0.2\n";
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
	tcase_add_test(tc, test_config_keys);
	suite_add_tcase(s, tc);
	return s;
}
