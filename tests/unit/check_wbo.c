/* check_wbo.c - unit tests for src/wbo.c: POST batches. */
#include <json-c/json.h>
#include <string.h>

#include "check_suites.h"
#include "wbo.h"

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

Suite *wbo_suite(void)
{
	Suite *s = suite_create("wbo");
	TCase *tc = tcase_create("batch");
	tcase_add_test(tc, test_batch_mixed);
	tcase_add_test(tc, test_batch_shapes);
	suite_add_tcase(s, tc);
	return s;
}
