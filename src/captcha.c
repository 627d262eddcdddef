/* captcha.c - captcha page, challenge tokens, picture and verification. */
#include "captcha.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <gd.h>
#include <gdfontg.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "buf.h"
#include "config.h"
#include "db_captcha.h"
#include "log.h"
#include "util.h"

#define MAC_LEN 32
#define EXPIRY_OFF CAPTCHA_NONCE_LEN
#define ANSWER_OFF (EXPIRY_OFF + 8)
#define TAG_OFF (ANSWER_OFF + CAPTCHA_ANSWER_LEN)
#define TAG_LEN 16

#define VERIFY_TIMEOUT_SECONDS 10L
#define VERIFY_REPLY_MAX 4096
#define PAGE_MAX (256u * 1024)

/* Picture geometry: gdFontGiant glyphs (9x15) drawn 3x, then tilted. */
#define IMG_W 220
#define IMG_H 70
#define GLYPH_SCALE 3

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

/* Non-cryptographic jitter for the picture; falls back to 0. */
static int jitter(unsigned n)
{
	unsigned v = 0;
	if (n > 1 && random_below(n > 256 ? 256 : n, &v) < 0)
		v = 0;
	return (int)v;
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

enum captcha_verdict captcha_token_check(const char *secret,
					 const char *challenge,
					 const char *response, int64_t now,
					 unsigned char *nonce_out,
					 int64_t *expires_out)
{
	unsigned char raw[CAPTCHA_TOKEN_RAW_LEN];
	unsigned char k_enc[MAC_LEN], k_mac[MAC_LEN], mac[MAC_LEN];
	char answer[CAPTCHA_ANSWER_LEN];
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

	/* The response: surrounding blanks ignored, bounded, any case. */
	size_t rlen = strnlen(response, CAPTCHA_RESPONSE_MAX + 1);
	if (rlen > CAPTCHA_RESPONSE_MAX) {
		v = CAPTCHA_WRONG;
		goto done;
	}
	const char *r = response;
	while (rlen > 0 && is_blank(*r)) {
		r++;
		rlen--;
	}
	while (rlen > 0 && is_blank(r[rlen - 1]))
		rlen--;
	if (rlen != CAPTCHA_ANSWER_LEN) {
		v = CAPTCHA_WRONG;
		goto done;
	}
	for (size_t i = 0; i < CAPTCHA_ANSWER_LEN; i++)
		given[i] = ascii_upper(r[i]);

	if (hmac_sha256(k_enc, MAC_LEN, raw, ANSWER_OFF, mac) < 0) {
		v = CAPTCHA_UNAVAILABLE;
		goto done;
	}
	for (size_t i = 0; i < CAPTCHA_ANSWER_LEN; i++)
		answer[i] = (char)(raw[ANSWER_OFF + i] ^ mac[i]);
	if (!bytes_equal_const_time(answer, given, CAPTCHA_ANSWER_LEN)) {
		v = CAPTCHA_WRONG;
		goto done;
	}
	v = CAPTCHA_OK;
done:
	OPENSSL_cleanse(k_enc, sizeof k_enc);
	OPENSSL_cleanse(k_mac, sizeof k_mac);
	OPENSSL_cleanse(mac, sizeof mac);
	OPENSSL_cleanse(answer, sizeof answer);
	OPENSSL_cleanse(given, sizeof given);
	OPENSSL_cleanse(raw, sizeof raw);
	return v;
}

/* ---- verification ----------------------------------------------------- */

static size_t collect_reply(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct buf *b = ctx;
	size_t n = size * nmemb;
	/* Only the first line matters: keep what fits, drop the rest. */
	size_t room = b->len < VERIFY_REPLY_MAX ? VERIFY_REPLY_MAX - b->len : 0;
	buf_append(b, data, n < room ? n : room);
	return n;
}

/* Append "&name=<escaped value>" (no '&' for the first field). */
static int add_field(CURL *curl, struct buf *body, const char *name,
		     const char *value)
{
	char *esc = curl_easy_escape(curl, value ? value : "", 0);
	if (esc == NULL)
		return -1;
	int rc = buf_printf(body, "%s%s=%s", body->len > 0 ? "&" : "", name, esc);
	OPENSSL_cleanse(esc, strlen(esc));
	curl_free(esc);
	return rc;
}

static enum captcha_verdict verify_remote(const struct config *cfg,
					  const char *challenge,
					  const char *response,
					  const char *remote_ip)
{
	static bool curl_ready;
	enum captcha_verdict v = CAPTCHA_UNAVAILABLE;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct buf body, reply;
	CURL *curl = NULL;
	long http_status = 0;

	buf_init(&body, 16384);
	buf_init(&reply, VERIFY_REPLY_MAX + 1);
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			log_error("captcha: libcurl failed to initialise");
			goto done;
		}
		curl_ready = true;
	}
	curl = curl_easy_init();
	if (curl == NULL) {
		log_error("captcha: libcurl failed to initialise");
		goto done;
	}
	if (cfg->captcha_private_key == NULL)
		log_warn("captcha: captcha_verify_url is set but captcha_private_key "
			 "is not");
	if (add_field(curl, &body, "privatekey", cfg->captcha_private_key) < 0 ||
	    add_field(curl, &body, "remoteip", remote_ip) < 0 ||
	    add_field(curl, &body, "challenge", challenge) < 0 ||
	    add_field(curl, &body, "response", response) < 0) {
		log_error("captcha: could not build the verifier request");
		goto done;
	}

	/* POSTFIELDS sends application/x-www-form-urlencoded. */
	curl_easy_setopt(curl, CURLOPT_URL, cfg->captcha_verify_url);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, VERIFY_TIMEOUT_SECONDS);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect_reply);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);

	CURLcode cc = curl_easy_perform(curl);
	if (cc != CURLE_OK) {
		log_error("captcha: verifier at captcha_verify_url unreachable: %s",
			  errbuf[0] != '\0' ? errbuf : curl_easy_strerror(cc));
		goto done;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
	if (http_status != 200) {
		log_error("captcha: verifier answered HTTP %ld", http_status);
		goto done;
	}

	const char *line = reply.data ? reply.data : "";
	size_t n = strcspn(line, "\n");
	size_t first = n;
	while (first > 0 && is_blank(line[first - 1]))
		first--;
	if (first == 4 && memcmp(line, "true", 4) == 0) {
		v = CAPTCHA_OK;
	} else if (first == 5 && memcmp(line, "false", 5) == 0) {
		const char *why = line[n] == '\n' ? line + n + 1 : "";
		size_t wlen = strcspn(why, "\r\n");
		log_info("captcha: verifier said false (%.*s)",
			 (int)(wlen > 64 ? 64 : wlen), why);
		v = CAPTCHA_WRONG;
	} else {
		log_error("captcha: verifier reply is neither true nor false");
	}
done:
	if (curl != NULL)
		curl_easy_cleanup(curl);
	buf_free_secret(&body);
	buf_free(&reply);
	return v;
}

enum captcha_verdict captcha_verify(const struct config *cfg,
				    const char *challenge, const char *response,
				    const char *remote_ip, int64_t now)
{
	unsigned char nonce[CAPTCHA_NONCE_LEN];
	int64_t expires = 0;

	if (challenge == NULL || challenge[0] == '\0' || response == NULL ||
	    response[0] == '\0')
		return CAPTCHA_WRONG;

	if (cfg->captcha_verify_url != NULL && cfg->captcha_verify_url[0] != '\0') {
		if (strnlen(challenge, CAPTCHA_CHALLENGE_MAX + 1) >
		    CAPTCHA_CHALLENGE_MAX)
			return CAPTCHA_MALFORMED;
		if (strnlen(response, CAPTCHA_RESPONSE_MAX + 1) >
		    CAPTCHA_RESPONSE_MAX)
			return CAPTCHA_WRONG;
		return verify_remote(cfg, challenge, response, remote_ip);
	}

	if (cfg->captcha_secret == NULL || cfg->captcha_secret[0] == '\0') {
		log_error("captcha: cannot verify: captcha_secret is not set in "
			  "weave.conf; set captcha_secret to a long random string");
		return CAPTCHA_UNAVAILABLE;
	}
	enum captcha_verdict v = captcha_token_check(cfg->captcha_secret, challenge,
						     response, now, nonce, &expires);
	if (expires == 0)
		return v; /* not one of ours, or expired: nothing to spend */

	/*
	 * One answer per challenge, right or wrong, as reCAPTCHA did: else a
	 * script could try answers against one picture for its whole life.
	 */
	enum db_status st = db_captcha_mark_used(nonce, sizeof nonce, expires, now);
	switch (st) {
	case DB_OK:
		return v;
	case DB_CONFLICT:
		return CAPTCHA_REPLAYED;
	default:
		log_error("captcha: cannot record the used challenge: %s",
			  db_status_text(st));
		return v == CAPTCHA_OK ? CAPTCHA_UNAVAILABLE : v;
	}
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

/* ---- picture ---------------------------------------------------------- */

static int random_colour(gdImagePtr im, int lo, int hi)
{
	unsigned span = (unsigned)(hi - lo + 1);
	return gdImageColorAllocate(im, lo + jitter(span), lo + jitter(span),
				    lo + jitter(span));
}

/* One glyph, scaled up on a transparent tile and tilted onto im. */
static int draw_glyph(gdImagePtr im, gdFontPtr font, char c, int cx, int cy)
{
	int w = font->w, h = font->h;
	int sw = w * GLYPH_SCALE, sh = h * GLYPH_SCALE;
	gdImagePtr small = gdImageCreateTrueColor(w, h);
	gdImagePtr big = gdImageCreateTrueColor(sw, sh);
	int rc = -1;

	if (small == NULL || big == NULL)
		goto done;
	gdImageAlphaBlending(small, 0);
	gdImageAlphaBlending(big, 0);
	gdImageSaveAlpha(big, 1);
	int clear = gdTrueColorAlpha(255, 255, 255, gdAlphaTransparent);
	gdImageFilledRectangle(small, 0, 0, w - 1, h - 1, clear);
	gdImageFilledRectangle(big, 0, 0, sw - 1, sh - 1, clear);
	int ink = gdTrueColor(jitter(110), jitter(110), jitter(140));
	gdImageChar(small, font, 0, 0, (unsigned char)c, ink);
	gdImageCopyResampled(big, small, 0, 0, 0, 0, sw, sh, w, h);
	gdImageCopyRotated(im, big, cx, cy, 0, 0, sw, sh, jitter(51) - 25);
	rc = 0;
done:
	if (small != NULL)
		gdImageDestroy(small);
	if (big != NULL)
		gdImageDestroy(big);
	return rc;
}

unsigned char *captcha_image_png(const char *answer, size_t *len)
{
	gdFontPtr font = gdFontGetGiant();
	gdImagePtr im = gdImageCreateTrueColor(IMG_W, IMG_H);
	unsigned char *png = NULL;
	size_t n = answer ? strlen(answer) : 0;
	int size = 0;

	*len = 0;
	if (im == NULL || n == 0 || n > 12)
		goto done;
	gdImageAlphaBlending(im, 1);
	gdImageFilledRectangle(im, 0, 0, IMG_W - 1, IMG_H - 1,
			       random_colour(im, 225, 255));
	/* Faint clutter behind the letters. */
	for (int i = 0; i < 6; i++)
		gdImageLine(im, jitter(IMG_W), jitter(IMG_H), jitter(IMG_W),
			    jitter(IMG_H), random_colour(im, 150, 220));

	int step = (IMG_W - 20) / (int)n;
	for (size_t i = 0; i < n; i++) {
		int cx = 10 + step * (int)i + step / 2 + jitter(7) - 3;
		int cy = IMG_H / 2 + jitter(13) - 6;
		if (draw_glyph(im, font, answer[i], cx, cy) < 0)
			goto done;
	}

	/* Lines and dots across the letters. */
	gdImageSetThickness(im, 2);
	for (int i = 0; i < 3; i++)
		gdImageLine(im, jitter(30), jitter(IMG_H), IMG_W - 1 - jitter(30),
			    jitter(IMG_H), random_colour(im, 60, 160));
	gdImageSetThickness(im, 1);
	for (int i = 0; i < 400; i++)
		gdImageSetPixel(im, jitter(IMG_W), jitter(IMG_H),
				random_colour(im, 40, 230));

	png = gdImagePngPtr(im, &size);
	if (png != NULL && size > 0)
		*len = (size_t)size;
done:
	if (png == NULL)
		log_error("captcha: libgd could not draw the picture");
	if (im != NULL)
		gdImageDestroy(im);
	return png;
}

void captcha_image_free(unsigned char *png)
{
	if (png != NULL)
		gdFree(png);
}

/* ---- page ------------------------------------------------------------- */

static void page_escape(struct buf *b, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		switch (*s) {
		case '&': buf_puts(b, "&amp;"); break;
		case '<': buf_puts(b, "&lt;"); break;
		case '>': buf_puts(b, "&gt;"); break;
		case '"': buf_puts(b, "&quot;"); break;
		case '\'': buf_puts(b, "&#39;"); break;
		default: buf_putc(b, *s); break;
		}
	}
}

static void page_open(struct buf *b)
{
	buf_puts(b,
		 "<!DOCTYPE html>\n"
		 "<html lang=\"en\">\n"
		 "<head>\n"
		 "<meta charset=\"utf-8\">\n"
		 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		 "<title>Weave: are you human?</title>\n"
		 "<style>\n"
		 "body { font-family: sans-serif; color: #222; background: #fff; margin: 0; padding: 10px; }\n"
		 "img { display: block; border: 1px solid #bbb; border-radius: 4px; margin: 0 0 8px; }\n"
		 "label { display: block; margin: 0 0 4px; }\n"
		 "input[type=text] { font-size: 1.2em; padding: 4px; width: 10em; letter-spacing: 0.1em; }\n"
		 ".note { color: #555; font-size: 0.9em; margin: 6px 0 0; }\n"
		 "a { color: #0a58a5; }\n"
		 "</style>\n"
		 "</head>\n"
		 "<body>\n");
}

/* The two inputs the wizard reads by id, with the challenge value. */
static void page_inputs(struct buf *b, const char *challenge, const char *label)
{
	buf_puts(b, "<input type=\"hidden\" id=\"recaptcha_challenge_field\" "
		    "name=\"recaptcha_challenge_field\" value=\"");
	page_escape(b, challenge);
	buf_puts(b, "\">\n<label for=\"recaptcha_response_field\">");
	page_escape(b, label);
	buf_puts(b, "</label>\n<input type=\"text\" id=\"recaptcha_response_field\" "
		    "name=\"recaptcha_response_field\" autocomplete=\"off\" "
		    "autocapitalize=\"characters\" spellcheck=\"false\">\n");
}

static void page_close(struct buf *b)
{
	buf_puts(b, "</body>\n</html>\n");
}

/* The picture and the token of a fresh local challenge; -1 when unavailable. */
static int page_local(const struct config *cfg, struct buf *b)
{
	char token[CAPTCHA_TOKEN_SIZE];
	char answer[CAPTCHA_ANSWER_LEN + 1];
	unsigned char *png = NULL;
	unsigned char *b64 = NULL;
	size_t png_len = 0;
	int rc = -1;

	if (captcha_new(cfg, (int64_t)time(NULL), token, sizeof token, answer,
			sizeof answer) < 0)
		return -1;
	png = captcha_image_png(answer, &png_len);
	OPENSSL_cleanse(answer, sizeof answer);
	if (png == NULL || png_len > INT32_MAX / 2)
		goto done;
	b64 = xmalloc(4 * ((png_len + 2) / 3) + 1);
	EVP_EncodeBlock(b64, png, (int)png_len);

	buf_puts(b, "<p><img src=\"data:image/png;base64,");
	buf_puts(b, (const char *)b64);
	buf_printf(b, "\" width=\"%d\" height=\"%d\" alt=\"Six letters and digits "
		      "to type below\"></p>\n", IMG_W, IMG_H);
	page_inputs(b, token, "Type the characters you see in the picture:");
	buf_puts(b, "<p class=\"note\">Upper or lower case, either is fine. "
		    "Hard to read? <a href=\"captcha_html\">New picture</a></p>\n");
	rc = 0;
done:
	free(b64);
	captcha_image_free(png);
	return rc;
}

int misc_captcha_html(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	struct buf page;

	buf_init(&page, PAGE_MAX);
	page_open(&page);
	if (!cfg->captcha) {
		page_inputs(&page, "", "No check needed on this server; leave this "
				       "field empty:");
	} else if (cfg->captcha_verify_url != NULL &&
		   cfg->captcha_verify_url[0] != '\0') {
		/* The third-party widget needs script, which this page never
		 * runs: show the site key the verifier expects and keep the ids. */
		page_inputs(&page, cfg->captcha_public_key ? cfg->captcha_public_key : "",
			    "Your answer for this server's CAPTCHA service:");
		buf_puts(&page, "<p class=\"note\">This server checks answers with an "
				"external CAPTCHA service");
		if (cfg->captcha_public_key != NULL) {
			buf_puts(&page, " (site key <code>");
			page_escape(&page, cfg->captcha_public_key);
			buf_puts(&page, "</code>)");
		}
		buf_puts(&page, ".</p>\n");
	} else if (page_local(cfg, &page) < 0) {
		buf_free(&page);
		resp_error(resp, 503, WEAVE_ERR_NONE);
		return 503;
	}
	page_close(&page);

	resp_html(resp, page.data, page.len);
	buf_free(&page);
	/* No X-Frame-Options or frame-ancestors: the 1.0 wizard frames this page. */
	resp_header(resp, "Content-Security-Policy",
		    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
		    "form-action 'self'; base-uri 'none'");
	resp_header(resp, "X-Content-Type-Options", "nosniff");
	resp_header(resp, "Referrer-Policy", "no-referrer");
	resp_header(resp, "Cache-Control", "no-store");
	return 200;
}
