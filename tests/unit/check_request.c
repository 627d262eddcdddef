/* check_request.c - unit tests for src/request.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_suites.h"
#include "request.h"

/* Parse with a fresh request; the caller calls request_free(). */
static enum request_parse_status parse(struct request *req, const char *script,
				       const char *uri)
{
	request_init(req, 1, NULL);
	return request_parse_uri(req, script, uri, NULL, NULL);
}

/* Check the decoded segments: n of them, then n NUL-terminated strings. */
static void expect_segments(const struct request *req, size_t n, ...)
{
	va_list ap;
	ck_assert_uint_eq(req->nsegments, n);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++) {
		const char *want = va_arg(ap, const char *);
		ck_assert_str_eq(req->segments[i], want);
		ck_assert_uint_eq(req->segment_lens[i], strlen(want));
	}
	va_end(ap);
}

/* ---- request_parse_uri: path ----------------------------------------- */

START_TEST(test_mount_point)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave/1.0/john/info/collections"),
			 REQUEST_OK);
	expect_segments(&req, 4, "1.0", "john", "info", "collections");
	ck_assert_uint_eq(req.nparams, 0);
	request_free(&req);

	/* A mount point written with a trailing slash is the same. */
	ck_assert_int_eq(parse(&req, "/weave/", "/weave/1.0/john/info/collections"),
			 REQUEST_OK);
	expect_segments(&req, 4, "1.0", "john", "info", "collections");
	request_free(&req);

	/* Deeper mount points. */
	ck_assert_int_eq(parse(&req, "/sync/weave", "/sync/weave/user/1.0/john"),
			 REQUEST_OK);
	expect_segments(&req, 3, "user", "1.0", "john");
	request_free(&req);
}
END_TEST

START_TEST(test_mount_root)
{
	struct request req;
	/* "/" and "" and NULL as SCRIPT_NAME: nothing is stripped. */
	ck_assert_int_eq(parse(&req, "/", "/1.0/john/storage"), REQUEST_OK);
	expect_segments(&req, 3, "1.0", "john", "storage");
	request_free(&req);
	ck_assert_int_eq(parse(&req, "", "/1.0/john/storage"), REQUEST_OK);
	expect_segments(&req, 3, "1.0", "john", "storage");
	request_free(&req);
	ck_assert_int_eq(parse(&req, NULL, "/1.0/john/storage"), REQUEST_OK);
	expect_segments(&req, 3, "1.0", "john", "storage");
	request_free(&req);
}
END_TEST

START_TEST(test_mount_itself)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave"), REQUEST_OK);
	expect_segments(&req, 0);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/weave/"), REQUEST_OK);
	expect_segments(&req, 0);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/weave?a=1"), REQUEST_OK);
	expect_segments(&req, 0);
	ck_assert_uint_eq(req.nparams, 1);
	request_free(&req);
	ck_assert_int_eq(parse(&req, NULL, "/"), REQUEST_OK);
	expect_segments(&req, 0);
	request_free(&req);
}
END_TEST

START_TEST(test_outside_mount)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/other/1.0/john"), REQUEST_NOT_FOUND);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/weav"), REQUEST_NOT_FOUND);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/weavex/1.0/john"), REQUEST_NOT_FOUND);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/WEAVE/1.0/john"), REQUEST_NOT_FOUND);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", ""), REQUEST_NOT_FOUND);
	request_free(&req);
	/* A mount point that is only reached through a percent escape. */
	ck_assert_int_eq(parse(&req, "/weave", "/%77eave/1.0/john"), REQUEST_NOT_FOUND);
	request_free(&req);
	/* Not an absolute path. */
	ck_assert_int_eq(parse(&req, NULL, "1.0/john"), REQUEST_NOT_FOUND);
	ck_assert_uint_eq(req.nsegments, 0);
	request_free(&req);
}
END_TEST

START_TEST(test_trailing_slash)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave/1.0/john/info/collections/"),
			 REQUEST_OK);
	expect_segments(&req, 4, "1.0", "john", "info", "collections");
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/weave/1.0/john/storage/?full=1"),
			 REQUEST_OK);
	expect_segments(&req, 3, "1.0", "john", "storage");
	ck_assert_uint_eq(req.nparams, 1);
	request_free(&req);
}
END_TEST

START_TEST(test_empty_segment)
{
	static const char *const uris[] = {
		"/weave/1.0//john",
		"/weave/1.0/john//",
		"/weave/1.0/john///",
		"/weave/1.0/john//?a=1",
	};
	for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
		struct request req;
		ck_assert_msg(parse(&req, "/weave", uris[i]) == REQUEST_NOT_FOUND,
			      "%s", uris[i]);
		request_free(&req);
	}
}
END_TEST

/* Slashes doubled right after the mount point: a server URL typed with a
 * trailing slash, to which the client adds "/1.0/...". */
START_TEST(test_doubled_slash_after_mount)
{
	static const char *const uris[] = {
		"/weave//1.0/john/info/collections",
		"/weave///1.0/john/info/collections",
		"/weave//1.0/john/info/collections/",
	};
	for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
		struct request req;
		ck_assert_msg(parse(&req, "/weave", uris[i]) == REQUEST_OK, "%s",
			      uris[i]);
		expect_segments(&req, 4, "1.0", "john", "info", "collections");
		request_free(&req);
	}
	/* The mount point alone, with its slashes doubled: the root. */
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave//"), REQUEST_OK);
	ck_assert_uint_eq(req.nsegments, 0);
	request_free(&req);
	/* Deeper down an empty segment is still no resource. */
	ck_assert_int_eq(parse(&req, "/weave", "/weave//1.0//john"),
			 REQUEST_NOT_FOUND);
	request_free(&req);
}
END_TEST

START_TEST(test_percent_segments)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave",
			       "/weave/1.0/j%6Fhn/storage/book%20marks/a%2Fb%2fc"),
			 REQUEST_OK);
	/* %2F decodes to '/' inside its own segment: still 5 segments. */
	expect_segments(&req, 5, "1.0", "john", "storage", "book marks", "a/b/c");
	request_free(&req);

	/* The path is split from the query before decoding: %3F is no '?'. */
	ck_assert_int_eq(parse(&req, "/weave", "/weave/a%3Fb%26c?x=%3F%26"),
			 REQUEST_OK);
	expect_segments(&req, 1, "a?b&c");
	ck_assert_uint_eq(req.nparams, 1);
	ck_assert_str_eq(req.params[0].name, "x");
	ck_assert_str_eq(req.params[0].value, "?&");
	request_free(&req);

	/* '+' in the path is a plus; non-ASCII bytes decode as bytes. */
	ck_assert_int_eq(parse(&req, "/weave", "/weave/a+b/%C3%A9/%25"), REQUEST_OK);
	expect_segments(&req, 3, "a+b", "\xc3\xa9", "%");
	request_free(&req);
}
END_TEST

START_TEST(test_bad_encoding_path)
{
	static const char *const uris[] = {
		"/weave/1.0/john/%",
		"/weave/1.0/john/a%4",
		"/weave/1.0/john/a%4/b",
		"/weave/1.0/john/%zz",
		"/weave/1.0/john/%G0",
		"/weave/1.0/john/%0g",
		"/weave/1.0/john/a%00b",
		"/weave/1.0/%00",
		"/weave/1.0/john/100%",
		"/weave/1.0/john/%%41",
		"/weave/1.0/john/%-1",
		"/weave/1.0/john/% 1",
	};
	for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
		struct request req;
		ck_assert_msg(parse(&req, "/weave", uris[i]) == REQUEST_BAD_ENCODING,
			      "%s", uris[i]);
		request_free(&req);
	}
}
END_TEST

/* Dot segments, raw or percent-encoded, are refused, never used as names. */
START_TEST(test_dot_segments)
{
	static const char *const uris[] = {
		"/weave/1.0/john/storage/c/..",
		"/weave/1.0/john/storage/c/.",
		"/weave/1.0/john/storage/c/%2E%2E",
		"/weave/1.0/john/storage/c/.%2e",
		"/weave/1.0/john/storage/../info/collections",
		"/weave/1.0/../john/info/collections",
		"/weave/./1.0/john/info/collections",
		"/weave/1.0/john/storage/c/%2e/",
	};
	for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
		struct request req;
		ck_assert_msg(parse(&req, "/weave", uris[i]) == REQUEST_BAD_ENCODING,
			      "%s", uris[i]);
		request_free(&req);
	}
	/* Dots inside a name are fine. */
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave/1.0/john/storage/c/.../a.b"),
			 REQUEST_OK);
	expect_segments(&req, 6, "1.0", "john", "storage", "c", "...", "a.b");
	request_free(&req);
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL, "/1.0/john/..", NULL),
			 REQUEST_BAD_ENCODING);
	request_free(&req);
}
END_TEST

/* Build "/weave" followed by n segments "/s<i>". */
static void build_segments(char *out, size_t outlen, size_t n)
{
	size_t o = (size_t)snprintf(out, outlen, "/weave");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, outlen - o, "/s%zu", i);
}

START_TEST(test_max_segments)
{
	char uri[256];
	struct request req;
	build_segments(uri, sizeof uri, REQUEST_MAX_SEGMENTS);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_OK);
	ck_assert_uint_eq(req.nsegments, REQUEST_MAX_SEGMENTS);
	ck_assert_str_eq(req.segments[REQUEST_MAX_SEGMENTS - 1], "s7");
	request_free(&req);
}
END_TEST

/*
 * More segments than any route has cannot name anything: 404, as
 * request.h documents for REQUEST_NOT_FOUND.
 */
START_TEST(test_too_many_segments)
{
	char uri[256];
	struct request req;
	build_segments(uri, sizeof uri, REQUEST_MAX_SEGMENTS + 1);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_NOT_FOUND);
	request_free(&req);
}
END_TEST

START_TEST(test_uri_length)
{
	size_t len = REQUEST_MAX_URI;
	char *uri = malloc(len + 2);
	ck_assert_ptr_nonnull(uri);
	memcpy(uri, "/weave/", 7);
	memset(uri + 7, 'a', len - 7);
	uri[len] = '\0';
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_OK);
	ck_assert_uint_eq(req.nsegments, 1);
	ck_assert_uint_eq(req.segment_lens[0], len - 7);
	request_free(&req);
	uri[len] = 'a';
	uri[len + 1] = '\0';
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_TOO_LONG);
	ck_assert_uint_eq(req.nsegments, 0);
	request_free(&req);
	/* The limit covers the query too. */
	uri[100] = '?';
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_TOO_LONG);
	request_free(&req);
	free(uri);
}
END_TEST

/* ---- request_parse_uri: query ---------------------------------------- */

START_TEST(test_query_items)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave",
			       "/weave/1.0/u/storage/c?full=1&ids=a+b,c&&newer="
			       "1265402837.12&flag&=v&k=a=b&"),
			 REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 6);
	ck_assert_str_eq(req.params[0].name, "full");
	ck_assert_str_eq(req.params[0].value, "1");
	ck_assert_uint_eq(req.params[0].value_len, 1);
	/* '+' is a literal plus in the query. */
	ck_assert_str_eq(req.params[1].name, "ids");
	ck_assert_str_eq(req.params[1].value, "a+b,c");
	ck_assert_str_eq(req.params[2].name, "newer");
	ck_assert_str_eq(req.params[2].value, "1265402837.12");
	/* A name without '=' has an empty value. */
	ck_assert_str_eq(req.params[3].name, "flag");
	ck_assert_str_eq(req.params[3].value, "");
	ck_assert_uint_eq(req.params[3].value_len, 0);
	ck_assert_str_eq(req.params[4].name, "");
	ck_assert_str_eq(req.params[4].value, "v");
	/* Only the first '=' separates. */
	ck_assert_str_eq(req.params[5].name, "k");
	ck_assert_str_eq(req.params[5].value, "a=b");
	request_free(&req);
}
END_TEST

START_TEST(test_query_decoding)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave/x?a%3Db=c%26d&e%20f=%2B%2b&"
			       "ids=%7Bx%7D%2C%7By%7D"),
			 REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 3);
	ck_assert_str_eq(req.params[0].name, "a=b");
	ck_assert_str_eq(req.params[0].value, "c&d");
	ck_assert_str_eq(req.params[1].name, "e f");
	ck_assert_str_eq(req.params[1].value, "++");
	ck_assert_uint_eq(req.params[1].value_len, 2);
	ck_assert_str_eq(req.params[2].value, "{x},{y}");
	request_free(&req);

	/* Empty query or only separators. */
	ck_assert_int_eq(parse(&req, "/weave", "/weave/x?"), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 0);
	request_free(&req);
	ck_assert_int_eq(parse(&req, "/weave", "/weave/x?&&&"), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 0);
	request_free(&req);
	/* A second '?' belongs to the query. */
	ck_assert_int_eq(parse(&req, "/weave", "/weave/x?a=?b"), REQUEST_OK);
	ck_assert_str_eq(req.params[0].value, "?b");
	request_free(&req);
}
END_TEST

START_TEST(test_query_bad_encoding)
{
	static const char *const uris[] = {
		"/weave/x?a=%", "/weave/x?a=%4", "/weave/x?a=%zz", "/weave/x?a=%00",
		"/weave/x?%=1", "/weave/x?a%00=1", "/weave/x?ok=1&a=b%0", "/weave/x?a%",
	};
	for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
		struct request req;
		ck_assert_msg(parse(&req, "/weave", uris[i]) == REQUEST_BAD_ENCODING,
			      "%s", uris[i]);
		request_free(&req);
	}
}
END_TEST

/* "/weave/x?" followed by n items "p<i>=<i>", with empty items mixed in. */
static char *build_query(size_t n)
{
	size_t cap = 32 + n * 16;
	char *uri = malloc(cap);
	ck_assert_ptr_nonnull(uri);
	size_t o = (size_t)snprintf(uri, cap, "/weave/x?");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(uri + o, cap - o, "&&p%zu=%zu", i, i);
	return uri;
}

START_TEST(test_query_max_params)
{
	struct request req;
	char *uri = build_query(REQUEST_MAX_PARAMS);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, REQUEST_MAX_PARAMS);
	ck_assert_str_eq(req.params[REQUEST_MAX_PARAMS - 1].name, "p31");
	request_free(&req);
	free(uri);

	uri = build_query(REQUEST_MAX_PARAMS + 1);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_TOO_LONG);
	request_free(&req);
	free(uri);

	uri = build_query(200);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_TOO_LONG);
	request_free(&req);
	free(uri);
}
END_TEST

START_TEST(test_request_param)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave/x?a=1&b=&a=2&B=3"),
			 REQUEST_OK);
	const struct query_param *p = request_param(&req, "a");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->value, "1");
	p = request_param(&req, "b");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->value, "");
	ck_assert_uint_eq(p->value_len, 0);
	p = request_param(&req, "B");
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->value, "3");
	ck_assert_ptr_null(request_param(&req, "c"));
	ck_assert_ptr_null(request_param(&req, "A"));
	ck_assert_ptr_null(request_param(&req, ""));
	request_free(&req);

	request_init(&req, 2, NULL);
	ck_assert_ptr_null(request_param(&req, "a"));
}
END_TEST

/* ---- request_parse_form ----------------------------------------------- */

/* Give req a body of exactly len bytes, with no NUL after it. */
static void set_body(struct request *req, const char *text)
{
	size_t len = strlen(text);
	req->body = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(req->body);
	memcpy(req->body, text, len);
	req->body_len = len;
}

START_TEST(test_form_fields)
{
	struct request req;
	ck_assert_int_eq(parse(&req, "/weave", "/weave/x?q=a+b"), REQUEST_OK);
	set_body(&req, "name=John+Smith&pw=a%2Bb&&empty=&flag&sp%20ace+x=%7E+");
	ck_assert_int_eq(request_parse_form(&req), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 6);
	/* Query parameters come first and keep their literal '+'. */
	ck_assert_str_eq(req.params[0].name, "q");
	ck_assert_str_eq(req.params[0].value, "a+b");
	/* In a form '+' is a space and %2B a plus. */
	ck_assert_str_eq(request_param(&req, "name")->value, "John Smith");
	ck_assert_str_eq(request_param(&req, "pw")->value, "a+b");
	ck_assert_str_eq(request_param(&req, "empty")->value, "");
	ck_assert_uint_eq(request_param(&req, "empty")->value_len, 0);
	ck_assert_str_eq(request_param(&req, "flag")->value, "");
	ck_assert_ptr_nonnull(request_param(&req, "sp ace x"));
	ck_assert_str_eq(request_param(&req, "sp ace x")->value, "~ ");
	ck_assert_uint_eq(request_param(&req, "sp ace x")->value_len, 2);
	request_free(&req);
}
END_TEST

START_TEST(test_form_empty)
{
	struct request req;
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_form(&req), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 0);
	set_body(&req, "");
	ck_assert_int_eq(request_parse_form(&req), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 0);
	request_free(&req);

	request_init(&req, 1, NULL);
	set_body(&req, "&&&");
	ck_assert_int_eq(request_parse_form(&req), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, 0);
	request_free(&req);
}
END_TEST

START_TEST(test_form_bad)
{
	static const char *const bad[] = {
		"a=%", "a=%4", "a=%zz", "a=%00", "%=1", "ok=1&a%00=1", "a=b+%0",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct request req;
		request_init(&req, 1, NULL);
		set_body(&req, bad[i]);
		ck_assert_msg(request_parse_form(&req) == REQUEST_BAD_ENCODING, "%s",
			      bad[i]);
		request_free(&req);
	}
}
END_TEST

START_TEST(test_form_limit)
{
	/* Query and form share REQUEST_MAX_PARAMS. */
	struct request req;
	char *uri = build_query(REQUEST_MAX_PARAMS - 2);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_OK);
	free(uri);
	set_body(&req, "a=1&b=2");
	ck_assert_int_eq(request_parse_form(&req), REQUEST_OK);
	ck_assert_uint_eq(req.nparams, REQUEST_MAX_PARAMS);
	request_free(&req);

	uri = build_query(REQUEST_MAX_PARAMS - 2);
	ck_assert_int_eq(parse(&req, "/weave", uri), REQUEST_OK);
	free(uri);
	set_body(&req, "a=1&b=2&c=3");
	ck_assert_int_eq(request_parse_form(&req), REQUEST_TOO_LONG);
	request_free(&req);
}
END_TEST

/* ---- PATH_INFO fallback (plain CGI) ---------------------------------- */

START_TEST(test_path_info)
{
	struct request req;
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, "/weave", NULL,
					   "/1.0/john/info/collections",
					   "full=1&ids=a+b"),
			 REQUEST_OK);
	expect_segments(&req, 4, "1.0", "john", "info", "collections");
	ck_assert_uint_eq(req.nparams, 2);
	ck_assert_str_eq(request_param(&req, "ids")->value, "a+b");
	request_free(&req);

	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, "/weave", NULL, NULL, NULL),
			 REQUEST_OK);
	expect_segments(&req, 0);
	ck_assert_uint_eq(req.nparams, 0);
	request_free(&req);

	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, "/weave", NULL, "/1.0/john/", NULL),
			 REQUEST_OK);
	expect_segments(&req, 2, "1.0", "john");
	request_free(&req);

	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL, "1.0/john", NULL),
			 REQUEST_NOT_FOUND);
	request_free(&req);

	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL, "/1.0//john", NULL),
			 REQUEST_NOT_FOUND);
	request_free(&req);

	/* REQUEST_URI wins over PATH_INFO and QUERY_STRING when both exist. */
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, "/weave", "/weave/a?x=1", "/b",
					   "y=2"),
			 REQUEST_OK);
	expect_segments(&req, 1, "a");
	ck_assert_ptr_nonnull(request_param(&req, "x"));
	ck_assert_ptr_null(request_param(&req, "y"));
	request_free(&req);

	/* QUERY_STRING is still percent-decoded. */
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL, "/a", "q=%41"),
			 REQUEST_OK);
	ck_assert_str_eq(request_param(&req, "q")->value, "A");
	request_free(&req);
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL, "/a", "q=%4"),
			 REQUEST_BAD_ENCODING);
	request_free(&req);
}
END_TEST

/*
 * The server has already decoded PATH_INFO (request.c: "re-split it as
 * is"); decoding it a second time would change ids holding a '%'.
 */
START_TEST(test_path_info_not_decoded_twice)
{
	struct request req;
	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL,
					   "/1.0/john/storage/c/a%41", NULL),
			 REQUEST_OK);
	ck_assert_uint_eq(req.nsegments, 5);
	ck_assert_str_eq(req.segments[4], "a%41");
	request_free(&req);

	request_init(&req, 1, NULL);
	ck_assert_int_eq(request_parse_uri(&req, NULL, NULL,
					   "/1.0/john/storage/c/100%", NULL),
			 REQUEST_OK);
	ck_assert_str_eq(req.segments[4], "100%");
	request_free(&req);
}
END_TEST

/* ---- environment and headers ----------------------------------------- */

START_TEST(test_request_init_free)
{
	char *env[] = { (char *)"A=1", NULL };
	struct request req;
	memset(&req, 0x5a, sizeof req);
	request_init(&req, 77, env);
	ck_assert_uint_eq(req.id, 77);
	ck_assert_ptr_eq(req.env, env);
	ck_assert_int_eq(req.method, METHOD_OTHER);
	ck_assert_str_eq(req.method_name, "");
	ck_assert_uint_eq(req.nsegments, 0);
	ck_assert_uint_eq(req.nparams, 0);
	ck_assert_ptr_null(req.body);
	ck_assert_ptr_null(req.user);
	ck_assert_int_eq(request_parse_uri(&req, "/w", "/w/a/b?c=d", NULL, NULL),
			 REQUEST_OK);
	req.body = malloc(10);
	request_free(&req);
	ck_assert_uint_eq(req.nsegments, 0);
	ck_assert_uint_eq(req.nparams, 0);
	ck_assert_ptr_null(req.body);
	request_free(&req); /* twice is harmless */
}
END_TEST

START_TEST(test_request_env)
{
	char *env[] = {
		(char *)"HTTP_X_FOO_BAR=baz",
		(char *)"HTTP_X_FOO=short",
		(char *)"HTTP_X_CONFIRM_DELETE=1",
		(char *)"HTTP_X_EMPTY=",
		(char *)"CONTENT_TYPE=text/plain",
		(char *)"HTTP_X_EQ=a=b",
		(char *)"NOEQUALS",
		NULL,
	};
	struct request req;
	request_init(&req, 1, env);
	ck_assert_str_eq(request_env(&req, "HTTP_X_FOO_BAR"), "baz");
	ck_assert_str_eq(request_env(&req, "HTTP_X_FOO"), "short");
	ck_assert_ptr_null(request_env(&req, "HTTP_X_FO"));
	ck_assert_ptr_null(request_env(&req, "HTTP_X_FOO_BA"));
	ck_assert_ptr_null(request_env(&req, "http_x_foo"));
	ck_assert_str_eq(request_env(&req, "HTTP_X_EMPTY"), "");
	ck_assert_str_eq(request_env(&req, "HTTP_X_EQ"), "a=b");
	ck_assert_ptr_null(request_env(&req, "NOEQUALS"));
	ck_assert_str_eq(request_env(&req, "CONTENT_TYPE"), "text/plain");

	ck_assert_str_eq(request_header(&req, "X-Foo-Bar"), "baz");
	ck_assert_str_eq(request_header(&req, "x-foo-bar"), "baz");
	ck_assert_str_eq(request_header(&req, "X-FOO-BAR"), "baz");
	ck_assert_str_eq(request_header(&req, "X-Foo"), "short");
	ck_assert_str_eq(request_header(&req, "X-Confirm-Delete"), "1");
	ck_assert_str_eq(request_header(&req, "X_Foo_Bar"), "baz");
	ck_assert_ptr_null(request_header(&req, "X-Fo"));
	ck_assert_ptr_null(request_header(&req, "Foo-Bar"));
	ck_assert_ptr_null(request_header(&req, "X-Missing"));
	/* CGI passes Content-Type without the HTTP_ prefix. */
	ck_assert_ptr_null(request_header(&req, "Content-Type"));

	request_init(&req, 1, NULL);
	ck_assert_ptr_null(request_env(&req, "HTTP_X_FOO"));
	ck_assert_ptr_null(request_header(&req, "X-Foo"));
}
END_TEST

START_TEST(test_request_header_long_name)
{
	/* The longest name that fits the 128-byte variable: 122 bytes. */
	char name[200], var[220];
	memset(name, 'a', 122);
	name[122] = '\0';
	memcpy(var, "HTTP_", 5);
	memset(var + 5, 'A', 122);
	memcpy(var + 127, "=long", 6);
	char *env[] = { var, NULL };
	struct request req;
	request_init(&req, 1, env);
	ck_assert_ptr_nonnull(request_header(&req, name));
	ck_assert_str_eq(request_header(&req, name), "long");

	/* One more byte: refused, never a truncated match. */
	memset(name, 'a', 123);
	name[123] = '\0';
	memset(var + 5, 'A', 123);
	memcpy(var + 128, "=long", 6);
	ck_assert_ptr_null(request_header(&req, name));
	memset(name, 'a', 190);
	name[190] = '\0';
	ck_assert_ptr_null(request_header(&req, name));
}
END_TEST

START_TEST(test_method_parse)
{
	ck_assert_int_eq(request_method_parse("GET"), METHOD_GET);
	ck_assert_int_eq(request_method_parse("PUT"), METHOD_PUT);
	ck_assert_int_eq(request_method_parse("POST"), METHOD_POST);
	ck_assert_int_eq(request_method_parse("DELETE"), METHOD_DELETE);
	static const char *const other[] = {
		"get", "Get", "HEAD", "OPTIONS", "PATCH", "", "GET ", " GET",
		"GETS", "DELET", "POSTX",
	};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
		ck_assert_msg(request_method_parse(other[i]) == METHOD_OTHER, "%s",
			      other[i]);
	ck_assert_int_eq(request_method_parse(NULL), METHOD_OTHER);
}
END_TEST

/* ---- percent_decode -------------------------------------------------- */

START_TEST(test_percent_decode)
{
	size_t len = 99;
	char *s = percent_decode("%41%42c%64", 10, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "ABcd");
	ck_assert_uint_eq(len, 4);
	free(s);

	s = percent_decode("a%2fb%2Fc", 9, &len);
	ck_assert_str_eq(s, "a/b/c");
	free(s);

	s = percent_decode("%E9%c3%A9%ff", 12, &len);
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(memcmp(s, "\xe9\xc3\xa9\xff", 5), 0);
	free(s);

	s = percent_decode("a+b %20", 7, &len);
	ck_assert_str_eq(s, "a+b  ");
	free(s);

	s = percent_decode("", 0, &len);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);

	/* Only len bytes are read. */
	s = percent_decode("abc%41", 3, &len);
	ck_assert_str_eq(s, "abc");
	free(s);
	s = percent_decode("%41", 3, NULL);
	ck_assert_str_eq(s, "A");
	free(s);
	/* The escape does not become a new escape. */
	s = percent_decode("%2541", 5, &len);
	ck_assert_str_eq(s, "%41");
	free(s);
}
END_TEST

START_TEST(test_percent_decode_bad)
{
	static const char *const bad[] = {
		"%", "%4", "a%", "a%4", "%zz", "%4z", "%z4", "%%", "%%41", "%00",
		"a%00b", "% 41", "%+4", "%-4",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t len = 1234;
		ck_assert_msg(percent_decode(bad[i], strlen(bad[i]), &len) == NULL,
			      "%s", bad[i]);
		ck_assert_uint_eq(len, 1234);
	}
	/* A raw NUL inside the given length. */
	ck_assert_ptr_null(percent_decode("a\0b", 3, NULL));
	/* An escape cut by the length. */
	ck_assert_ptr_null(percent_decode("ab%41", 4, NULL));
}
END_TEST

Suite *request_suite(void)
{
	Suite *s = suite_create("request");

	TCase *tc = tcase_create("path");
	tcase_add_test(tc, test_mount_point);
	tcase_add_test(tc, test_mount_root);
	tcase_add_test(tc, test_mount_itself);
	tcase_add_test(tc, test_outside_mount);
	tcase_add_test(tc, test_trailing_slash);
	tcase_add_test(tc, test_empty_segment);
	tcase_add_test(tc, test_doubled_slash_after_mount);
	tcase_add_test(tc, test_percent_segments);
	tcase_add_test(tc, test_bad_encoding_path);
	tcase_add_test(tc, test_dot_segments);
	tcase_add_test(tc, test_max_segments);
	tcase_add_test(tc, test_too_many_segments);
	tcase_add_test(tc, test_uri_length);
	suite_add_tcase(s, tc);

	tc = tcase_create("query");
	tcase_add_test(tc, test_query_items);
	tcase_add_test(tc, test_query_decoding);
	tcase_add_test(tc, test_query_bad_encoding);
	tcase_add_test(tc, test_query_max_params);
	tcase_add_test(tc, test_request_param);
	suite_add_tcase(s, tc);

	tc = tcase_create("form");
	tcase_add_test(tc, test_form_fields);
	tcase_add_test(tc, test_form_empty);
	tcase_add_test(tc, test_form_bad);
	tcase_add_test(tc, test_form_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("path_info");
	tcase_add_test(tc, test_path_info);
	tcase_add_test(tc, test_path_info_not_decoded_twice);
	suite_add_tcase(s, tc);

	tc = tcase_create("env");
	tcase_add_test(tc, test_request_init_free);
	tcase_add_test(tc, test_request_env);
	tcase_add_test(tc, test_request_header_long_name);
	tcase_add_test(tc, test_method_parse);
	suite_add_tcase(s, tc);

	tc = tcase_create("percent_decode");
	tcase_add_test(tc, test_percent_decode);
	tcase_add_test(tc, test_percent_decode_bad);
	suite_add_tcase(s, tc);

	return s;
}
