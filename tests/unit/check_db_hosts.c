/* check_db_hosts.c - the db_host list (db_hosts.c) and its weave.conf key. */
#include <check.h>
#include <string.h>

#include "check_suites.h"
#include "config.h"
#include "db_hosts.h"

START_TEST(test_one_host_takes_default_port)
{
	struct db_hosts h;
	const char *why = NULL;
	ck_assert_int_eq(db_hosts_parse("127.0.0.1", 3306, &h, &why), 0);
	ck_assert_uint_eq(h.count, 1);
	ck_assert_str_eq(h.host[0].name, "127.0.0.1");
	ck_assert_uint_eq(h.host[0].port, 3306);
}
END_TEST

START_TEST(test_list_in_order_with_ports)
{
	struct db_hosts h;
	const char *why = NULL;
	ck_assert_int_eq(db_hosts_parse(" db1.example , db2.example:3307,[fd00::5]:3310, [::1] ",
					3306, &h, &why), 0);
	ck_assert_uint_eq(h.count, 4);
	ck_assert_str_eq(h.host[0].name, "db1.example");
	ck_assert_uint_eq(h.host[0].port, 3306);
	ck_assert_str_eq(h.host[1].name, "db2.example");
	ck_assert_uint_eq(h.host[1].port, 3307);
	ck_assert_str_eq(h.host[2].name, "fd00::5");
	ck_assert_uint_eq(h.host[2].port, 3310);
	ck_assert_str_eq(h.host[3].name, "::1");
	ck_assert_uint_eq(h.host[3].port, 3306);
}
END_TEST

START_TEST(test_bad_lists_are_refused_with_a_reason)
{
	static const char *const bad[] = {
		"", " ", "a,", ",a", "a,,b", "a:0", "a:65536", "a:12x", "a:",
		"::1", "[::1", "[::1]x", "a b", "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct db_hosts h;
		const char *why = NULL;
		ck_assert_msg(db_hosts_parse(bad[i], 3306, &h, &why) < 0,
			      "accepted '%s'", bad[i]);
		ck_assert_ptr_nonnull(why);
	}
	char long_name[300];
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	struct db_hosts h;
	const char *why = NULL;
	ck_assert_int_lt(db_hosts_parse(long_name, 3306, &h, &why), 0);
}
END_TEST

START_TEST(test_config_refuses_a_bad_list_naming_the_line)
{
	static const char text[] = "db_port = 3307\n"
				   "db_host = db1, db2:99999\n";
	struct config cfg;
	char err[256];
	config_defaults(&cfg);
	ck_assert_int_lt(config_parse(&cfg, "weave.conf", text, sizeof text - 1, err, sizeof err), 0);
	ck_assert_ptr_nonnull(strstr(err, "weave.conf"));
	ck_assert_ptr_nonnull(strstr(err, "db_host"));
	config_free(&cfg);
}
END_TEST

Suite *db_hosts_suite(void)
{
	Suite *s = suite_create("db_hosts");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_one_host_takes_default_port);
	tcase_add_test(tc, test_list_in_order_with_ports);
	tcase_add_test(tc, test_bad_lists_are_refused_with_a_reason);
	tcase_add_test(tc, test_config_refuses_a_bad_list_naming_the_line);
	suite_add_tcase(s, tc);
	return s;
}
