/* check_validate.c - unit tests for src/validate.c. */
#include <stdint.h>
#include <string.h>

#include "account_name.h"
#include "auth.h"
#include "check_suites.h"
#include "validate.h"

typedef bool (*validator)(const char *s, size_t len);

static bool check_str(validator fn, const char *s)
{
	return fn(s, strlen(s));
}

/* A string of n copies of c in buf (NUL-terminated). */
static const char *repeat(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

/* ---- username and collection ------------------------------------------ */

/* Both follow [A-Za-z0-9._-]{1,32}, dot segments excepted. */
static void name_rules(validator fn, size_t max)
{
	char buf[128];
	static const char *const good[] = {
		"a", "Z", "0", "john", "John.Smith", "john_smith", "john-smith",
		"...", "-", "_", "abcdefghijklmnopqrstuvwxyzABCDEF",
		"GHIJKLMNOPQRSTUVWXYZ0123456789._",
		"oz7hj2vxbaoedyfygyyfcejz2eycjftg", "bookmarks", "tabs",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(check_str(fn, good[i]), "refused '%s'", good[i]);

	static const char *const bad[] = {
		"", "a/b", "/", "a,b", "a b", " a", "a ", "a\tb", "a\nb", "a\x7f",
		"a@b", "a+b", "a~b", "a!b", "a*b", "a(b)", "{a}", "a%20", "a:b",
		"a;b", "a'b", "a\"b", "a\\b", "\xc3\xa9", "caf\xc3\xa9",
		"a\x01", "\x80", "\xff",
		".", "..", /* dot segments: resolved away in URLs */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!check_str(fn, bad[i]), "accepted '%s'", bad[i]);

	ck_assert(check_str(fn, repeat(buf, 'a', max)));
	ck_assert(!check_str(fn, repeat(buf, 'a', max + 1)));
	ck_assert(!check_str(fn, repeat(buf, 'a', 100)));
	ck_assert(!fn(NULL, 0));
	ck_assert(!fn(NULL, 4));
	ck_assert(!fn("john", 0));
	/* Embedded NUL caught through the explicit length. */
	ck_assert(!fn("jo\0hn", 5));
	ck_assert(!fn("john\0", 5));
	/* Only len bytes are looked at. */
	ck_assert(fn("john/smith", 4));
}

START_TEST(test_username)
{
	ck_assert_int_eq(USERNAME_MAX, 32);
	name_rules(validate_username, USERNAME_MAX);
}
END_TEST

START_TEST(test_collection)
{
	ck_assert_int_eq(COLLECTION_MAX, 32);
	name_rules(validate_collection, COLLECTION_MAX);
}
END_TEST

/* ---- WBO id ------------------------------------------------------------ */

START_TEST(test_wbo_id_good)
{
	char buf[128];
	static const char *const good[] = {
		"a", "abc123", "!", "(", ")", "*", "-", ".", "_", "~", "{", "}", "+",
		"!()*-._~{}+",
		"{f5a6e6b2-1c5d-4d7e-9b3e-0a1b2c3d4e5f}",     /* GUID-style */
		"dGhpcyBpcyBhIHRlc3Q-_w",                     /* base64url */
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
		"menu________", "toolbar_____", "places",
		"a=b", "a?b", "a#b", "a%20b", "a:b", "a;b", "a@b", "a&b", "a$b",
		"a'b", "a\"b", "a<b>", "a[b]", "a\\b", "a^b", "a`b", "a|b",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(validate_wbo_id(good[i], strlen(good[i])), "refused '%s'",
			      good[i]);
	ck_assert(validate_wbo_id(repeat(buf, 'x', WBO_ID_MAX), WBO_ID_MAX));
	ck_assert(validate_wbo_id(repeat(buf, '~', 64), 64));
}
END_TEST

START_TEST(test_wbo_id_bad)
{
	char buf[128];
	static const char *const bad[] = {
		"", "a/b", "/", "a,b", ",", "a b", " ", " a", "a ", "a\tb", "a\nb",
		"a\rb", "\x01", "\x1f", "\x7f", "a\x7f", "\x80", "\xff",
		"caf\xc3\xa9", "\xe2\x82\xac",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!validate_wbo_id(bad[i], strlen(bad[i])),
			      "accepted '%s'", bad[i]);
	ck_assert(!validate_wbo_id(repeat(buf, 'x', WBO_ID_MAX + 1), WBO_ID_MAX + 1));
	ck_assert(!validate_wbo_id(repeat(buf, 'x', 100), 100));
	ck_assert(!validate_wbo_id(NULL, 0));
	ck_assert(!validate_wbo_id(NULL, 3));
	ck_assert(!validate_wbo_id("abc", 0));
	ck_assert(!validate_wbo_id("a\0b", 3));
	ck_assert(!validate_wbo_id("\0", 1));
	/* The length decides, not the NUL. */
	ck_assert(validate_wbo_id("ab/cd", 2));
}
END_TEST

/* ---- numbers ----------------------------------------------------------- */

START_TEST(test_sortindex)
{
	ck_assert(validate_sortindex(0));
	ck_assert(validate_sortindex(1));
	ck_assert(validate_sortindex(-1));
	ck_assert(validate_sortindex(999999999));
	ck_assert(validate_sortindex(-999999999));
	ck_assert(!validate_sortindex(1000000000));
	ck_assert(!validate_sortindex(-1000000000));
	ck_assert(!validate_sortindex(INT64_MAX));
	ck_assert(!validate_sortindex(INT64_MIN));
	ck_assert(!validate_sortindex(INT64_C(4294967296) + 5));
	ck_assert(!validate_sortindex((int64_t)INT32_MAX + 1));
}
END_TEST

START_TEST(test_ttl)
{
	ck_assert(validate_ttl(0));
	ck_assert(validate_ttl(1));
	ck_assert(validate_ttl(86400));
	ck_assert(validate_ttl(31536000));
	ck_assert(!validate_ttl(31536001));
	ck_assert(!validate_ttl(-1));
	ck_assert(!validate_ttl(INT64_MIN));
	ck_assert(!validate_ttl(INT64_MAX));
	ck_assert(!validate_ttl(INT64_C(4294967296)));
}
END_TEST

/* ---- e-mail ------------------------------------------------------------ */

START_TEST(test_email_good)
{
	static const char *const good[] = {
		"a@b.c", "john@example.com", "John.Smith+sync@mail.example.co.uk",
		"j\xc3\xb6hn@example.com", "user@xn--bcher-kva.example",
		"user@m\xc3\xbcller.de", "a_b-c@d-e.f", "x@1.2",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(validate_email(good[i], strlen(good[i])), "refused '%s'",
			      good[i]);
	/* 254 bytes is the maximum. */
	char buf[300];
	memset(buf, 'a', 254);
	memcpy(buf + 254 - 12, "@example.com", 12);
	ck_assert(validate_email(buf, 254));
	memset(buf, 'a', 255);
	memcpy(buf + 255 - 12, "@example.com", 12);
	ck_assert(!validate_email(buf, 255));
}
END_TEST

START_TEST(test_email_bad)
{
	static const char *const bad[] = {
		"", "a", "a@", "@", "@b.c", "a@b", "a@bc", "a@.bc", "a@bc.",
		"a@b.c.", "a@.b.c", "john.example.com", "a@@b.c", "a@b@c.d",
		"a b@c.d", "a@b c.d", " a@b.c", "a@b.c ", "a\t@b.c", "a@b.c\n",
		"a\x01@b.c", "a@b.c\x7f", "<a@b.c>", "a<@b.c", "a>@b.c",
		"\"a\"@b.c", "a\\b@c.d", "a,b@c.d", "a;b@c.d", "a@b.c,d@e.f",
		"j\xf6hn@example.com",          /* Latin-1, not UTF-8 */
		"a\xc0\xaf@b.c",               /* overlong */
		"a@b.c\xc3",                   /* truncated UTF-8 */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!validate_email(bad[i], strlen(bad[i])), "accepted '%s'",
			      bad[i]);
	ck_assert(!validate_email(NULL, 0));
	ck_assert(!validate_email(NULL, 5));
	ck_assert(!validate_email("a@b.c\0x", 7));
	ck_assert(!validate_email("a\0@b.c", 6));
	/* Only len bytes count. */
	ck_assert(validate_email("a@b.c d", 5));
}
END_TEST

/* ---- UTF-8 ------------------------------------------------------------- */

struct utf8_case {
	const char *s;
	size_t len;
	const char *what;
};

#define U(lit, what) { lit, sizeof(lit) - 1, what }

START_TEST(test_utf8_good)
{
	static const struct utf8_case good[] = {
		U("", "empty"),
		U("plain ascii ~\x7f", "ascii incl DEL"),
		U("a\0b", "NUL is a valid code point"),
		U("\xc2\x80", "U+0080, smallest 2-byte"),
		U("\xc3\xa9", "U+00E9"),
		U("\xdf\xbf", "U+07FF, largest 2-byte"),
		U("\xe0\xa0\x80", "U+0800, smallest 3-byte"),
		U("\xe2\x82\xac", "U+20AC euro"),
		U("\xed\x9f\xbf", "U+D7FF, just below surrogates"),
		U("\xee\x80\x80", "U+E000, just above surrogates"),
		U("\xef\xbf\xbd", "U+FFFD"),
		U("\xef\xbf\xbf", "U+FFFF"),
		U("\xf0\x90\x80\x80", "U+10000, smallest 4-byte"),
		U("\xf0\x9f\x98\x80", "U+1F600"),
		U("\xf4\x8f\xbf\xbf", "U+10FFFF, largest"),
		U("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80!", "mixed"),
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(validate_utf8(good[i].s, good[i].len), "refused %s",
			      good[i].what);
}
END_TEST

START_TEST(test_utf8_bad)
{
	static const struct utf8_case bad[] = {
		/* lone continuation and invalid lead bytes */
		U("\x80", "lone continuation"),
		U("a\xbf", "lone continuation after ascii"),
		U("\xf8\x88\x80\x80\x80", "5-byte form"),
		U("\xfc\x84\x80\x80\x80\x80", "6-byte form"),
		U("\xfe", "FE"),
		U("\xff", "FF"),
		/* overlong */
		U("\xc0\x80", "overlong NUL"),
		U("\xc0\xaf", "overlong '/'"),
		U("\xc1\xbf", "overlong U+007F"),
		U("\xe0\x80\x80", "overlong 3-byte NUL"),
		U("\xe0\x80\xaf", "overlong 3-byte '/'"),
		U("\xe0\x9f\xbf", "overlong U+07FF"),
		U("\xf0\x80\x80\x80", "overlong 4-byte NUL"),
		U("\xf0\x8f\xbf\xbf", "overlong U+FFFF"),
		/* surrogates */
		U("\xed\xa0\x80", "U+D800"),
		U("\xed\xad\xbf", "U+DB7F"),
		U("\xed\xb0\x80", "U+DC00"),
		U("\xed\xbf\xbf", "U+DFFF"),
		U("\xed\xa0\xbd\xed\xb8\x80", "CESU-8 surrogate pair"),
		/* beyond U+10FFFF */
		U("\xf4\x90\x80\x80", "U+110000"),
		U("\xf5\x80\x80\x80", "F5 lead"),
		U("\xf7\xbf\xbf\xbf", "U+1FFFFF"),
		/* truncated */
		U("\xc3", "2-byte cut"),
		U("a\xc3", "2-byte cut at end"),
		U("\xe2\x82", "3-byte cut"),
		U("\xe2", "3-byte lead only"),
		U("\xf0\x9f\x98", "4-byte cut"),
		U("\xf0\x9f", "4-byte cut early"),
		U("\xf0", "4-byte lead only"),
		/* bad continuation */
		U("\xc3\x41", "ascii after 2-byte lead"),
		U("\xc3\xc3\xa9", "lead after lead"),
		U("\xe2\x82\x41", "ascii as third byte"),
		U("\xe2\x28\xa1", "ascii as second byte"),
		U("\xf0\x9f\x98\x41", "ascii as fourth byte"),
		U("\xc3\x00", "NUL as continuation"),
		U("\xe9t\xe9", "Latin-1"),
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!validate_utf8(bad[i].s, bad[i].len), "accepted %s",
			      bad[i].what);
	/* A sequence cut by the length, not by the string. */
	ck_assert(!validate_utf8("\xc3\xa9", 1));
	ck_assert(!validate_utf8("\xf0\x9f\x98\x80", 3));
	ck_assert(validate_utf8("a\xc3\xa9", 1));
}
END_TEST

/* Long, mostly ASCII text (the eight-bytes-at-a-time path): every offset
 * of a bad byte, a good character and a cut one. */
START_TEST(test_utf8_long_ascii)
{
	char text[48];
	for (size_t at = 0; at + 4 <= sizeof text; at++) {
		memset(text, 'a', sizeof text);
		text[at] = (char)0xff;
		ck_assert_msg(!validate_utf8(text, sizeof text), "0xff at %zu", at);
		memcpy(text + at, "\xe2\x98\x83", 3); /* U+2603 */
		ck_assert_msg(validate_utf8(text, sizeof text), "U+2603 at %zu", at);
		ck_assert_msg(!validate_utf8(text, at + 2), "cut at %zu", at);
		text[at + 2] = 'a'; /* a lead byte without its last continuation */
		ck_assert_msg(!validate_utf8(text, sizeof text), "broken at %zu", at);
	}
	memset(text, 'a', sizeof text);
	ck_assert(validate_utf8(text, sizeof text));
	ck_assert(validate_utf8(text, 0));
}
END_TEST

/* The one rule for names as given (account_name.h). */
START_TEST(test_account_name)
{
	char out[USERNAME_MAX + 1], hashed[33];
	ck_assert(account_name_normalise("Alice.B-2", 9, out));
	ck_assert_str_eq(out, "alice.b-2");
	/* Only len bytes count. */
	ck_assert(account_name_normalise("BobXYZ", 3, out));
	ck_assert_str_eq(out, "bob");
	ck_assert(!account_name_normalise("", 0, out));
	ck_assert_str_eq(out, "");
	ck_assert(!account_name_normalise("bad name", 8, out));
	ck_assert(!account_name_normalise("a/b", 3, out));
	ck_assert(!account_name_normalise("a23456789012345678901234567890123", 33, out));
	/* An e-mail login is its hashed name, in any case, valid or not. */
	auth_email_to_username("foo@example.com", 15, hashed);
	ck_assert(account_name_normalise("Foo@Example.COM", 15, out));
	ck_assert_str_eq(out, hashed);
	ck_assert_uint_eq(strlen(out), 32);
	ck_assert(account_name_is_email("me@localhost", 12));
	ck_assert(account_name_normalise("me@localhost", 12, out));
	ck_assert_uint_eq(strlen(out), 32);
	ck_assert(!account_name_is_email("alice", 5));
	ck_assert(account_name_is_hashed(hashed));
	ck_assert(!account_name_is_hashed("alice"));
	ck_assert(!account_name_is_hashed("oz7hj2vxbaoedyfygyyfcejz2eycjft1"));
	/* Longer than a Basic login can be: no account can be reached. */
	char long_mail[AUTH_USER_MAX + 2];
	memset(long_mail, 'a', sizeof long_mail);
	long_mail[1] = '@';
	ck_assert(!account_name_normalise(long_mail, AUTH_USER_MAX + 1, out));
	ck_assert(account_name_normalise(long_mail, AUTH_USER_MAX, out));
}
END_TEST

Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");

	TCase *tc = tcase_create("names");
	tcase_add_test(tc, test_username);
	tcase_add_test(tc, test_collection);
	tcase_add_test(tc, test_wbo_id_good);
	tcase_add_test(tc, test_wbo_id_bad);
	tcase_add_test(tc, test_account_name);
	suite_add_tcase(s, tc);

	tc = tcase_create("numbers");
	tcase_add_test(tc, test_sortindex);
	tcase_add_test(tc, test_ttl);
	suite_add_tcase(s, tc);

	tc = tcase_create("email");
	tcase_add_test(tc, test_email_good);
	tcase_add_test(tc, test_email_bad);
	suite_add_tcase(s, tc);

	tc = tcase_create("utf8");
	tcase_add_test(tc, test_utf8_good);
	tcase_add_test(tc, test_utf8_bad);
	tcase_add_test(tc, test_utf8_long_ascii);
	suite_add_tcase(s, tc);

	return s;
}
