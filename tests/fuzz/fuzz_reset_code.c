/*
 * fuzz_reset_code.c - typed password-reset codes (reset_code_hash in
 * src/reset_code.c): blanks and dashes dropped, any case, 16 characters
 * of the alphabet. A second, naive normalisation here must agree with it.
 */
#include "fuzz.h"

#include <openssl/evp.h>

#include "reset_code.h"

/* The rule of reset_code.h, written plainly; -1 when not a code. */
static int reference(const char *code, char norm[20])
{
	char plain[17];
	size_t n = 0;
	for (const char *p = code; *p; p++) {
		if (strchr(" \t\r\n-", *p) != NULL)
			continue;
		if (n == 16)
			return -1;
		char c = *p;
		c = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
		if (strchr("23456789ABCDEFGHJKMNPQRSTUVWXYZ", c) == NULL)
			return -1;
		plain[n++] = c;
	}
	if (n != 16)
		return -1;
	snprintf(norm, 20, "%.4s-%.4s-%.4s-%.4s", plain, plain + 4, plain + 8,
		 plain + 12);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char hash[32], want[32];
	char norm[20];
	char *code = fuzz_string(data, size);
	int rc = reset_code_hash(code, hash);
	int ref = reference(code, norm);
	FUZZ_ASSERT(rc == ref);
	if (rc == 0) {
		unsigned int len = sizeof want;
		FUZZ_ASSERT(EVP_Digest(norm, 19, want, &len, EVP_sha256(), NULL) == 1);
		FUZZ_ASSERT(memcmp(hash, want, sizeof hash) == 0);
	}
	free(code);
	return 0;
}
