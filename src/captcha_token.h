/*
 * captcha_token.h - the server's own CAPTCHA challenges: a sealed token
 * that carries its answer and expiry, and the pure check of an answer
 * against it (no database, no network). captcha.h spends tokens.
 *
 * The challenge is stateless until it is used: everything needed to
 * check an answer travels in the token itself, sealed with keys derived
 * from captcha_secret (weave.conf).
 *
 * Token format (the value of recaptcha_challenge_field). With
 *
 *   k_enc = HMAC-SHA256(key = captcha_secret, msg = "weave-captcha-enc")
 *   k_mac = HMAC-SHA256(key = captcha_secret, msg = "weave-captcha-mac")
 *
 * the token is base64url without padding (RFC 4648 section 5, 62
 * characters) of these 46 bytes:
 *
 *   offset  len  field
 *    0      16   nonce: random bytes (RAND_bytes); the key of captcha_used
 *   16       8   expiry: seconds since the epoch, unsigned big-endian
 *   24       6   answer XOR HMAC-SHA256(k_enc, nonce || expiry)[0..6)
 *   30      16   HMAC-SHA256(k_mac, bytes 0..30)[0..16)
 *
 * The answer is 6 characters from CAPTCHA_ALPHABET (upper case). Anyone
 * holding captcha_secret can read the answer out of a token (the e2e
 * tests do, with Python's hmac and hashlib): keep the secret as secret
 * as the admin secret. Changing it invalidates outstanding challenges.
 *
 * Errors: functions log their own failures (never the secret or an
 * answer) and return -1 or CAPTCHA_UNAVAILABLE.
 */
#ifndef WEAVE_CAPTCHA_TOKEN_H
#define WEAVE_CAPTCHA_TOKEN_H

#include <stddef.h>
#include <stdint.h>

struct config;

/* No 0/O, 1/I/L: nothing a reader can confuse. */
#define CAPTCHA_ALPHABET "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
#define CAPTCHA_ANSWER_LEN 6
#define CAPTCHA_NONCE_LEN 16
/* Raw token bytes, the base64url length, and a buffer size with the NUL. */
#define CAPTCHA_TOKEN_RAW_LEN 46
#define CAPTCHA_TOKEN_LEN 62
#define CAPTCHA_TOKEN_SIZE (CAPTCHA_TOKEN_LEN + 1)
/* Longest response accepted; longer ones are simply wrong. */
#define CAPTCHA_RESPONSE_MAX 64
/* Longest challenge sent to a remote verifier. */
#define CAPTCHA_CHALLENGE_MAX 1024

/* The outcome of any check of an answer, local or remote. */
enum captcha_verdict {
	CAPTCHA_OK,
	CAPTCHA_WRONG,       /* empty or wrong response */
	CAPTCHA_EXPIRED,     /* a genuine token past its expiry */
	CAPTCHA_REPLAYED,    /* a genuine token that already verified once */
	CAPTCHA_MALFORMED,   /* not one of our tokens (bad length, encoding or MAC) */
	CAPTCHA_UNAVAILABLE, /* not configured, database or remote verifier down */
	CAPTCHA__MAX
};

/*
 * Issue a challenge valid until now + captcha_lifetime (seconds). Writes
 * the NUL-terminated token (token_cap >= CAPTCHA_TOKEN_SIZE) and the
 * answer (answer_cap > CAPTCHA_ANSWER_LEN). Returns 0, or -1 (logged)
 * when captcha_secret is not set, a buffer is too small or the random
 * generator fails. The caller should wipe the answer after use.
 */
int captcha_new(const struct config *cfg, int64_t now, char *token,
		size_t token_cap, char *answer, size_t answer_cap);

/*
 * The pure part of verification, no database and no network: checks
 * challenge and response against secret at time now (seconds).
 * Order: empty challenge or response → WRONG; challenge length,
 * base64url or MAC wrong → MALFORMED; expired → EXPIRED; response
 * (surrounding blanks ignored, any case) ≠ answer → WRONG; else OK.
 * Once the challenge proves authentic and unexpired (so on OK, and on
 * WRONG past that point), nonce_out (CAPTCHA_NONCE_LEN bytes) and
 * *expires_out receive what captcha_verify() records; otherwise
 * *expires_out is 0. Both may be NULL.
 */
enum captcha_verdict captcha_token_check(const char *secret,
					 const char *challenge,
					 const char *response, int64_t now,
					 unsigned char *nonce_out,
					 int64_t *expires_out);

/* A short English name of the verdict for logs ("wrong", "expired", ...). */
const char *captcha_verdict_text(enum captcha_verdict v);

#endif
