/*
 * fuzz_captcha.c - captcha tokens and answers (src/captcha_token.c) under a
 * fixed secret and clock, so that the seeds (made by tests/fuzz/mkseeds)
 * hold genuine tokens and the fuzzer gets past the MAC.
 * Input: challenge '\n' response.
 */
#include "fuzz.h"

#include "captcha.h"

#define FUZZ_CAPTCHA_SECRET "weave-fuzz-captcha-secret"
#define FUZZ_NOW INT64_C(1700000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *challenge, *response;
	unsigned char nonce[CAPTCHA_NONCE_LEN];
	int64_t expires = -1;

	fuzz_split(data, size, &challenge, &response);
	enum captcha_verdict v = captcha_token_check(FUZZ_CAPTCHA_SECRET, challenge,
						     response, FUZZ_NOW, nonce,
						     &expires);
	FUZZ_ASSERT(v < CAPTCHA__MAX);
	FUZZ_ASSERT(captcha_verdict_text(v) != NULL);
	/* Our own secret is set: never "unavailable" for lack of it. */
	FUZZ_ASSERT(v != CAPTCHA_UNAVAILABLE);
	if (v == CAPTCHA_OK) {
		FUZZ_ASSERT(strlen(challenge) == CAPTCHA_TOKEN_LEN);
		FUZZ_ASSERT(expires >= FUZZ_NOW);
	}
	/* A challenge that is not exactly one of our tokens never verifies. */
	if (strlen(challenge) != CAPTCHA_TOKEN_LEN)
		FUZZ_ASSERT(v != CAPTCHA_OK && v != CAPTCHA_EXPIRED);
	free(challenge);
	free(response);
	return 0;
}
