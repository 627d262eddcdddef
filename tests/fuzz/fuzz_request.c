/*
 * fuzz_request.c - the request line as the gate sees it (route_resolve
 * in src/route.c): method, REQUEST_URI split into path segments and
 * query parameters (src/request.c), route match and path fields.
 *
 * Input: "METHOD URI", the URI below the mount point /weave. A URI that
 * starts with '!' is given as plain-CGI PATH_INFO and QUERY_STRING
 * instead (split at the first '?').
 */
#include "fuzz.h"

#include "request.h"
#include "response.h"
#include "route.h"
#include "validate.h"

static char *env_var(const char *name, const char *value, size_t len)
{
	size_t n = strlen(name);
	char *v = xmalloc(n + 1 + len + 1);
	memcpy(v, name, n);
	v[n] = '=';
	memcpy(v + n + 1, value, len);
	v[n + 1 + len] = '\0';
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_string(data, size);
	char *uri = strchr(line, ' ');
	const char *method = "GET";
	char *env[8] = { NULL };
	size_t nenv = 0;

	if (uri != NULL) {
		*uri++ = '\0';
		method = line;
	} else {
		uri = line;
	}
	env[nenv++] = env_var("REQUEST_METHOD", method, strlen(method));
	env[nenv++] = env_var("SCRIPT_NAME", "/weave", 6);
	if (uri[0] == '!') {
		char *q = strchr(uri + 1, '?');
		size_t plen = q ? (size_t)(q - uri - 1) : strlen(uri + 1);
		env[nenv++] = env_var("PATH_INFO", uri + 1, plen);
		if (q != NULL)
			env[nenv++] = env_var("QUERY_STRING", q + 1, strlen(q + 1));
	} else {
		char *full = xmalloc(strlen(uri) + 7);
		memcpy(full, "/weave", 6);
		memcpy(full + 6, uri, strlen(uri) + 1);
		env[nenv++] = env_var("REQUEST_URI", full, strlen(full));
		free(full);
	}

	struct request req;
	struct response resp;
	unsigned flags = 0;
	request_init(&req, 1, env);
	response_init(&resp);
	if (route_resolve(&req, &resp, &flags) == 0) {
		/* The handlers trust these: the gate must have checked them. */
		if (req.path_user != NULL)
			FUZZ_ASSERT(validate_username(req.path_user, strlen(req.path_user)));
		if (req.collection != NULL)
			FUZZ_ASSERT(validate_collection(req.collection,
							strlen(req.collection)));
		if (req.record_id != NULL)
			FUZZ_ASSERT(validate_wbo_id(req.record_id, strlen(req.record_id)));
		if (flags & USER_MUST_MATCH)
			FUZZ_ASSERT(req.path_user != NULL);
	} else {
		/* 405 only under /1.1/ (a method the path lacks). */
		FUZZ_ASSERT(resp.status == 400 || resp.status == 404 ||
			    (resp.status == 405 && req.nsegments > 0 &&
			     strcmp(req.segments[0], "1.1") == 0));
	}
	FUZZ_ASSERT(req.nsegments <= REQUEST_MAX_SEGMENTS);
	FUZZ_ASSERT(req.nparams <= REQUEST_MAX_PARAMS);
	for (size_t i = 0; i < req.nparams; i++)
		FUZZ_ASSERT(strlen(req.params[i].value) == req.params[i].value_len);
	request_free(&req);
	response_free(&resp);
	for (size_t i = 0; i < nenv; i++)
		free(env[i]);
	free(line);
	return 0;
}
