/*
 * fuzz_post.c - the body of POST storage/<coll> (a JSON array of
 * records): body_parse_json and body_text (src/body.c), wbo_batch_parse
 * (src/wbo.c), and the answer's "success" and "failed" as the handler
 * serialises them. Input: the body.
 */
#include "fuzz.h"

#include <json-c/json.h>

#include "body.h"
#include "request.h"
#include "response.h"
#include "validate.h"
#include "wbo.h"

#define FUZZ_MAX_RECORDS 100
#define FUZZ_MAX_PAYLOAD 262144
#define FUZZ_MAX_BYTES 1048576

static void check_batch(struct json_object *body)
{
	struct wbo_batch b;
	enum wbo_batch_status st =
		wbo_batch_parse(body, FUZZ_MAX_RECORDS, FUZZ_MAX_BYTES,
				FUZZ_MAX_PAYLOAD, &b);
	FUZZ_ASSERT(st < WBO_BATCH__MAX);
	if (st == WBO_BATCH_OK) {
		FUZZ_ASSERT(b.nvalid <= FUZZ_MAX_RECORDS);
		FUZZ_ASSERT(b.nvalid <= b.count);
		FUZZ_ASSERT(b.failed != NULL);
		struct json_object *success = json_object_new_array();
		for (size_t i = 0; i < b.nvalid; i++) {
			FUZZ_ASSERT(validate_wbo_id(b.items[i].id, b.items[i].id_len));
			for (size_t k = 0; k < i; k++)
				FUZZ_ASSERT(b.items[k].id_len != b.items[i].id_len ||
					    memcmp(b.items[k].id, b.items[i].id,
						   b.items[i].id_len) != 0);
			json_object_array_add(success,
					      json_object_new_string_len(b.items[i].id,
									 (int)b.items[i].id_len));
		}
		/* Every record is accounted for: stored or failed. */
		FUZZ_ASSERT(b.nvalid > 0 || b.count == 0 ||
			    json_object_object_length(b.failed) > 0);
		struct json_object *answer = json_object_new_object();
		json_object_object_add(answer, "success", success);
		json_object_object_add(answer, "failed", b.failed);
		b.failed = NULL;
		size_t len = 0;
		const char *text = json_object_to_json_string_length(
			answer, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
			&len);
		FUZZ_ASSERT(text != NULL && len > 0);
		json_object_put(answer);
	}
	wbo_batch_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request req;
	struct response resp;
	size_t text_len;

	fuzz_request_with_body(&req, data, size);
	response_init(&resp);

	/* Text bodies (password, e-mail): always UTF-8 after the fallback. */
	char *text = body_text(&req, &text_len);
	FUZZ_ASSERT(text_len <= 2 * size);
	FUZZ_ASSERT(validate_utf8(text, text_len));
	free(text);

	struct json_object *body = body_parse_json(&req, &resp);
	if (body != NULL) {
		check_batch(body);
		json_object_put(body);
	} else {
		FUZZ_ASSERT(resp.status == 400);
	}
	request_free(&req);
	response_free(&resp);
	return 0;
}
