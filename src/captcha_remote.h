/*
 * captcha_remote.h - a remote CAPTCHA verifier speaking the reCAPTCHA v1
 * verify protocol, used instead of our own tokens when
 * captcha_verify_url is set (weave.conf): a form POST of privatekey,
 * remoteip, challenge and response; the reply's first line is "true" or
 * "false" (the second line says why).
 */
#ifndef WEAVE_CAPTCHA_REMOTE_H
#define WEAVE_CAPTCHA_REMOTE_H

#include "captcha_token.h"

struct config;

/*
 * Ask cfg->captcha_verify_url (10 s timeout, no redirects, http and https
 * only) about a challenge/response pair; the caller bounds both
 * (CAPTCHA_CHALLENGE_MAX, CAPTCHA_RESPONSE_MAX). remote_ip may be NULL.
 * Reply "true" → OK, "false" → WRONG; no answer, an HTTP status other
 * than 200 or any other reply → UNAVAILABLE (logged; never the private
 * key or the response).
 */
enum captcha_verdict captcha_remote_verify(const struct config *cfg,
					   const char *challenge,
					   const char *response,
					   const char *remote_ip);

#endif
