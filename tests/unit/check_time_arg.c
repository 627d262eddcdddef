/* check_time_arg.c - unit tests for tools/time_arg.c (weave-admin --since, --as-of). */
#include <stdint.h>
#include <string.h>

#include "check_suites.h"
#include "time_arg.h"

static int64_t parsed(const char *s)
{
	int64_t v = -1;
	ck_assert_msg(time_arg_parse(s, &v) == 0, "refused: %s", s);
	return v;
}

static void refused(const char *s)
{
	int64_t v = 12345;
	ck_assert_msg(time_arg_parse(s, &v) < 0, "accepted: %s", s);
}

START_TEST(test_weave_timestamps)
{
	ck_assert(parsed("1265402837.12") == INT64_C(126540283712));
	ck_assert(parsed("1265402837") == INT64_C(126540283700));
	ck_assert(parsed("1265402837.1") == INT64_C(126540283710));
	ck_assert(parsed("0") == 0);
	refused("");
	refused("-5");
	refused("12x");
	refused(" 1265402837");
}
END_TEST

START_TEST(test_iso_utc)
{
	/* date -u -d 2026-12-04T07:00:00Z +%s = 1796367600 */
	ck_assert(parsed("2026-12-04T07:00:00Z") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04T07:00:00") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04 07:00:00") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04T07:00Z") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04") == INT64_C(179634240000));
	ck_assert(parsed("1970-01-01T00:00:00Z") == 0);
	ck_assert(parsed("2026-12-04T07:00:00.5Z") == INT64_C(179636760050));
	ck_assert(parsed("2026-12-04T07:00:00.25Z") == INT64_C(179636760025));
	/* Python's isoformat(): microseconds and +00:00; finer digits are
	 * cut, never rounded up past the time given. */
	ck_assert(parsed("2026-12-04T07:00:00.129999+00:00") == INT64_C(179636760012));
	ck_assert(parsed("2026-12-04T07:00:00.999999") == INT64_C(179636760099));
	ck_assert(parsed("2026-12-04t07:00:00z") == INT64_C(179636760000));
	/* 2024-02-29 is a leap day: date -u -d 2024-02-29 +%s = 1709164800 */
	ck_assert(parsed("2024-02-29") == INT64_C(170916480000));
}
END_TEST

START_TEST(test_iso_offsets)
{
	ck_assert(parsed("2026-12-04T08:00:00+01:00") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04T08:00:00+0100") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04T08:00:00+01") == INT64_C(179636760000));
	ck_assert(parsed("2026-12-04T02:00:00-05:00") == INT64_C(179636760000));
}
END_TEST

START_TEST(test_iso_refused)
{
	refused("2026-13-01");
	refused("2026-02-29");   /* not a leap year */
	refused("2026-12-32");
	refused("2026-12-04T24:00");
	refused("2026-12-04T07:60");
	refused("2026-12-04T07:00:61");
	refused("2026-12-04T07");
	refused("2026-12-04T07:00:00+25:00");
	refused("2026-12-04T07:00:00Zjunk");
	refused("2026-12-04T07:00:00.");
	refused("2026-12-04T07:00:00.12x");
	refused("2026-12-04x");
	refused("1969-12-31");
	refused("26-12-04");
	refused("2026-1-4");
}
END_TEST

START_TEST(test_format)
{
	char out[40];
	time_arg_format(INT64_C(179636760000), out, sizeof out);
	ck_assert_str_eq(out, "2026-12-04T07:00:00Z");
	time_arg_format(INT64_C(179636760012), out, sizeof out);
	ck_assert_str_eq(out, "2026-12-04T07:00:00.12Z");
	time_arg_format(INT64_C(170916480000) + 86399 * 100, out, sizeof out);
	ck_assert_str_eq(out, "2024-02-29T23:59:59Z");
	/* What it prints, it reads back. */
	ck_assert(parsed(out) == INT64_C(170916480000) + 86399 * 100);
}
END_TEST

Suite *time_arg_suite(void)
{
	Suite *s = suite_create("time_arg");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, test_weave_timestamps);
	tcase_add_test(tc, test_iso_utc);
	tcase_add_test(tc, test_iso_offsets);
	tcase_add_test(tc, test_iso_refused);
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);
	return s;
}
