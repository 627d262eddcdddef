/* check_auth.c - unit tests for src/auth.c. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "auth.h"
#include "check_suites.h"
#include "request.h"

/*
 * lower(base32(sha1(lower("Foo@Example.com")))), computed independently:
 *   /usr/bin/python3 -c 'import hashlib,base64;
 *     print(base64.b32encode(hashlib.sha1(b"foo@example.com").digest())
 *           .decode().lower().rstrip("="))'
 */
#define FOO_EXAMPLE_HASHED "oz7hj2vxbaoedyfygyyfcejz2eycjftg"

/* "Basic " + base64(data[0..len)); free() the result. */
static char *basic_header(const void *data, size_t len)
{
	size_t b64len = (len + 2) / 3 * 4;
	char *h = malloc(6 + b64len + 1);
	ck_assert_ptr_nonnull(h);
	memcpy(h, "Basic ", 6);
	int n = EVP_EncodeBlock((unsigned char *)h + 6, data, (int)len);
	ck_assert_int_eq(n, (int)b64len);
	return h;
}

/* Parse header, starting from a dirty struct so wiping is observable. */
static enum auth_parse_status parse(const char *header, struct credentials *c)
{
	memset(c, 'Q', sizeof *c);
	return auth_parse_basic(header, c);
}

/* A failed parse leaves nothing behind in *c. */
static void expect_wiped(const struct credentials *c)
{
	const unsigned char *p = (const unsigned char *)c;
	for (size_t i = 0; i < sizeof *c; i++)
		ck_assert_msg(p[i] == 0, "byte %zu not wiped", i);
}

static void expect_fail(const char *header, enum auth_parse_status want)
{
	struct credentials c;
	enum auth_parse_status st = parse(header, &c);
	ck_assert_msg(st == want, "'%s': got %d (%s), want %d", header ? header : "(null)",
		      st, auth_parse_status_text(st), want);
	expect_wiped(&c);
}

static void expect_creds(const char *header, const char *user,
			 const char *password, size_t password_len)
{
	struct credentials c;
	enum auth_parse_status st = parse(header, &c);
	ck_assert_msg(st == AUTH_PARSE_OK, "'%s': %s", header, auth_parse_status_text(st));
	ck_assert_str_eq(c.username, user);
	ck_assert_uint_eq(c.username_len, strlen(user));
	ck_assert_uint_eq(c.password_len, password_len);
	ck_assert_int_eq(memcmp(c.password, password, password_len), 0);
	ck_assert_int_eq(c.password[password_len], '\0');
	auth_credentials_wipe(&c);
	expect_wiped(&c);
}

/* ---- auth_parse_basic ------------------------------------------------- */

START_TEST(test_basic_ok)
{
	/* base64("user:pass") */
	expect_creds("Basic dXNlcjpwYXNz", "user", "pass", 4);
	/* The scheme is case-insensitive; blanks around the token are fine. */
	expect_creds("basic dXNlcjpwYXNz", "user", "pass", 4);
	expect_creds("BASIC dXNlcjpwYXNz", "user", "pass", 4);
	expect_creds("Basic\tdXNlcjpwYXNz", "user", "pass", 4);
	expect_creds("Basic    dXNlcjpwYXNz  \t", "user", "pass", 4);
	/* base64("a:b"), one byte per field. */
	expect_creds("Basic YTpi", "a", "b", 1);
}
END_TEST

START_TEST(test_basic_missing)
{
	expect_fail(NULL, AUTH_PARSE_MISSING);
	expect_fail("", AUTH_PARSE_MISSING);
}
END_TEST

START_TEST(test_basic_not_basic)
{
	expect_fail("Bearer dXNlcjpwYXNz", AUTH_PARSE_NOT_BASIC);
	expect_fail("Digest username=\"user\"", AUTH_PARSE_NOT_BASIC);
	expect_fail("BasicdXNlcjpwYXNz", AUTH_PARSE_NOT_BASIC);
	expect_fail("Basic:dXNlcjpwYXNz", AUTH_PARSE_NOT_BASIC);
	expect_fail("Basi", AUTH_PARSE_NOT_BASIC);
	expect_fail("Basic", AUTH_PARSE_NOT_BASIC);
	expect_fail(" Basic dXNlcjpwYXNz", AUTH_PARSE_NOT_BASIC);
	expect_fail("dXNlcjpwYXNz", AUTH_PARSE_NOT_BASIC);
}
END_TEST

START_TEST(test_basic_bad_base64)
{
	static const char *const bad[] = {
		"Basic ",               /* nothing */
		"Basic     ",
		"Basic dXNl*jpw",       /* bad character */
		"Basic dXNlcjpwYXN!",
		"Basic dXNl cjpwYXNz",  /* blank inside */
		"Basic dXNlcjpw\x01XNz",
		"Basic dXNlcjpw\xc3\xa9Nz",
		"Basic dXNlcjpw-_Nz",   /* base64url is not base64 */
		"Basic dXNlcjpwYXN",    /* 11 characters */
		"Basic dXNlcjpwYX",     /* 10 */
		"Basic dXNlcjpwY",      /* 9 */
		"Basic dXNlcjpwYXM",    /* "user:pas" without its '=' */
		"Basic dXNl=jpw",       /* '=' in the middle */
		"Basic dXNlcjp=YXNz",
		"Basic dXNlcjpwYX=z",   /* '=' before a non-'=' */
		"Basic dXNlcjpwY===",   /* three '=' */
		"Basic ====",
		"Basic dXNlcjpwYXNz====",
		"Basic dXNlcjpwYXM=dXNl", /* padding followed by more */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_fail(bad[i], AUTH_PARSE_MALFORMED);
}
END_TEST

START_TEST(test_basic_padding)
{
	/* base64("user:pa:ss") ends in "==", base64("user:") in "=". */
	expect_creds("Basic dXNlcjpwYTpzcw==", "user", "pa:ss", 5);
	expect_creds("Basic dXNlcjo=", "user", "", 0);
	/* base64("user:pas") */
	expect_creds("Basic dXNlcjpwYXM=", "user", "pas", 3);
}
END_TEST

START_TEST(test_basic_structure)
{
	/* base64("userpass"): no colon. */
	expect_fail("Basic dXNlcnBhc3M=", AUTH_PARSE_MALFORMED);
	/* base64(":pass"): empty user. */
	expect_fail("Basic OnBhc3M=", AUTH_PARSE_MALFORMED);
	/* base64(":"): empty user, empty password. */
	expect_fail("Basic Og==", AUTH_PARSE_MALFORMED);
	/* base64("a") */
	expect_fail("Basic YQ==", AUTH_PARSE_MALFORMED);
	/* Split on the first colon: the rest is the password. */
	expect_creds("Basic dXNlcjpwYTpzcw==", "user", "pa:ss", 5);
	char *h = basic_header("u::::", 5);
	expect_creds(h, "u", ":::", 3);
	free(h);
	h = basic_header("u:pass word \t", 13);
	expect_creds(h, "u", "pass word \t", 11);
	free(h);
}
END_TEST

START_TEST(test_basic_nul)
{
	/* base64("user:pa\0ss") */
	expect_fail("Basic dXNlcjpwYQBzcw==", AUTH_PARSE_MALFORMED);
	char *h = basic_header("us\0er:pw", 8);
	expect_fail(h, AUTH_PARSE_MALFORMED);
	free(h);
	h = basic_header("user:pw\0", 8);
	expect_fail(h, AUTH_PARSE_MALFORMED);
	free(h);
	h = basic_header("\0:pw", 4);
	expect_fail(h, AUTH_PARSE_MALFORMED);
	free(h);
}
END_TEST

START_TEST(test_basic_lower_case_user)
{
	/* base64("JoHn:Pass"): the user is lower-cased, the password not. */
	expect_creds("Basic Sm9IbjpQYXNz", "john", "Pass", 4);
	char *h = basic_header("A.B_C-D09:X", 11);
	expect_creds(h, "a.b_c-d09", "X", 1);
	free(h);
}
END_TEST

START_TEST(test_basic_latin1)
{
	/* base64("user:caf\xe9"): Latin-1 e-acute becomes C3 A9. */
	expect_creds("Basic dXNlcjpjYWbp", "user", "caf\xc3\xa9", 5);
	/* base64("user:\xff\xfe>?"): '+' and '/' in the base64 too. */
	expect_creds("Basic dXNlcjr//j4/", "user", "\xc3\xbf\xc3\xbe>?", 6);
	/* base64("user:caf\xc3\xa9"): already UTF-8, kept as is. */
	expect_creds("Basic dXNlcjpjYWbDqQ==", "user", "caf\xc3\xa9", 5);
	/* An emoji (4-byte UTF-8) is kept. */
	char *h = basic_header("u:\xf0\x9f\x98\x80", 6);
	expect_creds(h, "u", "\xf0\x9f\x98\x80", 4);
	free(h);
}
END_TEST

START_TEST(test_basic_email_user)
{
	/* base64("Foo@Example.com:pw") */
	expect_creds("Basic Rm9vQEV4YW1wbGUuY29tOnB3", FOO_EXAMPLE_HASHED, "pw", 2);
	char *h = basic_header("foo@example.com:pw", 18);
	expect_creds(h, FOO_EXAMPLE_HASHED, "pw", 2);
	free(h);
	h = basic_header("FOO@EXAMPLE.COM:pw", 18);
	expect_creds(h, FOO_EXAMPLE_HASHED, "pw", 2);
	free(h);
}
END_TEST

START_TEST(test_email_to_username)
{
	char out[33];
	memset(out, 'Z', sizeof out);
	auth_email_to_username("Foo@Example.com", 15, out);
	ck_assert_str_eq(out, FOO_EXAMPLE_HASHED);
	ck_assert_uint_eq(strlen(out), 32);
	/* Only len bytes count. */
	auth_email_to_username("foo@example.comXYZ", 15, out);
	ck_assert_str_eq(out, FOO_EXAMPLE_HASHED);
	/* Another address gives another name from the base32 alphabet. */
	auth_email_to_username("bar@example.com", 15, out);
	ck_assert_str_ne(out, FOO_EXAMPLE_HASHED);
	ck_assert_uint_eq(strlen(out), 32);
	for (size_t i = 0; i < 32; i++)
		ck_assert((out[i] >= 'a' && out[i] <= 'z') ||
			  (out[i] >= '2' && out[i] <= '7'));
}
END_TEST

START_TEST(test_basic_limits)
{
	/* 255-byte user and 1024-byte password are the maxima. */
	static char data[2048];
	memset(data, 'U', 255);
	data[255] = ':';
	memset(data + 256, 'p', 1024);
	char *h = basic_header(data, 256 + 1024);
	struct credentials c;
	ck_assert_int_eq(parse(h, &c), AUTH_PARSE_OK);
	ck_assert_uint_eq(c.username_len, 255);
	ck_assert_int_eq(c.username[0], 'u');
	ck_assert_int_eq(c.username[254], 'u');
	ck_assert_uint_eq(c.password_len, 1024);
	free(h);

	/* A Latin-1 password of 1024 bytes doubles to 2048 and still fits. */
	memset(data + 256, '\xe9', 1024);
	h = basic_header(data, 256 + 1024);
	ck_assert_int_eq(parse(h, &c), AUTH_PARSE_OK);
	ck_assert_uint_eq(c.password_len, 2048);
	ck_assert_int_eq((unsigned char)c.password[2046], 0xc3);
	ck_assert_int_eq((unsigned char)c.password[2047], 0xa9);
	ck_assert_int_eq(c.password[2048], '\0');
	free(h);

	/* One byte more in either field. */
	memset(data, 'U', 256);
	data[256] = ':';
	memset(data + 257, 'p', 10);
	h = basic_header(data, 267);
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	free(h);
	memset(data, 'U', 4);
	data[4] = ':';
	memset(data + 5, 'p', 1025);
	h = basic_header(data, 1030);
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	free(h);
}
END_TEST

START_TEST(test_basic_header_too_long)
{
	/* More base64 than the decode buffer takes: too long, not malformed. */
	size_t n = AUTH_HEADER_MAX + 100;
	char *h = malloc(n + 1);
	ck_assert_ptr_nonnull(h);
	memcpy(h, "Basic ", 6);
	memset(h + 6, 'A', n - 6);
	h[n] = '\0';
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	/* Even when the characters are garbage. */
	memset(h + 6, '*', n - 6);
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	free(h);

	/* The longest base64 accepted (2040 characters) is decoded; its
	 * content is then too long for the fields. */
	static char data[1530];
	memset(data, 'p', sizeof data);
	memcpy(data, "user:", 5);
	h = basic_header(data, sizeof data);
	ck_assert_uint_eq(strlen(h + 6), AUTH_HEADER_MAX - 8);
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	free(h);

	/* 2044 characters: refused before decoding. */
	static char more[1533];
	memset(more, 'p', sizeof more);
	memcpy(more, "user:", 5);
	h = basic_header(more, sizeof more);
	ck_assert_uint_eq(strlen(h + 6), AUTH_HEADER_MAX - 4);
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	/* The length is checked before the characters. */
	memset(h + 6, '*', AUTH_HEADER_MAX - 4);
	expect_fail(h, AUTH_PARSE_TOO_LONG);
	free(h);
}
END_TEST

START_TEST(test_status_text)
{
	for (int i = 0; i < AUTH_PARSE__MAX; i++) {
		const char *t = auth_parse_status_text((enum auth_parse_status)i);
		ck_assert_ptr_nonnull(t);
		ck_assert_uint_gt(strlen(t), 0);
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(t, auth_parse_status_text((enum auth_parse_status)j));
	}
	ck_assert_str_eq(auth_parse_status_text(AUTH_PARSE__MAX), "?");
}
END_TEST

/* ---- auth_password_to_utf8 -------------------------------------------- */

START_TEST(test_password_to_utf8)
{
	char out[64];
	ck_assert_uint_eq(auth_password_to_utf8("plain", 5, out), 5);
	ck_assert_str_eq(out, "plain");
	ck_assert_uint_eq(auth_password_to_utf8("", 0, out), 0);
	ck_assert_str_eq(out, "");
	/* Mixed: any invalid byte makes the whole string Latin-1. */
	ck_assert_uint_eq(auth_password_to_utf8("\xc3\xa9\xe9", 3, out), 6);
	ck_assert_str_eq(out, "\xc3\x83\xc2\xa9\xc3\xa9");
	/* An overlong sequence is not UTF-8. */
	ck_assert_uint_eq(auth_password_to_utf8("\xc0\xaf", 2, out), 4);
	ck_assert_str_eq(out, "\xc3\x80\xc2\xaf");
	/* Boundaries of the Latin-1 upper half. */
	ck_assert_uint_eq(auth_password_to_utf8("\x80\xbf\xc0\xff", 4, out), 8);
	ck_assert_int_eq(memcmp(out, "\xc2\x80\xc2\xbf\xc3\x80\xc3\xbf", 9), 0);
	/* Valid UTF-8 of every length is copied unchanged. */
	const char *u = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	ck_assert_uint_eq(auth_password_to_utf8(u, strlen(u), out), strlen(u));
	ck_assert_str_eq(out, u);
}
END_TEST

/* ---- auth_find_header ------------------------------------------------- */

START_TEST(test_find_header_order)
{
	char *env[] = {
		(char *)"REDIRECT_HTTP_AUTHORIZATION=d",
		(char *)"AUTHORIZATION=c",
		(char *)"Authorization=b",
		(char *)"HTTP_AUTHORIZATION=a",
		NULL,
	};
	struct request req;
	const char *source = NULL;
	request_init(&req, 1, env);
	ck_assert_str_eq(auth_find_header(&req, &source), "a");
	ck_assert_str_eq(source, "HTTP_AUTHORIZATION");
	/* Drop the winner each time by turning it into another variable. */
	env[3] = (char *)"HTTP_AUTHORIZATIONX=a";
	ck_assert_str_eq(auth_find_header(&req, &source), "b");
	ck_assert_str_eq(source, "Authorization");
	env[2] = (char *)"X=b";
	ck_assert_str_eq(auth_find_header(&req, &source), "c");
	ck_assert_str_eq(source, "AUTHORIZATION");
	env[1] = (char *)"Y=c";
	ck_assert_str_eq(auth_find_header(&req, &source), "d");
	ck_assert_str_eq(source, "REDIRECT_HTTP_AUTHORIZATION");
	ck_assert_str_eq(auth_find_header(&req, NULL), "d");
	env[0] = (char *)"Z=d";
	source = "untouched";
	ck_assert_ptr_null(auth_find_header(&req, &source));
	ck_assert_str_eq(source, "untouched");
}
END_TEST

START_TEST(test_find_header_empty_skipped)
{
	char *env[] = {
		(char *)"HTTP_AUTHORIZATION=",
		(char *)"REDIRECT_HTTP_AUTHORIZATION=Basic dXNlcjpwYXNz",
		NULL,
	};
	struct request req;
	const char *source = NULL;
	request_init(&req, 1, env);
	ck_assert_str_eq(auth_find_header(&req, &source), "Basic dXNlcjpwYXNz");
	ck_assert_str_eq(source, "REDIRECT_HTTP_AUTHORIZATION");
	request_init(&req, 1, NULL);
	ck_assert_ptr_null(auth_find_header(&req, &source));
}
END_TEST

START_TEST(test_credentials_wipe)
{
	struct credentials c;
	ck_assert_int_eq(parse("Basic dXNlcjpwYXNz", &c), AUTH_PARSE_OK);
	auth_credentials_wipe(&c);
	expect_wiped(&c);
}
END_TEST

Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");

	TCase *tc = tcase_create("parse_basic");
	tcase_add_test(tc, test_basic_ok);
	tcase_add_test(tc, test_basic_missing);
	tcase_add_test(tc, test_basic_not_basic);
	tcase_add_test(tc, test_basic_bad_base64);
	tcase_add_test(tc, test_basic_padding);
	tcase_add_test(tc, test_basic_structure);
	tcase_add_test(tc, test_basic_nul);
	tcase_add_test(tc, test_basic_lower_case_user);
	tcase_add_test(tc, test_basic_latin1);
	tcase_add_test(tc, test_basic_email_user);
	tcase_add_test(tc, test_email_to_username);
	tcase_add_test(tc, test_basic_limits);
	tcase_add_test(tc, test_basic_header_too_long);
	tcase_add_test(tc, test_status_text);
	tcase_add_test(tc, test_password_to_utf8);
	tcase_add_test(tc, test_credentials_wipe);
	suite_add_tcase(s, tc);

	tc = tcase_create("find_header");
	tcase_add_test(tc, test_find_header_order);
	tcase_add_test(tc, test_find_header_empty_skipped);
	suite_add_tcase(s, tc);


	return s;
}
