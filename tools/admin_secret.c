/* admin_secret.c - weave-admin secret: a fresh value for admin_secret or captcha_secret. */
#include <stdio.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "admin.h"

/*
 * 32 random bytes (256 bits) as 43 characters of unpadded base64url:
 * letters, digits, '-' and '_', safe in weave.conf and in shells.
 */
int cmd_secret(const struct args *a)
{
	unsigned char raw[32];
	unsigned char text[48]; /* 4 * ceil(32 / 3) + NUL */
	(void)a;
	if (RAND_bytes(raw, sizeof raw) != 1) {
		fprintf(stderr, "weave-admin: no random bytes available\n");
		return EXIT_FAILED;
	}
	int n = EVP_EncodeBlock(text, raw, sizeof raw);
	while (n > 0 && text[n - 1] == '=')
		n--;
	for (int i = 0; i < n; i++) {
		if (text[i] == '+')
			text[i] = '-';
		else if (text[i] == '/')
			text[i] = '_';
	}
	printf("%.*s\n", n, (const char *)text);
	OPENSSL_cleanse(raw, sizeof raw);
	OPENSSL_cleanse(text, sizeof text);
	return EXIT_OK;
}
