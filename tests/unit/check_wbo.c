/* check_wbo.c - unit tests for src/wbo.c: POST batches and JSON output. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "check_suites.h"
#include "validate.h"
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
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1 << 20, 1024, &b), WBO_BATCH_OK);
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
	/* Only an array is a batch: the handler writes a single object as
	 * a PUT of one record. */
	struct json_object *body = parse("{\"id\":\"only\",\"sortindex\":3}");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1 << 20, 1024, &b),
			 WBO_BATCH_NOT_LIST);
	wbo_batch_free(&b);
	json_object_put(body);

	body = parse("\"text\"");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1 << 20, 1024, &b), WBO_BATCH_NOT_LIST);
	wbo_batch_free(&b);
	json_object_put(body);

	body = parse("[]");
	ck_assert_int_eq(wbo_batch_parse(body, 2, 1 << 20, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.nvalid, 0);
	ck_assert_int_eq(json_object_object_length(b.failed), 0);
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

START_TEST(test_batch_over_the_record_limit)
{
	struct wbo_batch b;
	/* Two records at most: the third valid one is deferred, an invalid
	 * one past the limit still gets its own reason. */
	struct json_object *body = parse(
		"[{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":\"c\"},"
		"{\"id\":\"d\",\"ttl\":-1},{\"id\":\"e\"}]");
	ck_assert_int_eq(wbo_batch_parse(body, 2, 1 << 20, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.count, 5);
	ck_assert_uint_eq(b.nvalid, 2);
	ck_assert_str_eq(b.items[0].id, "a");
	ck_assert_str_eq(b.items[1].id, "b");
	ck_assert_str_eq(reasons(&b, "c"), "[\"retry wbo\"]");
	ck_assert_str_eq(reasons(&b, "d"), "[\"invalid ttl\"]");
	ck_assert_str_eq(reasons(&b, "e"), "[\"retry wbo\"]");
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

START_TEST(test_batch_over_the_byte_budget)
{
	struct wbo_batch b;
	/* 10 bytes: "a" and "b" (4 + 6) fit, "c" would go over, and "d",
	 * with no payload at all, comes after the budget ran out: what is
	 * stored stays a prefix of the list. */
	struct json_object *body = parse(
		"[{\"id\":\"a\",\"payload\":\"1234\"},"
		"{\"id\":\"b\",\"payload\":\"123456\"},"
		"{\"id\":\"c\",\"payload\":\"1\"},"
		"{\"id\":\"d\",\"sortindex\":1}]");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 10, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.nvalid, 2);
	ck_assert_str_eq(b.items[1].id, "b");
	ck_assert_str_eq(reasons(&b, "c"), "[\"retry bytes\"]");
	ck_assert_str_eq(reasons(&b, "d"), "[\"retry bytes\"]");
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

START_TEST(test_batch_first_record_is_never_deferred_by_bytes)
{
	struct wbo_batch b;
	/* A budget below one payload (max_post_bytes under
	 * max_payload_bytes): the first record is stored, not deferred for
	 * ever; the budget is spent for the rest. */
	struct json_object *body = parse(
		"[{\"id\":\"a\",\"payload\":\"123456789012\"},"
		"{\"id\":\"b\",\"payload\":\"1\"}]");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 10, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.nvalid, 1);
	ck_assert_str_eq(b.items[0].id, "a");
	ck_assert_str_eq(reasons(&b, "b"), "[\"retry bytes\"]");
	wbo_batch_free(&b);
	json_object_put(body);
	/* An invalid record before it does not count as the first. */
	body = parse("[{\"id\":\"x\",\"ttl\":\"no\"},"
		     "{\"id\":\"a\",\"payload\":\"123456789012\"}]");
	ck_assert_int_eq(wbo_batch_parse(body, 100, 10, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.nvalid, 1);
	ck_assert_str_eq(b.items[0].id, "a");
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

START_TEST(test_batch_failed_keys_as_sent)
{
	struct wbo_batch b;
	char text[400], id[201];
	memset(id, 'x', 200);
	id[200] = '\0';
	snprintf(text, sizeof text, "[{\"id\":\"%s\",\"payload\":\"p\"}]", id);
	struct json_object *body = parse(text);
	ck_assert_int_eq(wbo_batch_parse(body, 100, 1 << 20, 1024, &b), WBO_BATCH_OK);
	ck_assert_uint_eq(b.nvalid, 0);
	ck_assert_str_eq(reasons(&b, id), "[\"invalid id\"]");
	ck_assert_int_eq(json_object_object_length(b.failed), 1);
	wbo_batch_free(&b);
	json_object_put(body);
}
END_TEST

/* ---- one record ----------------------------------------------------------- */

START_TEST(test_numeric_ids)
{
	struct wbo w;
	struct json_object *obj = parse(
		"{\"id\":12,\"parentid\":-3,\"predecessorid\":18446744073709551615,"
		"\"payload\":\"p\"}");
	ck_assert_int_eq(wbo_parse(obj, NULL, 1024, &w), WBO_OK);
	ck_assert_uint_eq(w.id_len, 2);
	ck_assert_str_eq(w.id, "12");
	ck_assert_str_eq(w.parentid, "-3");
	ck_assert_str_eq(w.predecessorid, "18446744073709551615");
	json_object_put(obj);

	/* A URL id matches the number's text. */
	obj = parse("{\"id\":7}");
	ck_assert_int_eq(wbo_parse(obj, "7", 1024, &w), WBO_OK);
	json_object_put(obj);

	/* Objects, arrays, booleans and fractions stay invalid. */
	static const char *const bad[] = {
		"{\"id\":{}}", "{\"id\":[1]}", "{\"id\":true}", "{\"id\":1.5}",
		"{\"id\":\"a\",\"parentid\":false}",
		"{\"id\":\"a\",\"predecessorid\":[]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		obj = parse(bad[i]);
		ck_assert_msg(wbo_parse(obj, NULL, 1024, &w) != WBO_OK, "%s", bad[i]);
		json_object_put(obj);
	}
}
END_TEST

/* max_payload_bytes may be set to 16 MiB, one byte past what wbo.payload
 * (a MEDIUMBLOB) holds: such a payload is refused, never cut to fit. */
START_TEST(test_payload_longer_than_its_column)
{
	struct wbo w;
	size_t len = PAYLOAD_COLUMN_MAX + 1;
	char *text = malloc(len + 1);
	ck_assert_ptr_nonnull(text);
	memset(text, 'a', len);
	text[len] = '\0';
	struct json_object *obj = json_object_new_object();
	json_object_object_add(obj, "id", json_object_new_string("big"));
	json_object_object_add(obj, "payload", json_object_new_string_len(text, (int)len));
	ck_assert_int_eq(wbo_parse(obj, NULL, 16 * 1024 * 1024, &w), WBO_PAYLOAD_TOO_LARGE);
	json_object_object_add(obj, "payload",
			       json_object_new_string_len(text, (int)len - 1));
	ck_assert_int_eq(wbo_parse(obj, NULL, 16 * 1024 * 1024, &w), WBO_OK);
	ck_assert_uint_eq(w.payload_len, PAYLOAD_COLUMN_MAX);
	json_object_put(obj);
	free(text);
}
END_TEST

START_TEST(test_sortindex_strings)
{
	static const struct {
		const char *json;
		int64_t want;
	} good[] = {
		{ "\"5\"", 5 },	   { "\"5.5\"", 5 },	   { "\"-2.9\"", -2 },
		{ "\"7.\"", 7 },	   { "\"-0.5\"", 0 },	   { "5.9", 5 },
		{ "\"999999999.99\"", 999999999 },
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char text[80];
		struct wbo w;
		snprintf(text, sizeof text, "{\"id\":\"a\",\"sortindex\":%s}",
			 good[i].json);
		struct json_object *obj = parse(text);
		ck_assert_msg(wbo_parse(obj, NULL, 1024, &w) == WBO_OK, "%s", text);
		ck_assert_msg(w.sortindex == good[i].want, "%s gave %lld", text,
			      (long long)w.sortindex);
		json_object_put(obj);
	}
	static const char *const bad[] = {
		"\"abc\"", "\"\"", "\".5\"", "\"5.5.5\"", "\"1e3\"", "\" 5\"",
		"\"5x\"", "\"5.x\"", "\"5\\u00003\"", "\"1000000000\"",
		"\"-1000000000.5\"", "\"99999999999999999999999.1\"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char text[80];
		struct wbo w;
		snprintf(text, sizeof text, "{\"id\":\"a\",\"sortindex\":%s}",
			 bad[i]);
		struct json_object *obj = parse(text);
		ck_assert_msg(wbo_parse(obj, NULL, 1024, &w) == WBO_INVALID_SORTINDEX,
			      "%s", text);
		json_object_put(obj);
	}
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
	tcase_add_test(tc, test_payload_longer_than_its_column);
	tcase_add_test(tc, test_batch_shapes);
	tcase_add_test(tc, test_batch_over_the_record_limit);
	tcase_add_test(tc, test_batch_over_the_byte_budget);
	tcase_add_test(tc, test_batch_first_record_is_never_deferred_by_bytes);
	tcase_add_test(tc, test_batch_failed_keys_as_sent);
	tcase_add_test(tc, test_numeric_ids);
	tcase_add_test(tc, test_sortindex_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_test(tc, test_escape_every_byte);
	tcase_add_test(tc, test_escape_payload_and_limits);
	tcase_add_test(tc, test_row_to_json);
	suite_add_tcase(s, tc);
	return s;
}
