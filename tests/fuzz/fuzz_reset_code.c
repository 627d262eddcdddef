/*
 * fuzz_reset_code.c - typed password-reset codes (user_reset_code_hash
 * in src/user_api.c): blanks dropped, any case, XXXX-XXXX-XXXX-XXXX.
 * A second, naive normalisation here must agree with it.
 */
#include "fuzz.h"

#include <openssl/evp.h>

#include "user_api.h"

/* The rule of PROTOCOL.md B 3.2, written plainly; -1 when not a code. */
static int reference(const char *code, char norm[20])
{
	size_t n = 0;
	for (const char *p = code; *p; p++) {
		if (strchr(" \t\r\n", *p) != NULL)
			continue;
		if (n == 19)
			return -1;
		char c = *p;
		norm[n++] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
	}
	if (n != 19)
		return -1;
	norm[19] = '\0';
	for (size_t i = 0; i < 19; i++) {
		char c = norm[i];
		bool ok = i % 5 == 4 ? c == '-'
				     : (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!ok)
			return -1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char hash[32], want[32];
	char norm[20];
	char *code = fuzz_string(data, size);
	int rc = user_reset_code_hash(code, hash);
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
