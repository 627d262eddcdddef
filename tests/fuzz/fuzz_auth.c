/* fuzz_auth.c - the Authorization header: Basic credentials (src/auth.c). */
#include "fuzz.h"

#include "auth.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct credentials cred;
	char *header = fuzz_string(data, size);
	enum auth_parse_status st = auth_parse_basic(header, &cred);

	FUZZ_ASSERT(st < AUTH_PARSE__MAX);
	FUZZ_ASSERT(auth_parse_status_text(st) != NULL);
	if (st == AUTH_PARSE_OK) {
		FUZZ_ASSERT(cred.username_len > 0);
		FUZZ_ASSERT(cred.username_len == strlen(cred.username));
		FUZZ_ASSERT(cred.password_len == strlen(cred.password));
		FUZZ_ASSERT(cred.password_len <= AUTH_PASSWORD_MAX * 2);
		/* Latin-1 bytes are converted: the server hashes UTF-8 only. */
		FUZZ_ASSERT(validate_utf8(cred.password, cred.password_len));
		for (size_t i = 0; i < cred.username_len; i++)
			FUZZ_ASSERT(cred.username[i] < 'A' || cred.username[i] > 'Z');
	} else {
		/* A refused header leaves nothing behind. */
		FUZZ_ASSERT(cred.username_len == 0 && cred.password_len == 0);
	}
	auth_credentials_wipe(&cred);
	free(header);
	return 0;
}
