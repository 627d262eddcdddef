/* captcha_token.c - sealed CAPTCHA challenges: make one, check an answer. */
#include "captcha_token.h"

#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "config.h"
#include "log.h"
#include "util.h"

#define MAC_LEN 32
#define EXPIRY_OFF CAPTCHA_NONCE_LEN
#define ANSWER_OFF (EXPIRY_OFF + 8)
#define TAG_OFF (ANSWER_OFF + CAPTCHA_ANSWER_LEN)
#define TAG_LEN 16

_Static_assert(TAG_OFF + TAG_LEN == CAPTCHA_TOKEN_RAW_LEN, "token layout");
_Static_assert((CAPTCHA_TOKEN_RAW_LEN * 8 + 5) / 6 == CAPTCHA_TOKEN_LEN,
	       "base64url length");

static const char b64url[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* ---- small helpers ---------------------------------------------------- */

/* base64url without padding; out needs 4 * ceil(len / 3) + 1 bytes. */
static size_t b64url_encode(const unsigned char *in, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		size_t n = len - i < 3 ? len - i : 3;
		if (n > 1)
			v |= (uint32_t)in[i + 1] << 8;
		if (n > 2)
			v |= in[i + 2];
		out[o++] = b64url[(v >> 18) & 63];
		out[o++] = b64url[(v >> 12) & 63];
		if (n > 1)
			out[o++] = b64url[(v >> 6) & 63];
		if (n > 2)
			out[o++] = b64url[v & 63];
	}
	out[o] = '\0';
	return o;
}

static int b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/*
 * Strict base64url decode (no padding, no blanks, unused bits zero) of
 * exactly out_len bytes. Returns 0 or -1.
 */
static int b64url_decode_exact(const char *in, size_t len, unsigned char *out,
			       size_t out_len)
{
	if ((out_len * 8 + 5) / 6 != len)
		return -1;
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64url_value(in[i]);
		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return (o == out_len && acc == 0) ? 0 : -1;
}

/* A uniform random integer in [0, n), n <= 256, without modulo bias. */
static int random_below(unsigned n, unsigned *out)
{
	unsigned limit = 256 - 256 % n;
	for (int tries = 0; tries < 64; tries++) {
		unsigned char b;
		if (RAND_bytes(&b, 1) != 1)
			return -1;
		if (b < limit) {
			*out = b % n;
			return 0;
		}
	}
	return -1;
}


static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (unsigned char)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

static int hmac_sha256(const void *key, size_t key_len, const unsigned char *msg,
		       size_t msg_len, unsigned char out[MAC_LEN])
{
	unsigned int out_len = 0;
	if (key_len > INT32_MAX)
		return -1;
	if (HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, out, &out_len) ==
		    NULL ||
	    out_len != MAC_LEN)
		return -1;
	return 0;
}

/* k_enc and k_mac from the secret (see captcha.h). */
static int derive_keys(const char *secret, unsigned char k_enc[MAC_LEN],
		       unsigned char k_mac[MAC_LEN])
{
	static const char enc_label[] = "weave-captcha-enc";
	static const char mac_label[] = "weave-captcha-mac";
	size_t slen = strlen(secret);
	if (hmac_sha256(secret, slen, (const unsigned char *)enc_label,
			sizeof enc_label - 1, k_enc) < 0 ||
	    hmac_sha256(secret, slen, (const unsigned char *)mac_label,
			sizeof mac_label - 1, k_mac) < 0)
		return -1;
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

static char ascii_upper(char c)
{
	return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
}

/* ---- tokens ----------------------------------------------------------- */

int captcha_new(const struct config *cfg, int64_t now, char *token,
		size_t token_cap, char *answer, size_t answer_cap)
{
	unsigned char raw[CAPTCHA_TOKEN_RAW_LEN];
	unsigned char k_enc[MAC_LEN], k_mac[MAC_LEN], mac[MAC_LEN];
	int rc = -1;

	if (cfg->captcha_secret == NULL || cfg->captcha_secret[0] == '\0') {
		log_error("captcha: captcha_secret is not set in weave.conf; set "
			  "captcha_secret to a long random string (or captcha = off)");
		return -1;
	}
	if (token_cap < CAPTCHA_TOKEN_SIZE || answer_cap < CAPTCHA_ANSWER_LEN + 1) {
		log_error("captcha: buffer too small for a challenge");
		return -1;
	}
	if (derive_keys(cfg->captcha_secret, k_enc, k_mac) < 0)
		goto fail;

	for (size_t i = 0; i < CAPTCHA_ANSWER_LEN; i++) {
		unsigned k;
		if (random_below(sizeof CAPTCHA_ALPHABET - 1, &k) < 0)
			goto fail;
		answer[i] = CAPTCHA_ALPHABET[k];
	}
	answer[CAPTCHA_ANSWER_LEN] = '\0';

	if (RAND_bytes(raw, CAPTCHA_NONCE_LEN) != 1)
		goto fail;
	put_be64(raw + EXPIRY_OFF, (uint64_t)(now + cfg->captcha_lifetime));
	if (hmac_sha256(k_enc, MAC_LEN, raw, ANSWER_OFF, mac) < 0)
		goto fail;
	for (size_t i = 0; i < CAPTCHA_ANSWER_LEN; i++)
		raw[ANSWER_OFF + i] = (unsigned char)answer[i] ^ mac[i];
	if (hmac_sha256(k_mac, MAC_LEN, raw, TAG_OFF, mac) < 0)
		goto fail;
	memcpy(raw + TAG_OFF, mac, TAG_LEN);
	b64url_encode(raw, sizeof raw, token);
	rc = 0;
fail:
	if (rc < 0) {
		log_error("captcha: could not make a challenge (random generator "
			  "or HMAC failed)");
		OPENSSL_cleanse(answer, answer_cap);
	}
	OPENSSL_cleanse(k_enc, sizeof k_enc);
	OPENSSL_cleanse(k_mac, sizeof k_mac);
	OPENSSL_cleanse(mac, sizeof mac);
	OPENSSL_cleanse(raw, sizeof raw);
	return rc;
}

/*
 * The typed answer: surrounding blanks ignored, bounded, any case. false
 * when it cannot be an answer (too long, wrong length).
 */
static bool read_response(const char *response, char given[CAPTCHA_ANSWER_LEN])
{
	size_t rlen = strnlen(response, CAPTCHA_RESPONSE_MAX + 1);
	if (rlen > CAPTCHA_RESPONSE_MAX)
		return false;
	const char *r = response;
	while (rlen > 0 && is_blank(*r)) {
		r++;
		rlen--;
	}
	while (rlen > 0 && is_blank(r[rlen - 1]))
		rlen--;
	if (rlen != CAPTCHA_ANSWER_LEN)
		return false;
	for (size_t i = 0; i < CAPTCHA_ANSWER_LEN; i++)
		given[i] = ascii_upper(r[i]);
	return true;
}

/* given against the answer sealed in raw under k_enc, in constant time. */
static enum captcha_verdict compare_answer(const unsigned char *k_enc,
					   const unsigned char *raw,
					   const char *given)
{
	unsigned char mac[MAC_LEN];
	char answer[CAPTCHA_ANSWER_LEN];
	enum captcha_verdict v = CAPTCHA_UNAVAILABLE;
	if (hmac_sha256(k_enc, MAC_LEN, raw, ANSWER_OFF, mac) == 0) {
		for (size_t i = 0; i < CAPTCHA_ANSWER_LEN; i++)
			answer[i] = (char)(raw[ANSWER_OFF + i] ^ mac[i]);
		v = bytes_equal_const_time(answer, given, CAPTCHA_ANSWER_LEN)
			    ? CAPTCHA_OK
			    : CAPTCHA_WRONG;
	}
	OPENSSL_cleanse(mac, sizeof mac);
	OPENSSL_cleanse(answer, sizeof answer);
	return v;
}

enum captcha_verdict captcha_token_check(const char *secret,
					 const char *challenge,
					 const char *response, int64_t now,
					 unsigned char *nonce_out,
					 int64_t *expires_out)
{
	unsigned char raw[CAPTCHA_TOKEN_RAW_LEN];
	unsigned char k_enc[MAC_LEN], k_mac[MAC_LEN], mac[MAC_LEN];
	char given[CAPTCHA_ANSWER_LEN];
	enum captcha_verdict v = CAPTCHA_MALFORMED;

	if (expires_out != NULL)
		*expires_out = 0;
	if (challenge == NULL || challenge[0] == '\0' || response == NULL ||
	    response[0] == '\0')
		return CAPTCHA_WRONG;
	if (secret == NULL || secret[0] == '\0')
		return CAPTCHA_UNAVAILABLE;
	size_t clen = strnlen(challenge, CAPTCHA_TOKEN_LEN + 1);
	if (clen != CAPTCHA_TOKEN_LEN ||
	    b64url_decode_exact(challenge, clen, raw, sizeof raw) < 0)
		return CAPTCHA_MALFORMED;

	if (derive_keys(secret, k_enc, k_mac) < 0 ||
	    hmac_sha256(k_mac, MAC_LEN, raw, TAG_OFF, mac) < 0) {
		v = CAPTCHA_UNAVAILABLE;
		goto done;
	}
	if (CRYPTO_memcmp(mac, raw + TAG_OFF, TAG_LEN) != 0) {
		v = CAPTCHA_MALFORMED;
		goto done;
	}
	uint64_t expires = get_be64(raw + EXPIRY_OFF);
	if (expires > INT64_MAX || now < 0 || (uint64_t)now > expires) {
		v = CAPTCHA_EXPIRED;
		goto done;
	}
	/* Ours and alive: the caller spends it whatever the answer. */
	if (nonce_out != NULL)
		memcpy(nonce_out, raw, CAPTCHA_NONCE_LEN);
	if (expires_out != NULL)
		*expires_out = (int64_t)expires;

	if (!read_response(response, given))
		v = CAPTCHA_WRONG;
	else
		v = compare_answer(k_enc, raw, given);
done:
	OPENSSL_cleanse(k_enc, sizeof k_enc);
	OPENSSL_cleanse(k_mac, sizeof k_mac);
	OPENSSL_cleanse(mac, sizeof mac);
	OPENSSL_cleanse(given, sizeof given);
	OPENSSL_cleanse(raw, sizeof raw);
	return v;
}

const char *captcha_verdict_text(enum captcha_verdict v)
{
	static const char *const text[CAPTCHA__MAX] = {
		[CAPTCHA_OK] = "ok",
		[CAPTCHA_WRONG] = "wrong",
		[CAPTCHA_EXPIRED] = "expired",
		[CAPTCHA_REPLAYED] = "replayed",
		[CAPTCHA_MALFORMED] = "malformed",
		[CAPTCHA_UNAVAILABLE] = "unavailable",
	};
	if ((unsigned)v >= CAPTCHA__MAX)
		return "unknown";
	return text[v];
}

