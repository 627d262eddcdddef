/* check_wbo.c - unit tests for src/wbo.c: POST batches and JSON output. */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "check_suites.h"
#include "wbo.h"

/* ---- POST batches --------------------------------------------------------- */

static struct json_object *parse(const char *text)
{
	struct json_object *obj = json_tokener_parse(text);
	ck_assert_ptr_nonnull(obj);
	return obj;
}

/* The reasons recorded for id in failed, as one JSON text. */
static const char *reasons(const struct wbo_batch *b, const char *id)
{
	struct json_object *v;
	if (!json_object_object_get_ex(b->failed, id, &v))
		return NULL;
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

START_TEST(test_batch_mixed)
{
	struct wbo_batch b;
	struct json_object *body = parse(
		"[{\"id\":\"a\",\"payload\":\"1\"},{\"id\":\"b/c\"},"
		"{\"id\":\"a\",\"payload\":\"2\"},{\"id\":\"d\",\"ttl\":-1},"
		"5,{\"id\":\"e\"}]");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.count, 6);
	/* "a" twice: one item, the last payload. */
	ck_assert_uint_eq(b.nvalid, 2);
	ck_assert_str_eq(b.items[0].id, "a");
	ck_assert_str_eq(b.items[0].payload, "2");
	ck_assert_str_eq(b.items[1].id, "e");
	ck_assert_str_eq(reasons(&b, "b/c"), "[\"invalid id\"]");
	ck_assert_str_eq(reasons(&b, "d"), "[\"invalid ttl\"]");
	/* A record that is not an object has no id: keyed by "". */
	ck_assert_str_eq(reasons(&b, ""), "[\"invalid wbo\"]");
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

START_TEST(test_batch_shapes)
{
	struct wbo_batch b;
	struct json_object *body = parse("{\"id\":\"only\",\"sortindex\":3}");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.count, 1);
	ck_assert_uint_eq(b.nvalid, 1);
	ck_assert_int_eq(b.items[0].sortindex, 3);
	wbo_batch_free(&b);
	json_object_put(body);

	body = parse("\"text\"");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1024, &b), WBO_BATCH_NOT_LIST);
	wbo_batch_free(&b);
	json_object_put(body);

	body = parse("[{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":\"c\"}]");
	ck_assert_int_eq(wbo_batch_parse(body, 2, 1024, &b), WBO_BATCH_TOO_MANY);
	ck_assert_uint_eq(b.count, 3);
	wbo_batch_free(&b);
	json_object_put(body);

	body = parse("[]");
	ck_assert_int_eq(wbo_batch_parse(body, 2, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.nvalid, 0);
	ck_assert_int_eq(json_object_object_length(b.failed), 0);
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

/* ---- JSON output ---------------------------------------------------------- */

/* The escape of one byte, written independently of wbo.c. */
static const char *reference_escape(unsigned char c, char tmp[8])
{
	if (c == '"')
		return "\\\"";
	if (c == '\\')
		return "\\\\";
	if (c == '\n')
		return "\\n";
	if (c == '\r')
		return "\\r";
	if (c == '\t')
		return "\\t";
	if (c < 0x20 || c == 0x7f) {
		snprintf(tmp, 8, "\\u%04x", c);
		return tmp;
	}
	tmp[0] = (char)c;
	tmp[1] = '\0';
	return tmp;
}

START_TEST(test_escape_every_byte)
{
	for (int c = 1; c < 256; c++) {
		/* the byte alone, and between safe text on both sides */
		char in[8] = { 'a', 'b', (char)c, 'c', 0 };
		char tmp[8], want[32];
		struct buf b;
		snprintf(want, sizeof want, "\"ab%sc\"",
			 reference_escape((unsigned char)c, tmp));
		buf_init(&b, 1024);
		ck_assert_int_eq(wbo_json_escape(&b, in, 4), 0);
		ck_assert_msg(strcmp(b.data, want) == 0, "byte %d: %s, want %s", c,
			      b.data, want);
		buf_reset(&b);
		ck_assert_int_eq(wbo_json_escape(&b, in + 2, 1), 0);
		snprintf(want, sizeof want, "\"%s\"",
			 reference_escape((unsigned char)c, tmp));
		ck_assert_str_eq(b.data, want);
		buf_free(&b);
	}
}
END_TEST

START_TEST(test_escape_payload_and_limits)
{
	struct buf b;
	const char nul[] = { 'x', '\0', 'y' };
	buf_init(&b, 1024);
	ck_assert_int_eq(wbo_json_escape(&b, "{\"ciphertext\":\"a+/=\"}", 21), 0);
	ck_assert_str_eq(b.data, "\"{\\\"ciphertext\\\":\\\"a+/=\\\"}\"");
	buf_reset(&b);
	ck_assert_int_eq(wbo_json_escape(&b, "", 0), 0);
	ck_assert_str_eq(b.data, "\"\"");
	buf_reset(&b);
	ck_assert_int_eq(wbo_json_escape(&b, nul, 3), 0);
	ck_assert_str_eq(b.data, "\"x\\u0000y\"");
	buf_free(&b);
	buf_init(&b, 8); /* the buffer's maximum is enforced */
	ck_assert_int_eq(wbo_json_escape(&b, "0123456789", 10), -1);
	buf_free(&b);
}
END_TEST

START_TEST(test_row_to_json)
{
	struct buf b;
	struct wbo_row row;
	memset(&row, 0, sizeof row);
	row.id = "h1";
	row.id_len = 2;
	row.modified = 126540283712;
	row.has_sortindex = true;
	row.sortindex = -5;
	row.payload = "p\"q";
	row.payload_len = 3;
	buf_init(&b, 1024);
	ck_assert_int_eq(wbo_row_to_json(&b, &row), 0);
	ck_assert_str_eq(b.data, "{\"id\":\"h1\",\"modified\":1265402837.12,"
				 "\"sortindex\":-5,\"payload\":\"p\\\"q\"}");
	buf_free(&b);
}
END_TEST

Suite *wbo_suite(void)
{
	Suite *s = suite_create("wbo");
	TCase *tc = tcase_create("batch");
	tcase_add_test(tc, test_batch_mixed);
	tcase_add_test(tc, test_batch_shapes);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_test(tc, test_escape_every_byte);
	tcase_add_test(tc, test_escape_payload_and_limits);
	tcase_add_test(tc, test_row_to_json);
	suite_add_tcase(s, tc);
	return s;
}
