/* check_util.c - unit tests for src/util.c and src/buf.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check_suites.h"
#include "util.h"

/* ---- parse_int64 ------------------------------------------------------ */

/* Parse s with the full int64 range; returns the status, value in *out. */
static int parse_full(const char *s, int64_t *out)
{
	return parse_int64(s, INT64_MIN, INT64_MAX, out);
}

START_TEST(test_int64_plain)
{
	int64_t v = -1;
	ck_assert_int_eq(parse_full("0", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(parse_full("42", &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(parse_full("-17", &v), 0);
	ck_assert_int_eq(v, -17);
	ck_assert_int_eq(parse_full("-0", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(parse_full("007", &v), 0);
	ck_assert_int_eq(v, 7);
	ck_assert_int_eq(parse_full("00000000000000000000000000000001", &v), 0);
	ck_assert_int_eq(v, 1);
}
END_TEST

START_TEST(test_int64_extremes)
{
	int64_t v = 0;
	ck_assert_int_eq(parse_full("9223372036854775807", &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(parse_full("-9223372036854775808", &v), 0);
	ck_assert(v == INT64_MIN);
}
END_TEST

START_TEST(test_int64_overflow)
{
	int64_t v = 12345;
	ck_assert_int_eq(parse_full("9223372036854775808", &v), -1);
	ck_assert_int_eq(parse_full("-9223372036854775809", &v), -1);
	ck_assert_int_eq(parse_full("18446744073709551615", &v), -1);
	ck_assert_int_eq(parse_full("18446744073709551616", &v), -1);
	ck_assert_int_eq(parse_full("99999999999999999999999999", &v), -1);
	ck_assert_int_eq(parse_full("-99999999999999999999999999", &v), -1);
	/* A failed parse leaves *out alone. */
	ck_assert_int_eq(v, 12345);
}
END_TEST

START_TEST(test_int64_garbage)
{
	static const char *const bad[] = {
		"", "-", "+1", " 1", "1 ", "1a", "a1", "0x10", "1.0", "1e3",
		"--1", "-+1", "1-", "\t1", "1\n", "\xd9\xa1", "12 34", "1\xc2\xa0",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t v = 99;
		ck_assert_msg(parse_full(bad[i], &v) == -1, "accepted '%s'", bad[i]);
		ck_assert_int_eq(v, 99);
	}
	int64_t v = 99;
	ck_assert_int_eq(parse_int64(NULL, 0, 10, &v), -1);
	ck_assert_int_eq(v, 99);
}
END_TEST

START_TEST(test_int64_bounds)
{
	int64_t v = 0;
	ck_assert_int_eq(parse_int64("1", 1, 65535, &v), 0);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(parse_int64("65535", 1, 65535, &v), 0);
	ck_assert_int_eq(v, 65535);
	v = 77;
	ck_assert_int_eq(parse_int64("0", 1, 65535, &v), -1);
	ck_assert_int_eq(parse_int64("65536", 1, 65535, &v), -1);
	ck_assert_int_eq(parse_int64("-1", 0, 10, &v), -1);
	ck_assert_int_eq(v, 77);
	ck_assert_int_eq(parse_int64("-5", -5, -1, &v), 0);
	ck_assert_int_eq(v, -5);
	ck_assert_int_eq(parse_int64("-6", -5, -1, &v), -1);
	ck_assert_int_eq(parse_int64("0", -5, -1, &v), -1);
	ck_assert_int_eq(parse_int64("7", 7, 7, &v), 0);
	ck_assert_int_eq(v, 7);
}
END_TEST

/* ---- parse_timestamp / format_timestamp ------------------------------ */

static int64_t ts_ok(const char *s)
{
	int64_t cs = -42;
	ck_assert_msg(parse_timestamp(s, &cs) == 0, "refused '%s'", s);
	return cs;
}

START_TEST(test_timestamp_forms)
{
	ck_assert(ts_ok("1265402837.12") == INT64_C(126540283712));
	ck_assert(ts_ok("1265402837") == INT64_C(126540283700));
	ck_assert(ts_ok("1265402837.1") == INT64_C(126540283710));
	ck_assert(ts_ok("1265402837.10") == INT64_C(126540283710));
	ck_assert(ts_ok("0") == 0);
	ck_assert(ts_ok("0.00") == 0);
	ck_assert(ts_ok("0.01") == 1);
	ck_assert(ts_ok("0.05") == 5);
	ck_assert(ts_ok("0.5") == 50);
	ck_assert(ts_ok("007.5") == 750);
	/* 12 integer digits is the maximum. */
	ck_assert(ts_ok("999999999999.99") == INT64_C(99999999999999));
}
END_TEST

START_TEST(test_timestamp_rounding)
{
	/* The third decimal rounds half up; further decimals are ignored. */
	ck_assert(ts_ok("1.005") == 101);
	ck_assert(ts_ok("1.004") == 100);
	ck_assert(ts_ok("1.0049999") == 100);
	ck_assert(ts_ok("1.0050000") == 101);
	ck_assert(ts_ok("1.994") == 199);
	ck_assert(ts_ok("1.995") == 200);
	ck_assert(ts_ok("1.999") == 200);
	ck_assert(ts_ok("9.9999999") == 1000);
	ck_assert(ts_ok("1265402837.123456") == INT64_C(126540283712));
	ck_assert(ts_ok("1265402837.125") == INT64_C(126540283713));
	/* 0.29 is not exactly representable as a double: no drift here. */
	ck_assert(ts_ok("0.29") == 29);
	ck_assert(ts_ok("1.13") == 113);
}
END_TEST

START_TEST(test_timestamp_rejects)
{
	static const char *const bad[] = {
		"", ".5", "1.", "-1", "-1.00", "+1", "1e5", "1.5e2", " 1", "1 ",
		"1..2", "1.2.3", "abc", "1,5", "0x10", "1.-5", ".",
		"1234567890123",     /* 13 integer digits */
		"1234567890123.00",
		"0000000000001",     /* 13 digits even if small */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int64_t cs = 31337;
		ck_assert_msg(parse_timestamp(bad[i], &cs) == -1, "accepted '%s'",
			      bad[i]);
		ck_assert_int_eq(cs, 31337);
	}
	int64_t cs = 31337;
	ck_assert_int_eq(parse_timestamp(NULL, &cs), -1);
	/* More than 32 decimals are refused. */
	ck_assert_int_eq(parse_timestamp("1.123456789012345678901234567890123",
					 &cs), -1);
	ck_assert_int_eq(parse_timestamp("1.12345678901234567890123456789012",
					 &cs), 0);
	ck_assert(cs == 112);
}
END_TEST

static const char *fmt_ts(int64_t cs, char *out, size_t len)
{
	memset(out, 'X', len);
	format_timestamp(cs, out, len);
	return out;
}

START_TEST(test_timestamp_format)
{
	char out[32];
	ck_assert_str_eq(fmt_ts(0, out, sizeof out), "0.00");
	ck_assert_str_eq(fmt_ts(5, out, sizeof out), "0.05");
	ck_assert_str_eq(fmt_ts(50, out, sizeof out), "0.50");
	ck_assert_str_eq(fmt_ts(99, out, sizeof out), "0.99");
	ck_assert_str_eq(fmt_ts(100, out, sizeof out), "1.00");
	ck_assert_str_eq(fmt_ts(101, out, sizeof out), "1.01");
	ck_assert_str_eq(fmt_ts(INT64_C(126540283712), out, sizeof out),
			 "1265402837.12");
	ck_assert_str_eq(fmt_ts(INT64_C(126540283700), out, sizeof out),
			 "1265402837.00");
	ck_assert_str_eq(fmt_ts(-5, out, sizeof out), "0.00");
	ck_assert_str_eq(fmt_ts(INT64_MAX, out, sizeof out),
			 "92233720368547758.07");
	/* Round trip. */
	int64_t back = 0;
	ck_assert_int_eq(parse_timestamp(fmt_ts(INT64_C(99999999999999), out,
						 sizeof out), &back), 0);
	ck_assert(back == INT64_C(99999999999999));
	/* A short buffer is truncated, still NUL-terminated. */
	char small[4];
	format_timestamp(12345, small, sizeof small);
	ck_assert_str_eq(small, "123");
}
END_TEST

START_TEST(test_copy_string)
{
	char out[6];
	memset(out, 'x', sizeof out);
	ck_assert_uint_eq(copy_string(out, sizeof out, "abc"), 3);
	ck_assert_str_eq(out, "abc");
	ck_assert_uint_eq(copy_string(out, sizeof out, "abcde"), 5); /* exactly fits */
	ck_assert_str_eq(out, "abcde");
	ck_assert_uint_eq(copy_string(out, sizeof out, "abcdefgh"), 5); /* cut */
	ck_assert_str_eq(out, "abcde");
	ck_assert_uint_eq(copy_string(out, sizeof out, ""), 0);
	ck_assert_str_eq(out, "");
	ck_assert_uint_eq(copy_string(out, 1, "abc"), 0);
	ck_assert_str_eq(out, "");
	out[0] = 'x';
	ck_assert_uint_eq(copy_string(out, 0, "abc"), 0); /* no room: untouched */
	ck_assert_int_eq(out[0], 'x');
}
END_TEST

START_TEST(test_now_centiseconds)
{
	int64_t a = now_centiseconds();
	int64_t b = now_centiseconds();
	/* After 2020-01-01 and before 2100-01-01. */
	ck_assert(a > INT64_C(157783680000));
	ck_assert(a < INT64_C(410244480000));
	ck_assert(b >= a);
}
END_TEST

/* ---- small helpers ---------------------------------------------------- */

START_TEST(test_ascii_lower)
{
	char s[] = "AbC-XyZ_09\xc3\x89@";
	ascii_lower(s);
	ck_assert_str_eq(s, "abc-xyz_09\xc3\x89@");
	char e[] = "";
	ascii_lower(e);
	ck_assert_str_eq(e, "");
}
END_TEST

START_TEST(test_xstrndup)
{
	char *p = xstrndup("abcdef", 3);
	ck_assert_str_eq(p, "abc");
	free(p);
	p = xstrndup("a\0b", 3);
	ck_assert_int_eq(p[0], 'a');
	ck_assert_int_eq(p[1], '\0');
	ck_assert_int_eq(p[2], 'b');
	ck_assert_int_eq(p[3], '\0');
	free(p);
	p = xstrdup("");
	ck_assert_str_eq(p, "");
	free(p);
	p = xmalloc(0);
	ck_assert_ptr_nonnull(p);
	free(p);
	p = xcalloc(4, 4);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(p[i], 0);
	p = xrealloc(p, 64);
	ck_assert_int_eq(p[15], 0);
	free(p);
}
END_TEST

START_TEST(test_bytes_equal)
{
	ck_assert(bytes_equal_const_time("abcdef", "abcdef", 6));
	ck_assert(!bytes_equal_const_time("abcdef", "abcdeg", 6));
	ck_assert(!bytes_equal_const_time("xbcdef", "abcdef", 6));
	ck_assert(bytes_equal_const_time("abcdef", "abcxyz", 3));
	ck_assert(bytes_equal_const_time("a", "b", 0));
	ck_assert(bytes_equal_const_time("a\0b", "a\0b", 3));
	ck_assert(!bytes_equal_const_time("a\0b", "a\0c", 3));
	ck_assert(!bytes_equal_const_time("\x80", "\x00", 1));
}
END_TEST

/* ---- struct buf ------------------------------------------------------- */

START_TEST(test_buf_empty)
{
	struct buf b;
	buf_init(&b, 100);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 100);
	size_t len = 99;
	char *d = buf_detach(&b, &len);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d, "");
	ck_assert_uint_eq(len, 0);
	free(d);
	buf_free(&b);
	buf_free_secret(&b);
}
END_TEST

START_TEST(test_buf_append)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	ck_assert_int_eq(buf_puts(&b, "hello"), 0);
	ck_assert_int_eq(buf_putc(&b, ' '), 0);
	ck_assert_int_eq(buf_append(&b, "world!!!", 5), 0);
	ck_assert_uint_eq(b.len, 11);
	ck_assert_str_eq(b.data, "hello world");
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_uint_eq(b.len, 11);
	/* Embedded NUL counted in len, data still terminated after it. */
	ck_assert_int_eq(buf_append(&b, "a\0b", 3), 0);
	ck_assert_uint_eq(b.len, 14);
	ck_assert_int_eq(memcmp(b.data, "hello worlda\0b", 15), 0);
	ck_assert_int_eq(b.data[14], '\0');
	/* Growth well past the first allocation keeps the contents. */
	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(buf_putc(&b, (char)('0' + i % 10)), 0);
	ck_assert_uint_eq(b.len, 10014);
	ck_assert(b.cap > b.len);
	ck_assert_int_eq(memcmp(b.data, "hello world", 11), 0);
	ck_assert_int_eq(b.data[10013], '9');
	ck_assert_int_eq(b.data[10014], '\0');
	buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(test_buf_printf)
{
	struct buf b;
	buf_init(&b, 1000);
	ck_assert_int_eq(buf_printf(&b, "%d-%s", 42, "x"), 0);
	ck_assert_int_eq(buf_printf(&b, "[%05.1f]", 3.5), 0);
	ck_assert_str_eq(b.data, "42-x[003.5]");
	ck_assert_uint_eq(b.len, strlen("42-x[003.5]"));
	ck_assert_int_eq(buf_printf(&b, "%s", ""), 0);
	ck_assert_uint_eq(b.len, 11);
	/* A long formatted string (bigger than the first allocation). */
	ck_assert_int_eq(buf_printf(&b, "%300s|", "end"), 0);
	ck_assert_uint_eq(b.len, 11 + 301);
	ck_assert_str_eq(b.data + b.len - 4, "end|");
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_put_int)
{
	static const int64_t values[] = { 0, 7, -7, 10, 200, -1234567, 1796507499,
					  INT64_MAX, INT64_MIN };
	char want[32];
	struct buf b;
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		buf_init(&b, 100);
		ck_assert_int_eq(buf_puts(&b, "n="), 0);
		ck_assert_int_eq(buf_put_int(&b, values[i]), 0);
		snprintf(want, sizeof want, "n=%lld", (long long)values[i]);
		ck_assert_str_eq(b.data, want);
		ck_assert_uint_eq(b.len, strlen(want));
		buf_free(&b);
	}
	/* Past the maximum: refused, the buffer as it was. */
	buf_init(&b, 4);
	ck_assert_int_eq(buf_puts(&b, "ab"), 0);
	ck_assert_int_eq(buf_put_int(&b, 123), -1);
	ck_assert_str_eq(b.data, "ab");
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_max)
{
	struct buf b;
	buf_init(&b, 10);
	ck_assert_int_eq(buf_puts(&b, "0123456789"), 0);
	ck_assert_uint_eq(b.len, 10);
	/* Full: every kind of append fails and leaves the buffer unchanged. */
	ck_assert_int_eq(buf_putc(&b, 'x'), -1);
	ck_assert_int_eq(buf_puts(&b, "x"), -1);
	ck_assert_int_eq(buf_printf(&b, "%d", 1), -1);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_uint_eq(b.len, 10);
	ck_assert_str_eq(b.data, "0123456789");
	buf_free(&b);

	buf_init(&b, 10);
	ck_assert_int_eq(buf_puts(&b, "01234"), 0);
	ck_assert_int_eq(buf_puts(&b, "567890"), -1);
	ck_assert_str_eq(b.data, "01234");
	ck_assert_int_eq(buf_printf(&b, "%s", "abcdef"), -1);
	ck_assert_str_eq(b.data, "01234");
	ck_assert_uint_eq(b.len, 5);
	ck_assert_int_eq(buf_printf(&b, "%s", "abcde"), 0);
	ck_assert_str_eq(b.data, "01234abcde");
	/* A length that would overflow size_t arithmetic is refused. */
	ck_assert_int_eq(buf_append(&b, "x", SIZE_MAX), -1);
	ck_assert_int_eq(buf_append(&b, "x", SIZE_MAX - 5), -1);
	ck_assert_str_eq(b.data, "01234abcde");
	buf_free(&b);

	buf_init(&b, 0);
	ck_assert_int_eq(buf_putc(&b, 'a'), -1);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

START_TEST(test_buf_reset)
{
	struct buf b;
	buf_init(&b, 100);
	buf_reset(&b); /* on an empty buffer: no crash, nothing allocated */
	ck_assert_ptr_null(b.data);
	ck_assert_int_eq(buf_puts(&b, "0123456789"), 0);
	char *before = b.data;
	size_t cap = b.cap;
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.data, "");
	ck_assert_ptr_eq(b.data, before);
	ck_assert_uint_eq(b.cap, cap);
	/* The maximum counts from the reset, not from the old contents. */
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(buf_puts(&b, "0123456789"), 0);
	ck_assert_uint_eq(b.len, 100);
	ck_assert_int_eq(buf_putc(&b, 'x'), -1);
	buf_free_secret(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
}
END_TEST

START_TEST(test_buf_detach)
{
	struct buf b;
	buf_init(&b, 100);
	ck_assert_int_eq(buf_puts(&b, "payload"), 0);
	size_t len = 0;
	char *d = buf_detach(&b, &len);
	ck_assert_str_eq(d, "payload");
	ck_assert_uint_eq(len, 7);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	ck_assert_uint_eq(b.max, 100);
	/* The buffer is reusable and independent of the detached data. */
	ck_assert_int_eq(buf_puts(&b, "next"), 0);
	ck_assert_str_eq(b.data, "next");
	ck_assert_str_eq(d, "payload");
	free(d);
	d = buf_detach(&b, NULL);
	ck_assert_str_eq(d, "next");
	free(d);
	buf_free(&b);
}
END_TEST

START_TEST(test_url_host)
{
	size_t n;
	const char *h = url_host("https://sync.example.org:8443/weave/", true, &n);
	ck_assert_int_eq((int)n, 21);
	ck_assert(strncmp(h, "sync.example.org:8443", n) == 0);
	h = url_host("https://sync.example.org:8443/weave/", false, &n);
	ck_assert(n == 16 && strncmp(h, "sync.example.org", n) == 0);
	h = url_host("http://[::1]:8080/", false, &n);
	ck_assert(n == 5 && strncmp(h, "[::1]", n) == 0);
	h = url_host("http://[::1]/", true, &n);
	ck_assert(n == 5 && strncmp(h, "[::1]", n) == 0);
	h = url_host("https://h.example?x=1", false, &n);
	ck_assert(n == 9 && strncmp(h, "h.example", n) == 0);
	h = url_host("plain.example/path", true, &n);
	ck_assert(n == 13 && strncmp(h, "plain.example", n) == 0);
	h = url_host("https://", false, &n);
	ck_assert_int_eq((int)n, 0);
}
END_TEST

Suite *util_suite(void)
{
	Suite *s = suite_create("util");

	TCase *tc = tcase_create("parse_int64");
	tcase_add_test(tc, test_int64_plain);
	tcase_add_test(tc, test_int64_extremes);
	tcase_add_test(tc, test_int64_overflow);
	tcase_add_test(tc, test_int64_garbage);
	tcase_add_test(tc, test_int64_bounds);
	suite_add_tcase(s, tc);

	tc = tcase_create("timestamp");
	tcase_add_test(tc, test_timestamp_forms);
	tcase_add_test(tc, test_timestamp_rounding);
	tcase_add_test(tc, test_timestamp_rejects);
	tcase_add_test(tc, test_timestamp_format);
	tcase_add_test(tc, test_copy_string);
	tcase_add_test(tc, test_now_centiseconds);
	suite_add_tcase(s, tc);

	tc = tcase_create("helpers");
	tcase_add_test(tc, test_ascii_lower);
	tcase_add_test(tc, test_xstrndup);
	tcase_add_test(tc, test_bytes_equal);
	suite_add_tcase(s, tc);

	tc = tcase_create("buf");
	tcase_add_test(tc, test_buf_empty);
	tcase_add_test(tc, test_buf_append);
	tcase_add_test(tc, test_buf_printf);
	tcase_add_test(tc, test_buf_put_int);
	tcase_add_test(tc, test_buf_max);
	tcase_add_test(tc, test_buf_reset);
	tcase_add_test(tc, test_buf_detach);
	tcase_add_test(tc, test_url_host);
	suite_add_tcase(s, tc);

	return s;
}
