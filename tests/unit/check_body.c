/* check_body.c - unit tests for src/body.c: JSON and text request bodies. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "body.h"
#include "check_suites.h"

/* A request whose body is len bytes of text. */
static void with_body(struct request *req, const char *text, size_t len)
{
	request_init(req, 1, NULL);
	req->body = malloc(len + 1);
	ck_assert_ptr_nonnull(req->body);
	memcpy(req->body, text, len);
	req->body[len] = '\0';
	req->body_len = len;
}

START_TEST(test_json_utf8_accepted)
{
	/* "é" as UTF-8 inside a JSON string. */
	static const char text[] = "{\"payload\":\"caf\xc3\xa9\"}";
	struct request req;
	struct response resp;
	with_body(&req, text, sizeof text - 1);
	response_init(&resp);
	struct json_object *obj = body_parse_json(&req, &resp);
	ck_assert_ptr_nonnull(obj);
	struct json_object *v;
	ck_assert(json_object_object_get_ex(obj, "payload", &v));
	ck_assert_str_eq(json_object_get_string(v), "caf\xc3\xa9");
	json_object_put(obj);
	response_free(&resp);
	request_free(&req);
}
END_TEST

START_TEST(test_json_not_utf8_refused)
{
	static const char *const bodies[] = {
		"{\"payload\":\"caf\xe9\"}",     /* Latin-1 */
		"[{\"id\":\"a\",\"payload\":\"\xc3\"}]", /* cut sequence */
		"{\"id\":\"\xed\xa0\x80\"}",     /* a UTF-16 surrogate */
		"{\"id\":\"\xc0\xaf\"}",         /* overlong '/' */
		"\xff",
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		struct request req;
		struct response resp;
		with_body(&req, bodies[i], strlen(bodies[i]));
		response_init(&resp);
		ck_assert_msg(body_parse_json(&req, &resp) == NULL, "body %zu", i);
		ck_assert_int_eq(resp.status, 400);
		ck_assert_uint_eq(resp.body.len, 1);
		ck_assert_int_eq(resp.body.data[0], '6');
		response_free(&resp);
		request_free(&req);
	}
}
END_TEST

START_TEST(test_text_latin1_converted)
{
	/* A text body (a password) in Latin-1 is still read as Latin-1. */
	struct request req;
	size_t len;
	with_body(&req, "caf\xe9", 4);
	char *text = body_text(&req, &len);
	ck_assert_uint_eq(len, 5);
	ck_assert_str_eq(text, "caf\xc3\xa9");
	free(text);
	request_free(&req);
}
END_TEST

Suite *body_suite(void)
{
	Suite *s = suite_create("body");
	TCase *tc = tcase_create("body");
	tcase_add_test(tc, test_json_utf8_accepted);
	tcase_add_test(tc, test_json_not_utf8_refused);
	tcase_add_test(tc, test_text_latin1_converted);
	suite_add_tcase(s, tc);
	return s;
}
