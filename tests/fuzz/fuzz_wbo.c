/*
 * fuzz_wbo.c - one record (src/wbo.c): a PUT body read as the server
 * reads it (body_parse_json in src/body.c: strict JSON, Latin-1
 * fallback), validated by wbo_parse, then written back by
 * wbo_row_to_json as a GET would serve it. That output must be JSON that
 * reads back to exactly the same fields.
 *
 * Input: the body. When its first byte is '!', the rest is the body and
 * the record id comes from the URL ("fuzz-id"), as for PUT.
 */
#include "fuzz.h"

#include <json-c/json.h>

#include "body.h"
#include "request.h"
#include "response.h"
#include "validate.h"
#include "wbo.h"

#define FUZZ_URL_ID "fuzz-id"
#define FUZZ_MAX_PAYLOAD 262144

/* A string member of the re-read record equals what was written. */
static void same_string(struct json_object *obj, const char *key, const char *s,
			size_t len)
{
	struct json_object *v;
	if (s == NULL) {
		FUZZ_ASSERT(!json_object_object_get_ex(obj, key, NULL));
		return;
	}
	FUZZ_ASSERT(json_object_object_get_ex(obj, key, &v));
	FUZZ_ASSERT(json_object_is_type(v, json_type_string));
	FUZZ_ASSERT((size_t)json_object_get_string_len(v) == len);
	FUZZ_ASSERT(memcmp(json_object_get_string(v), s, len) == 0);
}

static void round_trip(const struct wbo *w)
{
	struct buf out;
	struct wbo_row row = {
		.id = w->id, .id_len = w->id_len,
		.parentid = w->parentid, .parentid_len = w->parentid_len,
		.predecessorid = w->predecessorid,
		.predecessorid_len = w->predecessorid_len,
		.has_sortindex = (w->fields & WBO_FIELD_SORTINDEX) != 0,
		.sortindex = w->sortindex,
		.modified = INT64_C(126540283712),
		.payload = w->payload, .payload_len = w->payload_len,
	};
	buf_init(&out, 4 * FUZZ_MAX_PAYLOAD + 4096);
	FUZZ_ASSERT(wbo_row_to_json(&out, &row) == 0);

	struct json_tokener *tok = json_tokener_new();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *obj = json_tokener_parse_ex(tok, out.data, (int)out.len);
	FUZZ_ASSERT(json_tokener_get_error(tok) == json_tokener_success);
	FUZZ_ASSERT(json_tokener_get_parse_end(tok) == out.len);
	json_tokener_free(tok);
	FUZZ_ASSERT(json_object_is_type(obj, json_type_object));
	same_string(obj, "id", row.id, row.id_len);
	same_string(obj, "parentid", row.parentid, row.parentid_len);
	same_string(obj, "predecessorid", row.predecessorid, row.predecessorid_len);
	same_string(obj, "payload", row.payload, row.payload_len);
	struct json_object *v;
	if (row.has_sortindex) {
		FUZZ_ASSERT(json_object_object_get_ex(obj, "sortindex", &v));
		FUZZ_ASSERT(json_object_get_int64(v) == row.sortindex);
	}
	FUZZ_ASSERT(json_object_object_get_ex(obj, "modified", &v));
	FUZZ_ASSERT(json_object_is_type(v, json_type_double));
	json_object_put(obj);
	buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *url_id = NULL;
	struct request req;
	struct response resp;
	struct wbo w;

	if (size > 0 && data[0] == '!') {
		url_id = FUZZ_URL_ID;
		data++;
		size--;
	}
	request_init(&req, 1, NULL);
	response_init(&resp);
	req.body = xstrndup((const char *)data, size);
	req.body_len = size;

	struct json_object *obj = body_parse_json(&req, &resp);
	if (obj == NULL) {
		FUZZ_ASSERT(resp.status == 400);
		goto done;
	}
	enum wbo_error e = wbo_parse(obj, url_id, FUZZ_MAX_PAYLOAD, &w);
	FUZZ_ASSERT(e < WBO_ERROR__MAX);
	FUZZ_ASSERT(wbo_error_text(e) != NULL);
	if (e == WBO_OK) {
		FUZZ_ASSERT(validate_wbo_id(w.id, w.id_len));
		if (url_id != NULL)
			FUZZ_ASSERT(w.id_len == strlen(url_id) &&
				    memcmp(w.id, url_id, w.id_len) == 0);
		if (w.fields & WBO_FIELD_PARENTID)
			FUZZ_ASSERT(validate_wbo_id(w.parentid, w.parentid_len));
		if (w.fields & WBO_FIELD_SORTINDEX)
			FUZZ_ASSERT(validate_sortindex(w.sortindex));
		if (w.fields & WBO_FIELD_TTL)
			FUZZ_ASSERT(validate_ttl(w.ttl));
		if (w.fields & WBO_FIELD_PAYLOAD)
			FUZZ_ASSERT(w.payload_len <= FUZZ_MAX_PAYLOAD);
		round_trip(&w);
	}
	json_object_put(obj);
done:
	request_free(&req);
	response_free(&resp);
	return 0;
}
