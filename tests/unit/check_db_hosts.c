/* check_db_hosts.c - the db_host list (db_hosts.c), its weave.conf key, and failover: node order, Retry-After. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "check_suites.h"
#include "config.h"
#include "db_hosts.h"
#include "response.h"

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

START_TEST(test_order_is_configured_order_when_all_are_healthy)
{
	const int64_t avoid[3] = { 0, 0, 0 };
	size_t order[3];
	db_hosts_order(3, avoid, 1000, order);
	ck_assert_uint_eq(order[0], 0);
	ck_assert_uint_eq(order[1], 1);
	ck_assert_uint_eq(order[2], 2);
}
END_TEST

START_TEST(test_order_puts_a_failed_node_last_until_its_hold_ends)
{
	const int64_t avoid[3] = { 5000, 0, 0 };
	size_t order[3];
	db_hosts_order(3, avoid, 1000, order);
	ck_assert_uint_eq(order[0], 1);
	ck_assert_uint_eq(order[1], 2);
	ck_assert_uint_eq(order[2], 0);
	/* Hold over (at its end exactly, too): first again. */
	db_hosts_order(3, avoid, 5000, order);
	ck_assert_uint_eq(order[0], 0);
	ck_assert_uint_eq(order[1], 1);
}
END_TEST

START_TEST(test_order_tries_every_node_when_all_failed_soonest_hold_end_first)
{
	const int64_t avoid[4] = { 9000, 7000, 8000, 7000 };
	size_t order[4];
	db_hosts_order(4, avoid, 1000, order);
	ck_assert_uint_eq(order[0], 1); /* 7000, configured before 3 */
	ck_assert_uint_eq(order[1], 3);
	ck_assert_uint_eq(order[2], 2);
	ck_assert_uint_eq(order[3], 0);
}
END_TEST

START_TEST(test_order_of_one_avoided_node_is_that_node)
{
	const int64_t avoid[1] = { 9000 };
	size_t order[1] = { 7 };
	db_hosts_order(1, avoid, 1000, order);
	ck_assert_uint_eq(order[0], 0);
}
END_TEST

START_TEST(test_failover_retry_after_doubles_with_the_outage)
{
	static const struct { int64_t outage, want; } cases[] = {
		{ 0, 1 }, { 1, 1 }, { 2, 2 }, { 3, 4 }, { 4, 4 }, { 5, 8 },
		{ 9, 16 }, { 16, 16 }, { 17, 30 }, { 600, 30 }, { -5, 1 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(resp_failover_retry_after(cases[i].outage, 600) == cases[i].want,
			      "outage %lld: got %lld, want %lld", (long long)cases[i].outage,
			      (long long)resp_failover_retry_after(cases[i].outage, 600),
			      (long long)cases[i].want);
}
END_TEST

START_TEST(test_failover_retry_after_stays_below_the_operators)
{
	ck_assert_int_eq(resp_failover_retry_after(100, 10), 10);
	ck_assert_int_eq(resp_failover_retry_after(3, 3), 3);
	ck_assert_int_eq(resp_failover_retry_after(0, 1), 1);
}
END_TEST

START_TEST(test_unavailable_answers_503_with_the_short_retry_after)
{
	struct response resp;
	response_init(&resp);
	resp.retry_after = 600; /* the operator's, as route.c sets it */
	ck_assert_int_eq(resp_unavailable(&resp, 5), 503);
	ck_assert_int_eq(resp.status, 503);
	ck_assert_int_eq(resp.retry_after, 8);
	ck_assert_int_eq(resp.backoff, 8);
	char headers[256];
	snprintf(headers, sizeof headers, "%.*s", (int)resp.headers.len, resp.headers.data);
	ck_assert_ptr_nonnull(strstr(headers, "Retry-After: 8\r\n"));
	response_free(&resp);
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
	tc = tcase_create("failover");
	tcase_add_test(tc, test_order_is_configured_order_when_all_are_healthy);
	tcase_add_test(tc, test_order_puts_a_failed_node_last_until_its_hold_ends);
	tcase_add_test(tc, test_order_tries_every_node_when_all_failed_soonest_hold_end_first);
	tcase_add_test(tc, test_order_of_one_avoided_node_is_that_node);
	tcase_add_test(tc, test_failover_retry_after_doubles_with_the_outage);
	tcase_add_test(tc, test_failover_retry_after_stays_below_the_operators);
	tcase_add_test(tc, test_unavailable_answers_503_with_the_short_retry_after);
	suite_add_tcase(s, tc);
	return s;
}
