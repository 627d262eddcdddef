/*
 * fuzz_registration.c - the JSON body of PUT user/<u> (src/user_api.c):
 * e-mail and password checks (user_registration_parse) and the captcha
 * fields (captcha_token_check, fixed secret and clock as in
 * fuzz_captcha.c). Input: the body. When its first byte is '!', the rest
 * is the body and the path user is the hashed name of "fuzz@example.com",
 * as a Sync 1.1 client registers.
 */
#include "fuzz.h"

#include <json-c/json.h>

#include "auth.h"
#include "body.h"
#include "captcha.h"
#include "password.h"
#include "request.h"
#include "response.h"
#include "user_api.h"
#include "validate.h"

#define FUZZ_CAPTCHA_SECRET "weave-fuzz-captcha-secret"
#define FUZZ_NOW INT64_C(1700000000)

static const char *string_of(struct json_object *obj, const char *key)
{
	struct json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char user[33] = "john";
	struct request req;
	struct response resp;
	struct registration reg;

	if (size > 0 && data[0] == '!') {
		auth_email_to_username("fuzz@example.com", 16, user);
		data++;
		size--;
	}
	fuzz_request_with_body(&req, data, size);
	response_init(&resp);

	struct json_object *obj = body_parse_json(&req, &resp);
	if (obj == NULL || !json_object_is_type(obj, json_type_object))
		goto done;
	int code = user_registration_parse(obj, user, &reg);
	FUZZ_ASSERT(code == 0 || code == WEAVE_ERR_NO_EMAIL ||
		    code == WEAVE_ERR_EMAIL_MISMATCH ||
		    code == WEAVE_ERR_MISSING_PASSWORD || code == WEAVE_ERR_WEAK_PASSWORD);
	if (code == 0) {
		FUZZ_ASSERT(reg.password_len >= 8 && reg.password_len <= AUTH_PASSWORD_MAX);
		FUZZ_ASSERT(strlen(reg.password) == reg.password_len);
		FUZZ_ASSERT(password_is_strong(reg.password, reg.password_len, user));
		if (reg.email != NULL) {
			FUZZ_ASSERT(validate_email(reg.email, reg.email_len));
			FUZZ_ASSERT(strlen(reg.email) == reg.email_len);
		}
	}
	enum captcha_verdict v =
		captcha_token_check(FUZZ_CAPTCHA_SECRET,
				    string_of(obj, "captcha-challenge"),
				    string_of(obj, "captcha-response"), FUZZ_NOW,
				    NULL, NULL);
	FUZZ_ASSERT(v < CAPTCHA__MAX && v != CAPTCHA_UNAVAILABLE);
done:
	json_object_put(obj);
	request_free(&req);
	response_free(&resp);
	return 0;
}
