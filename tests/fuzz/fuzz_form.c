/*
 * fuzz_form.c - application/x-www-form-urlencoded bodies of the
 * password-reset page (request_parse_form in src/request.c), and the
 * escaping of the values the page echoes (src/html.c). Input: the body.
 */
#include "fuzz.h"

#include "html.h"
#include "password.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request req;
	struct buf page;

	fuzz_request_with_body(&req, data, size);
	req.method = METHOD_POST;
	buf_init(&page, 1024 * 1024);

	enum request_parse_status st = request_parse_form(&req);
	FUZZ_ASSERT(st == REQUEST_OK || st == REQUEST_BAD_ENCODING ||
		    st == REQUEST_TOO_LONG);
	FUZZ_ASSERT(req.nparams <= REQUEST_MAX_PARAMS);
	for (size_t i = 0; i < req.nparams; i++) {
		const struct query_param *p = &req.params[i];
		FUZZ_ASSERT(strlen(p->value) == p->value_len);
		/* Echoed values must not open a tag or leave an attribute. */
		buf_reset(&page);
		FUZZ_ASSERT(html_escape(&page, p->value) == 0);
		FUZZ_ASSERT(page.data == NULL || strpbrk(page.data, "<>\"'") == NULL);
		(void)password_is_strong(p->value, p->value_len, p->name);
	}
	const struct query_param *uid = request_param(&req, "uid");
	if (uid != NULL)
		FUZZ_ASSERT(strcmp(uid->name, "uid") == 0);
	buf_free(&page);
	request_free(&req);
	return 0;
}
