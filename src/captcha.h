/*
 * captcha.h - the CAPTCHA of the account wizard as the server uses it:
 * the check that the registration handler runs and the page at
 * misc/1/captcha_html (docs/protocol.md, CAPTCHA).
 *
 * Its parts: captcha_token.h (our own sealed challenges and the pure
 * check of an answer; the token format), captcha_picture.h (the PNG),
 * captcha_remote.h (a reCAPTCHA-v1-style verifier, used instead when
 * captcha_verify_url is set; the page then shows captcha_public_key
 * instead of a picture), db_captcha.h (one use per challenge) and
 * html.h (the page skeleton and headers).
 *
 * Only a successful verification writes to the database (captcha_used),
 * so that one challenge verifies at most once.
 *
 * Errors: functions log their own failures (never the secret or an
 * answer) and return CAPTCHA_UNAVAILABLE or an error status.
 */
#ifndef WEAVE_CAPTCHA_H
#define WEAVE_CAPTCHA_H

#include <stdint.h>

#include "captcha_token.h"
#include "request.h"
#include "response.h"

struct config;

/*
 * Verify a challenge/response pair from the wizard. Empty challenge or
 * response → CAPTCHA_WRONG without further work. With
 * captcha_verify_url set, asks the remote verifier (10 s timeout; reply
 * "true" → OK, "false" → WRONG, anything else → UNAVAILABLE). Otherwise
 * captcha_token_check(), then records the nonce of every authentic,
 * unexpired challenge in captcha_used, whether the answer was right or
 * not: a second use → REPLAYED, a database failure → UNAVAILABLE (WRONG
 * stays WRONG). The insert
 * joins the caller's transaction if one is open (a rolled-back
 * registration leaves the challenge usable). remote_ip may be NULL.
 * It does not look at cfg->captcha: the caller skips the check when the
 * captcha is off (or the admin secret is presented).
 */
enum captcha_verdict captcha_verify(const struct config *cfg,
				    const char *challenge, const char *response,
				    const char *remote_ip, int64_t now);

/*
 * GET and POST misc/{1,1.0}/captcha_html: the page the 1.0 wizard loads.
 * It always holds inputs with the ids recaptcha_challenge_field and
 * recaptcha_response_field (the 1.0 wizard throws without them):
 *   - captcha on, local: the picture inline (data: URL) and the token;
 *   - captcha on, remote verifier: captcha_public_key as the challenge
 *     value and a note (the third-party widget cannot run here);
 *   - captcha off: both inputs empty and a note.
 * Statuses: 200 text/html page; 503 (Weave code 0, Retry-After) when
 * captcha is on, local, and captcha_secret is not set (logged), or when
 * the challenge or picture cannot be made (logged).
 */
int misc_captcha_html(struct request *req, struct response *resp);

#endif
