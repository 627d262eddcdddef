/* check_captcha.c - unit tests for captcha_token.c and captcha_picture.c. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "captcha.h"
#include "captcha_picture.h"
#include "check_suites.h"
#include "config.h"

/* Declared here too until check_suites.h lists it (same prototype). */
Suite *captcha_suite(void);

#define SECRET "test-secret"
#define NOW INT64_C(1700000000)

/*
 * A token built outside the server from the format in captcha.h:
 * secret "test-secret", nonce 00 01 .. 0f, expiry 2000000000, answer
 * "ABC234". Computed with
 *   /usr/bin/python3 -c 'import hmac,hashlib,struct,base64
 *   s=b"test-secret"; h=lambda k,m: hmac.new(k,m,hashlib.sha256).digest()
 *   ke=h(s,b"weave-captcha-enc"); km=h(s,b"weave-captcha-mac")
 *   head=bytes(range(16))+struct.pack(">Q",2000000000)
 *   b=head+bytes(x^y for x,y in zip(b"ABC234",h(ke,head)))
 *   print(base64.urlsafe_b64encode(b+h(km,b)[:16]).decode().rstrip("="))'
 */
#define KNOWN_TOKEN "AAECAwQFBgcICQoLDA0ODwAAAAB3NZQAmbKAnEXx0IORou_Mdfjr2Zqh3Pu5pg"
#define KNOWN_ANSWER "ABC234"
#define KNOWN_EXPIRY INT64_C(2000000000)

static struct config cfg;

static void setup(void)
{
	config_defaults(&cfg);
	cfg.captcha_secret = strdup(SECRET);
	cfg.captcha_lifetime = 600;
}

static void teardown(void)
{
	config_free(&cfg);
}

/* A fresh token and its answer from captcha_new() at NOW. */
static void new_token(char *token, char *answer)
{
	ck_assert_int_eq(captcha_new(&cfg, NOW, token, CAPTCHA_TOKEN_SIZE, answer,
				     CAPTCHA_ANSWER_LEN + 1),
			 0);
	ck_assert_uint_eq(strlen(token), CAPTCHA_TOKEN_LEN);
	ck_assert_uint_eq(strlen(answer), CAPTCHA_ANSWER_LEN);
}

static enum captcha_verdict check(const char *token, const char *response,
				  int64_t now)
{
	return captcha_token_check(SECRET, token, response, now, NULL, NULL);
}

/* base64url without padding → bytes, through OpenSSL's standard decoder. */
static void decode_token(const char *token, unsigned char raw[48])
{
	char std[CAPTCHA_TOKEN_LEN + 3];
	size_t n = strlen(token);
	ck_assert_uint_eq(n, CAPTCHA_TOKEN_LEN);
	for (size_t i = 0; i < n; i++)
		std[i] = token[i] == '-' ? '+' : token[i] == '_' ? '/' : token[i];
	std[n] = '=';
	std[n + 1] = '=';
	std[n + 2] = '\0';
	ck_assert_int_eq(EVP_DecodeBlock(raw, (const unsigned char *)std,
					 (int)(n + 2)),
			 48);
}

static void hmac256(const void *key, size_t klen, const void *msg, size_t mlen,
		    unsigned char out[32])
{
	unsigned int len = 0;
	ck_assert_ptr_nonnull(HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out,
				   &len));
	ck_assert_uint_eq(len, 32);
}

/* ---- format ------------------------------------------------------------ */

START_TEST(test_known_token)
{
	unsigned char nonce[CAPTCHA_NONCE_LEN];
	int64_t expires = 0;
	ck_assert_int_eq(captcha_token_check(SECRET, KNOWN_TOKEN, KNOWN_ANSWER, NOW,
					     nonce, &expires),
			 CAPTCHA_OK);
	ck_assert(expires == KNOWN_EXPIRY);
	for (int i = 0; i < CAPTCHA_NONCE_LEN; i++)
		ck_assert_int_eq(nonce[i], i);
	ck_assert_int_eq(check(KNOWN_TOKEN, "abc234", NOW), CAPTCHA_OK);
	ck_assert_int_eq(check(KNOWN_TOKEN, "ABC235", NOW), CAPTCHA_WRONG);
	/* A wrong answer to an authentic challenge still names it, so that
	 * captcha_verify() spends it; an expired or forged one does not. */
	memset(nonce, 0xff, sizeof nonce);
	expires = 0;
	ck_assert_int_eq(captcha_token_check(SECRET, KNOWN_TOKEN, "ABC235", NOW,
					     nonce, &expires),
			 CAPTCHA_WRONG);
	ck_assert(expires == KNOWN_EXPIRY);
	ck_assert_int_eq(nonce[15], 15);
	ck_assert_int_eq(captcha_token_check(SECRET, KNOWN_TOKEN, "ABC235",
					     KNOWN_EXPIRY + 1, nonce, &expires),
			 CAPTCHA_EXPIRED);
	ck_assert(expires == 0);
	ck_assert_int_eq(captcha_token_check("other-secret", KNOWN_TOKEN, KNOWN_ANSWER,
					     NOW, nonce, &expires),
			 CAPTCHA_MALFORMED);
	ck_assert(expires == 0);
	ck_assert_int_eq(check(KNOWN_TOKEN, KNOWN_ANSWER, KNOWN_EXPIRY), CAPTCHA_OK);
	ck_assert_int_eq(check(KNOWN_TOKEN, KNOWN_ANSWER, KNOWN_EXPIRY + 1),
			 CAPTCHA_EXPIRED);
	ck_assert_int_eq(captcha_token_check("other-secret", KNOWN_TOKEN,
					     KNOWN_ANSWER, NOW, NULL, NULL),
			 CAPTCHA_MALFORMED);
}
END_TEST

/* Decrypt a fresh token by the documented format, as the e2e tests do. */
START_TEST(test_round_trip_format)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	unsigned char raw[48], k_enc[32], k_mac[32], mac[32];
	new_token(token, answer);
	decode_token(token, raw);

	hmac256(SECRET, strlen(SECRET), "weave-captcha-enc", 17, k_enc);
	hmac256(SECRET, strlen(SECRET), "weave-captcha-mac", 17, k_mac);
	hmac256(k_mac, 32, raw, 30, mac);
	ck_assert_int_eq(memcmp(mac, raw + 30, 16), 0);

	int64_t expiry = 0;
	for (int i = 16; i < 24; i++)
		expiry = expiry * 256 + raw[i];
	ck_assert(expiry == NOW + 600);

	hmac256(k_enc, 32, raw, 24, mac);
	char plain[CAPTCHA_ANSWER_LEN + 1];
	for (int i = 0; i < CAPTCHA_ANSWER_LEN; i++)
		plain[i] = (char)(raw[24 + i] ^ mac[i]);
	plain[CAPTCHA_ANSWER_LEN] = '\0';
	ck_assert_str_eq(plain, answer);

	unsigned char nonce[CAPTCHA_NONCE_LEN];
	int64_t expires = 0;
	ck_assert_int_eq(captcha_token_check(SECRET, token, plain, NOW + 10, nonce,
					     &expires),
			 CAPTCHA_OK);
	ck_assert_int_eq(memcmp(nonce, raw, CAPTCHA_NONCE_LEN), 0);
	ck_assert(expires == NOW + 600);
}
END_TEST

START_TEST(test_answer_alphabet)
{
	for (int round = 0; round < 200; round++) {
		char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
		new_token(token, answer);
		for (int i = 0; i < CAPTCHA_ANSWER_LEN; i++) {
			ck_assert_ptr_nonnull(strchr(CAPTCHA_ALPHABET, answer[i]));
			ck_assert_ptr_null(strchr("0O1IL", answer[i]));
		}
		for (int i = 0; i < CAPTCHA_TOKEN_LEN; i++)
			ck_assert_ptr_nonnull(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ"
						     "abcdefghijklmnopqrstuvwxyz"
						     "0123456789-_",
						     token[i]));
	}
}
END_TEST

START_TEST(test_tokens_differ)
{
	char t1[CAPTCHA_TOKEN_SIZE], t2[CAPTCHA_TOKEN_SIZE];
	char a1[CAPTCHA_ANSWER_LEN + 1], a2[CAPTCHA_ANSWER_LEN + 1];
	new_token(t1, a1);
	new_token(t2, a2);
	ck_assert_str_ne(t1, t2);
}
END_TEST

/* ---- answers ----------------------------------------------------------- */

START_TEST(test_answer_case_and_blanks)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	char lower[CAPTCHA_ANSWER_LEN + 1], padded[32];
	new_token(token, answer);
	ck_assert_int_eq(check(token, answer, NOW), CAPTCHA_OK);
	for (int i = 0; i <= CAPTCHA_ANSWER_LEN; i++)
		lower[i] = (answer[i] >= 'A' && answer[i] <= 'Z')
				   ? (char)(answer[i] - 'A' + 'a')
				   : answer[i];
	ck_assert_int_eq(check(token, lower, NOW), CAPTCHA_OK);
	ck_assert_uint_lt(strlen(answer) + 6, sizeof padded);
	memcpy(padded, " \t ", 3);
	memcpy(padded + 3, lower, CAPTCHA_ANSWER_LEN);
	memcpy(padded + 3 + CAPTCHA_ANSWER_LEN, " \r\n", 4);
	ck_assert_int_eq(check(token, padded, NOW), CAPTCHA_OK);
}
END_TEST

START_TEST(test_answer_wrong)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	char wrong[CAPTCHA_ANSWER_LEN + 2];
	new_token(token, answer);

	memcpy(wrong, answer, sizeof answer);
	wrong[2] = answer[2] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(check(token, wrong, NOW), CAPTCHA_WRONG);
	/* Too short, too long, inner blank. */
	memcpy(wrong, answer, sizeof answer);
	wrong[5] = '\0';
	ck_assert_int_eq(check(token, wrong, NOW), CAPTCHA_WRONG);
	memcpy(wrong, answer, CAPTCHA_ANSWER_LEN);
	wrong[6] = 'X';
	wrong[7] = '\0';
	ck_assert_int_eq(check(token, wrong, NOW), CAPTCHA_WRONG);
	memcpy(wrong, answer, CAPTCHA_ANSWER_LEN);
	wrong[3] = ' ';
	wrong[6] = '\0';
	ck_assert_int_eq(check(token, wrong, NOW), CAPTCHA_WRONG);
	ck_assert_int_eq(check(token, "      ", NOW), CAPTCHA_WRONG);
}
END_TEST

START_TEST(test_empty_is_wrong)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	new_token(token, answer);
	ck_assert_int_eq(check(token, "", NOW), CAPTCHA_WRONG);
	ck_assert_int_eq(check("", answer, NOW), CAPTCHA_WRONG);
	ck_assert_int_eq(check(NULL, answer, NOW), CAPTCHA_WRONG);
	ck_assert_int_eq(check(token, NULL, NOW), CAPTCHA_WRONG);
	/* captcha_verify() answers these before any database or network step. */
	ck_assert_int_eq(captcha_verify(&cfg, "", answer, "127.0.0.1", NOW),
			 CAPTCHA_WRONG);
	ck_assert_int_eq(captcha_verify(&cfg, token, "", NULL, NOW), CAPTCHA_WRONG);
}
END_TEST

/* ---- hostile tokens ------------------------------------------------------ */

START_TEST(test_expired)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	new_token(token, answer);
	ck_assert_int_eq(check(token, answer, NOW + 600), CAPTCHA_OK);
	ck_assert_int_eq(check(token, answer, NOW + 601), CAPTCHA_EXPIRED);
	ck_assert_int_eq(check(token, answer, NOW + 86400 * 365), CAPTCHA_EXPIRED);
	ck_assert_int_eq(check(token, answer, -1), CAPTCHA_EXPIRED);
}
END_TEST

START_TEST(test_tampered_byte)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	new_token(token, answer);
	/* Every position, including the expiry and the sealed answer. */
	for (int i = 0; i < CAPTCHA_TOKEN_LEN; i++) {
		char t[CAPTCHA_TOKEN_SIZE];
		memcpy(t, token, sizeof t);
		t[i] = t[i] == 'A' ? 'B' : 'A';
		ck_assert_msg(check(t, answer, NOW) == CAPTCHA_MALFORMED,
			      "tampered position %d accepted", i);
	}
}
END_TEST

START_TEST(test_malformed_base64)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	char t[CAPTCHA_TOKEN_SIZE + 4];
	new_token(token, answer);

	static const char bad_chars[] = "+/=.! \n%";
	for (size_t k = 0; k < sizeof bad_chars - 1; k++) {
		memcpy(t, token, CAPTCHA_TOKEN_SIZE);
		t[10] = bad_chars[k];
		ck_assert_int_eq(check(t, answer, NOW), CAPTCHA_MALFORMED);
	}
	/* Standard padding appended. */
	memcpy(t, token, CAPTCHA_TOKEN_LEN);
	memcpy(t + CAPTCHA_TOKEN_LEN, "==", 3);
	ck_assert_int_eq(check(t, answer, NOW), CAPTCHA_MALFORMED);
	/* One character short. */
	memcpy(t, token, CAPTCHA_TOKEN_SIZE);
	t[CAPTCHA_TOKEN_LEN - 1] = '\0';
	ck_assert_int_eq(check(t, answer, NOW), CAPTCHA_MALFORMED);
	/* Non-canonical: the last character's 4 unused bits set. */
	memcpy(t, token, CAPTCHA_TOKEN_SIZE);
	t[CAPTCHA_TOKEN_LEN - 1] = token[CAPTCHA_TOKEN_LEN - 1] == 'P' ? 'Q' : 'P';
	ck_assert_int_eq(check(t, answer, NOW), CAPTCHA_MALFORMED);
	ck_assert_int_eq(check("not a token", answer, NOW), CAPTCHA_MALFORMED);
	ck_assert_int_eq(check("AAAA", answer, NOW), CAPTCHA_MALFORMED);
}
END_TEST

START_TEST(test_overlong)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	new_token(token, answer);

	size_t big = 1 << 20;
	char *long_token = malloc(big + 1);
	ck_assert_ptr_nonnull(long_token);
	for (size_t i = 0; i < big; i++)
		long_token[i] = token[i % CAPTCHA_TOKEN_LEN];
	long_token[big] = '\0';
	ck_assert_int_eq(check(long_token, answer, NOW), CAPTCHA_MALFORMED);
	/* The token plus one more character. */
	memcpy(long_token, token, CAPTCHA_TOKEN_LEN);
	long_token[CAPTCHA_TOKEN_LEN] = 'A';
	long_token[CAPTCHA_TOKEN_LEN + 1] = '\0';
	ck_assert_int_eq(check(long_token, answer, NOW), CAPTCHA_MALFORMED);

	/* A response of the answer padded with a megabyte of blanks. */
	memset(long_token, ' ', big);
	memcpy(long_token + big / 2, answer, CAPTCHA_ANSWER_LEN);
	ck_assert_int_eq(check(token, long_token, NOW), CAPTCHA_WRONG);
	free(long_token);
}
END_TEST

START_TEST(test_no_secret)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	new_token(token, answer);
	ck_assert_int_eq(captcha_token_check(NULL, token, answer, NOW, NULL, NULL),
			 CAPTCHA_UNAVAILABLE);
	ck_assert_int_eq(captcha_token_check("", token, answer, NOW, NULL, NULL),
			 CAPTCHA_UNAVAILABLE);

	free(cfg.captcha_secret);
	cfg.captcha_secret = NULL;
	ck_assert_int_eq(captcha_new(&cfg, NOW, token, sizeof token, answer,
				     sizeof answer),
			 -1);
	ck_assert_int_eq(captcha_verify(&cfg, token, "ABCDEF", NULL, NOW),
			 CAPTCHA_UNAVAILABLE);
}
END_TEST

START_TEST(test_small_buffers)
{
	char token[CAPTCHA_TOKEN_SIZE], answer[CAPTCHA_ANSWER_LEN + 1];
	ck_assert_int_eq(captcha_new(&cfg, NOW, token, CAPTCHA_TOKEN_LEN, answer,
				     sizeof answer),
			 -1);
	ck_assert_int_eq(captcha_new(&cfg, NOW, token, sizeof token, answer,
				     CAPTCHA_ANSWER_LEN),
			 -1);
}
END_TEST

START_TEST(test_verdict_text)
{
	for (int v = 0; v < CAPTCHA__MAX; v++) {
		const char *t = captcha_verdict_text((enum captcha_verdict)v);
		ck_assert_ptr_nonnull(t);
		ck_assert_str_ne(t, "unknown");
	}
	ck_assert_str_eq(captcha_verdict_text(CAPTCHA_OK), "ok");
	ck_assert_str_eq(captcha_verdict_text(CAPTCHA__MAX), "unknown");
}
END_TEST

/* ---- picture ------------------------------------------------------------ */

START_TEST(test_png_magic)
{
	static const unsigned char magic[8] = { 0x89, 'P', 'N', 'G', '\r', '\n',
						0x1a, '\n' };
	size_t len = 0;
	unsigned char *png = captcha_image_png("AB2C3D", &len);
	ck_assert_ptr_nonnull(png);
	ck_assert_uint_gt(len, 100);
	ck_assert_int_eq(memcmp(png, magic, sizeof magic), 0);
	/* IHDR: 220 x 70. */
	ck_assert_int_eq(memcmp(png + 12, "IHDR", 4), 0);
	ck_assert_int_eq(png[16] << 24 | png[17] << 16 | png[18] << 8 | png[19], 220);
	ck_assert_int_eq(png[20] << 24 | png[21] << 16 | png[22] << 8 | png[23], 70);
	captcha_image_free(png);

	ck_assert_ptr_null(captcha_image_png("", &len));
	ck_assert_uint_eq(len, 0);
}
END_TEST

Suite *captcha_suite(void)
{
	Suite *s = suite_create("captcha");
	TCase *tc = tcase_create("token");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_known_token);
	tcase_add_test(tc, test_round_trip_format);
	tcase_add_test(tc, test_answer_alphabet);
	tcase_add_test(tc, test_tokens_differ);
	tcase_add_test(tc, test_answer_case_and_blanks);
	tcase_add_test(tc, test_answer_wrong);
	tcase_add_test(tc, test_empty_is_wrong);
	tcase_add_test(tc, test_expired);
	tcase_add_test(tc, test_tampered_byte);
	tcase_add_test(tc, test_malformed_base64);
	tcase_add_test(tc, test_overlong);
	tcase_add_test(tc, test_no_secret);
	tcase_add_test(tc, test_small_buffers);
	tcase_add_test(tc, test_verdict_text);
	suite_add_tcase(s, tc);

	TCase *pic = tcase_create("picture");
	tcase_add_test(pic, test_png_magic);
	suite_add_tcase(s, pic);
	return s;
}
