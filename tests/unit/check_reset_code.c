/* check_reset_code.c - reset codes (reset_code.c) and client addresses (client_address.c). */
#include <check.h>
#include <string.h>

#include "check_suites.h"
#include "client_address.h"
#include "reset_code.h"

START_TEST(test_made_codes)
{
	char code[RESET_CODE_TEXT_MAX], norm[RESET_CODE_TEXT_MAX];
	int seen[256] = { 0 };
	for (int n = 0; n < 2000; n++) {
		ck_assert_int_eq(reset_code_make(code), 0);
		ck_assert_uint_eq(strlen(code), 19);
		for (size_t i = 0; i < 19; i++) {
			if (i % 5 == 4) {
				ck_assert_int_eq(code[i], '-');
				continue;
			}
			ck_assert_ptr_nonnull(strchr(RESET_CODE_ALPHABET, code[i]));
			seen[(unsigned char)code[i]]++;
		}
		ck_assert_int_eq(reset_code_normalise(code, norm), 0);
		ck_assert_str_eq(norm, code);
	}
	/* No look-alikes, and every other character turns up. */
	for (const char *p = "01OIL"; *p; p++)
		ck_assert_int_eq(seen[(unsigned char)*p], 0);
	for (const char *p = RESET_CODE_ALPHABET; *p; p++)
		ck_assert_int_gt(seen[(unsigned char)*p], 0);
}
END_TEST

START_TEST(test_typed_codes)
{
	char norm[RESET_CODE_TEXT_MAX];
	static const char *const same[] = {
		"7KQX-M2AH-9ZZP-EW34", "7kqx-m2ah-9zzp-ew34", "7KQXM2AH9ZZPEW34",
		" 7kqx m2ah\t9zzp-ew34\r\n", "7-K-Q-X-M2AH9ZZPEW34--",
	};
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
		ck_assert_msg(reset_code_normalise(same[i], norm) == 0, "%s", same[i]);
		ck_assert_str_eq(norm, "7KQX-M2AH-9ZZP-EW34");
	}
	static const char *const bad[] = {
		"", "----", "7KQX-M2AH-9ZZP-EW3", "7KQX-M2AH-9ZZP-EW345",
		"0KQX-M2AH-9ZZP-EW34", "OKQX-M2AH-9ZZP-EW34", "1KQX-M2AH-9ZZP-EW34",
		"IKQX-M2AH-9ZZP-EW34", "lKQX-M2AH-9ZZP-EW34", "7KQX_M2AH-9ZZP-EW34",
		"7KQX-M2AH-9ZZP-EW3\xc3\xa9",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(reset_code_normalise(bad[i], norm) < 0, "%s", bad[i]);
	unsigned char a[32], b[32];
	ck_assert_int_eq(reset_code_hash("7kqxm2ah9zzpew34", a), 0);
	ck_assert_int_eq(reset_code_hash("7KQX-M2AH-9ZZP-EW34", b), 0);
	ck_assert_mem_eq(a, b, 32);
	ck_assert_int_eq(reset_code_hash("0KQX-M2AH-9ZZP-EW34", a), -1);
}
END_TEST

START_TEST(test_address_lists)
{
	const char *list = " 10.0.0.0/8, 192.0.2.10\t2001:db8::/32 ::1";
	ck_assert(client_address_in_list(list, "10.1.2.3"));
	ck_assert(client_address_in_list(list, "192.0.2.10"));
	ck_assert(client_address_in_list(list, "::ffff:10.9.9.9")); /* mapped */
	ck_assert(client_address_in_list(list, "2001:db8:ffff::1"));
	ck_assert(client_address_in_list(list, "::1"));
	ck_assert(!client_address_in_list(list, "11.0.0.1"));
	ck_assert(!client_address_in_list(list, "192.0.2.1"));
	ck_assert(!client_address_in_list(list, "2001:db9::1"));
	ck_assert(!client_address_in_list(list, "10.1.2"));
	ck_assert(!client_address_in_list(list, ""));
	ck_assert(!client_address_in_list(NULL, "10.1.2.3"));
	ck_assert(!client_address_in_list("10.0.0.0/33 10.0.0.0/x 10.0.0.0/", "10.0.0.1"));
	ck_assert(client_address_in_list("0.0.0.0/0", "203.0.113.9"));
	ck_assert(client_address_in_list("192.0.2.128/25", "192.0.2.200"));
	ck_assert(!client_address_in_list("192.0.2.128/25", "192.0.2.100"));
}
END_TEST

static const char *resolved(const char *remote, const char *forwarded)
{
	static char out[CLIENT_ADDRESS_MAX];
	client_address_resolve(remote, forwarded, "127.0.0.1 10.0.0.0/8", out, sizeof out);
	return out;
}

START_TEST(test_resolve)
{
	/* Untrusted sender: the header is ignored, whatever it says. */
	ck_assert_str_eq(resolved("203.0.113.5", "198.51.100.1"), "203.0.113.5");
	/* A trusted proxy: the rightmost untrusted entry. */
	ck_assert_str_eq(resolved("127.0.0.1", "198.51.100.1"), "198.51.100.1");
	ck_assert_str_eq(resolved("127.0.0.1", "6.6.6.6, 198.51.100.1"), "198.51.100.1");
	ck_assert_str_eq(resolved("127.0.0.1", "6.6.6.6, 198.51.100.1, 10.2.3.4"),
			 "198.51.100.1");
	ck_assert_str_eq(resolved("127.0.0.1", " 2001:db8::7 "), "2001:db8::7");
	/* All trusted: the leftmost. No header: the proxy itself. */
	ck_assert_str_eq(resolved("127.0.0.1", "10.0.0.5, 10.0.0.6"), "10.0.0.5");
	ck_assert_str_eq(resolved("127.0.0.1", NULL), "127.0.0.1");
	/* Garbage ends the walk at the last address walked through. */
	ck_assert_str_eq(resolved("127.0.0.1", "junk"), "127.0.0.1");
	ck_assert_str_eq(resolved("127.0.0.1", "198.51.100.1, junk, 10.0.0.5"), "10.0.0.5");
	ck_assert_str_eq(resolved("127.0.0.1", ""), "127.0.0.1");
	ck_assert_str_eq(resolved("127.0.0.1", ",,,"), "127.0.0.1");
	ck_assert_str_eq(resolved(NULL, "198.51.100.1"), "");
}
END_TEST

START_TEST(test_network)
{
	char out[CLIENT_ADDRESS_MAX];
	ck_assert_int_eq(client_address_network("192.0.2.7", out, sizeof out), 0);
	ck_assert_str_eq(out, "192.0.2.7");
	ck_assert_int_eq(client_address_network("::ffff:192.0.2.7", out, sizeof out), 0);
	ck_assert_str_eq(out, "192.0.2.7");
	ck_assert_int_eq(client_address_network("2001:db8:0:12:aaaa::1", out, sizeof out), 0);
	ck_assert_str_eq(out, "2001:db8:0:12::/64");
	ck_assert_int_eq(client_address_network("2001:DB8:0:12:ffff:1:2:3", out, sizeof out), 0);
	ck_assert_str_eq(out, "2001:db8:0:12::/64");
	ck_assert_int_eq(client_address_network(
				 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", out, sizeof out), 0);
	ck_assert_str_eq(out, "ffff:ffff:ffff:ffff::/64");
	ck_assert_int_eq(client_address_network("not an address", out, sizeof out), -1);
	ck_assert_int_eq(client_address_network("", out, sizeof out), -1);
	ck_assert_int_eq(client_address_network(NULL, out, sizeof out), -1);
}
END_TEST

Suite *reset_code_suite(void)
{
	Suite *s = suite_create("reset_code");
	TCase *tc = tcase_create("codes");
	tcase_add_test(tc, test_made_codes);
	tcase_add_test(tc, test_typed_codes);
	suite_add_tcase(s, tc);
	tc = tcase_create("client_address");
	tcase_add_test(tc, test_address_lists);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_network);
	suite_add_tcase(s, tc);
	return s;
}
