/* check_output.c - unit tests for src/output.c (Accept header) and the
 * answer's head as src/response.c sends it. */
#include <string.h>

#include "buf.h"
#include "check_suites.h"
#include "output.h"
#include "response.h"

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

static int capture(void *ctx, const char *data, size_t len)
{
	return buf_append(ctx, data, len);
}

/* The bytes of a head, exactly: what mod_fcgid turns into the HTTP answer. */
START_TEST(test_response_head_bytes)
{
	struct response resp;
	struct buf out;
	response_init(&resp);
	buf_init(&out, 4096);
	resp_json(&resp, "{}", 2);
	resp.timestamp = 179650749900;
	resp.backoff = 5;
	resp_header(&resp, "X-Weave-Records", "%d", 0);
	resp_header_int(&resp, "X-Count", -1234567890123);
	ck_assert_int_eq(response_send(&resp, capture, &out, 0), 0);
	ck_assert_str_eq(out.data, "Status: 200 OK\r\n"
				   "Content-Type: application/json\r\n"
				   "Content-Length: 2\r\n"
				   "X-Weave-Timestamp: 1796507499.00\r\n"
				   "X-Weave-Backoff: 5\r\n"
				   "X-Weave-Records: 0\r\n"
				   "X-Count: -1234567890123\r\n"
				   "\r\n{}");
	/* HEAD: the same head, no body; no backoff, no line for it. */
	buf_reset(&out);
	resp.backoff = 0;
	ck_assert_int_eq(response_send(&resp, capture, &out, 1), 0);
	ck_assert_str_eq(out.data, "Status: 200 OK\r\n"
				   "Content-Type: application/json\r\n"
				   "Content-Length: 2\r\n"
				   "X-Weave-Timestamp: 1796507499.00\r\n"
				   "X-Weave-Records: 0\r\n"
				   "X-Count: -1234567890123\r\n"
				   "\r\n");
	buf_free(&out);
	response_free(&resp);
}
END_TEST

Suite *output_suite(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("accept");
	tcase_add_test(tc, test_choose_formats);
	tcase_add_test(tc, test_choose_blank_items);
	suite_add_tcase(s, tc);
	tc = tcase_create("head");
	tcase_add_test(tc, test_response_head_bytes);
	suite_add_tcase(s, tc);
	return s;
}
