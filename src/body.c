/* body.c - request bodies as JSON values or UTF-8 text. */
#include "body.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "log.h"
#include "config.h"
#include "util.h"
#include "validate.h"

char *body_text(const struct request *req, size_t *len)
{
	const char *text = req->body ? req->body : "";
	size_t n = req->body ? req->body_len : 0;
	char *out = xmalloc(n * 2 + 1);
	*len = auth_password_to_utf8(text, n, out);
	return out;
}

struct json_object *body_parse_json(const struct request *req,
				    struct response *resp)
{
	const char *text = req->body ? req->body : "";
	size_t len = req->body ? req->body_len : 0;
	/* JSON text is UTF-8 (RFC 8259), and both Mozilla servers refused
	 * anything else; reading it as Latin-1 would store bytes the client
	 * never wrote. */
	if (!validate_utf8(text, len)) {
		resp_error(resp, 400, WEAVE_ERR_JSON);
		return NULL;
	}
	struct json_tokener *tok = json_tokener_new_ex(64);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
	size_t used = json_tokener_get_parse_end(tok);
	if (json_tokener_get_error(tok) == json_tokener_continue) {
		/* Everything was read, but a bare number ("1") ends only where
		 * json-c sees the end of input: hand it the terminating NUL. */
		obj = json_tokener_parse_ex(tok, "", 1);
		used = len;
	}
	bool complete = json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	while (complete && used < len &&
	       (text[used] == ' ' || text[used] == '\n' || text[used] == '\r' ||
		text[used] == '\t'))
		used++;
	if (obj == NULL || !complete || used != len) {
		json_object_put(obj);
		resp_error(resp, 400, WEAVE_ERR_JSON);
		return NULL;
	}
	return obj;
}

/*
 * The length the client declared, as Apache saw it: apache/weave.conf
 * copies the Content-Length header into WEAVE_CONTENT_LENGTH before
 * LimitRequestBody can refuse the body, because Apache then hands us an
 * empty body with CONTENT_LENGTH 0. -1 when absent or not a number.
 */
static int64_t apache_declared_length(const struct request *req)
{
	const char *v = request_env(req, "WEAVE_CONTENT_LENGTH");
	int64_t n = -1;
	if (v == NULL || parse_int64(v, 0, INT64_MAX, &n) < 0)
		return -1;
	return n;
}

static int too_large(struct response *resp, int64_t declared, size_t limit)
{
	log_info("request body of %lld bytes is over max_request_bytes (%zu)",
		 (long long)declared, limit);
	return resp_error(resp, 413, WEAVE_ERR_SIZE_LIMIT);
}

int body_read(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	const char *cl = request_env(req, "CONTENT_LENGTH");
	int64_t declared = -1;
	size_t limit = (size_t)cfg->max_request_bytes;

	if (cl != NULL && *cl != '\0' &&
	    parse_int64(cl, 0, INT64_MAX, &declared) < 0) {
		resp_error(resp, 400, WEAVE_ERR_NONE);
		return -1;
	}
	if (declared > (int64_t)limit) {
		too_large(resp, declared, limit);
		return -1;
	}
	if (apache_declared_length(req) > (int64_t)limit) {
		too_large(resp, apache_declared_length(req), limit);
		return -1;
	}
	size_t want = declared >= 0 ? (size_t)declared : limit + 1;
	size_t cap = declared >= 0 ? want : 65536;
	char *body = xmalloc(cap + 1);
	size_t have = 0;
	while (have < want && req->read_body != NULL) {
		if (have == cap) {
			cap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
			body = xrealloc(body, cap + 1);
		}
		long n = req->read_body(req->read_ctx, body + have, cap - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (have > limit) {
		free(body);
		resp_error(resp, 413, WEAVE_ERR_SIZE_LIMIT);
		return -1;
	}
	body[have] = '\0';
	req->body = body;
	req->body_len = have;
	return 0;
}
