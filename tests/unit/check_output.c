/* check_output.c - unit tests for src/output.c (Accept header). */
#include "check_suites.h"
#include "output.h"

START_TEST(test_choose_formats)
{
	ck_assert_int_eq(output_choose(NULL), OUTPUT_JSON);
	ck_assert_int_eq(output_choose(""), OUTPUT_JSON);
	ck_assert_int_eq(output_choose("application/newlines"), OUTPUT_NEWLINES);
	ck_assert_int_eq(output_choose("application/whoisi"), OUTPUT_WHOISI);
	ck_assert_int_eq(output_choose("text/html,application/xhtml+xml,*/*;q=0.8"),
			 OUTPUT_JSON);
	ck_assert_int_eq(output_choose("application/json;q=0.5, application/newlines"),
			 OUTPUT_NEWLINES);
}
END_TEST

/* An all-blank item (here the last) once made output_choose loop for
 * ever: found by tests/fuzz/fuzz_accept. Check's timeout fails this test
 * if it comes back. */
START_TEST(test_choose_blank_items)
{
	ck_assert_int_eq(output_choose(" "), OUTPUT_JSON);
	ck_assert_int_eq(output_choose("\t"), OUTPUT_JSON);
	ck_assert_int_eq(output_choose("application/newlines, "), OUTPUT_NEWLINES);
	ck_assert_int_eq(output_choose("application/whoisi,\t \t"), OUTPUT_WHOISI);
	ck_assert_int_eq(output_choose(" , application/newlines"), OUTPUT_NEWLINES);
}
END_TEST

Suite *output_suite(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("accept");
	tcase_add_test(tc, test_choose_formats);
	tcase_add_test(tc, test_choose_blank_items);
	suite_add_tcase(s, tc);
	return s;
}
