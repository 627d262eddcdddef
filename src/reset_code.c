/* reset_code.c - make, read and hash password-reset codes (reset_code.h). */
#include "reset_code.h"

#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#define ALPHABET_LEN (sizeof RESET_CODE_ALPHABET - 1)

/* Group 16 characters as XXXX-XXXX-XXXX-XXXX. */
static void group(const char chars[RESET_CODE_CHARS], char out[RESET_CODE_TEXT_MAX])
{
	size_t n = 0;
	for (size_t i = 0; i < RESET_CODE_CHARS; i++) {
		if (i > 0 && i % 4 == 0)
			out[n++] = '-';
		out[n++] = chars[i];
	}
	out[n] = '\0';
}

int reset_code_make(char out[RESET_CODE_TEXT_MAX])
{
	/* The largest multiple of the alphabet's size in a byte: bytes at
	 * or above it are redrawn, so every character is equally likely. */
	const unsigned limit = 256 - 256 % ALPHABET_LEN;
	char chars[RESET_CODE_CHARS];
	size_t n = 0;
	while (n < RESET_CODE_CHARS) {
		unsigned char r;
		if (RAND_bytes(&r, 1) != 1)
			return -1;
		if (r < limit)
			chars[n++] = RESET_CODE_ALPHABET[r % ALPHABET_LEN];
	}
	group(chars, out);
	OPENSSL_cleanse(chars, sizeof chars);
	return 0;
}

int reset_code_normalise(const char *typed, char out[RESET_CODE_TEXT_MAX])
{
	char chars[RESET_CODE_CHARS];
	size_t n = 0;
	int rc = -1;
	for (const char *p = typed; *p != '\0'; p++) {
		char c = *p;
		if (c == '-' || c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		if (n == RESET_CODE_CHARS || c == '\0' ||
		    strchr(RESET_CODE_ALPHABET, c) == NULL)
			goto done;
		chars[n++] = c;
	}
	if (n == RESET_CODE_CHARS) {
		group(chars, out);
		rc = 0;
	}
done:
	OPENSSL_cleanse(chars, sizeof chars);
	return rc;
}

int reset_code_hash(const char *typed, unsigned char hash[32])
{
	char norm[RESET_CODE_TEXT_MAX];
	unsigned int len = 32;
	if (reset_code_normalise(typed, norm) < 0)
		return -1;
	int ok = EVP_Digest(norm, strlen(norm), hash, &len, EVP_sha256(), NULL);
	OPENSSL_cleanse(norm, sizeof norm);
	return ok == 1 ? 0 : -1;
}
