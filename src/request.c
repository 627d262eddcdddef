/* request.c - FastCGI parameters and URI into a bounded struct request. */
#include "request.h"

#include <stdlib.h>
#include <string.h>

#include "client_address.h"
#include "config.h"
#include "log.h"
#include "util.h"

void request_init(struct request *req, unsigned long id, char **env)
{
	memset(req, 0, sizeof *req);
	req->id = id;
	req->env = env;
	req->method = METHOD_OTHER;
	req->method_name = "";
}

void request_free(struct request *req)
{
	for (size_t i = 0; i < req->nsegments; i++)
		free(req->segments[i]);
	for (size_t i = 0; i < req->nparams; i++) {
		free(req->params[i].name);
		free(req->params[i].value);
	}
	free(req->body);
	free(req->write);
	req->write = NULL;
	req->nsegments = 0;
	req->nparams = 0;
	req->body = NULL;
}

const char *request_env(const struct request *req, const char *name)
{
	size_t len = strlen(name);
	if (req->env == NULL)
		return NULL;
	/* The first byte first: a request asks a dozen names of some thirty
	 * variables, and strncmp's call was most of a warm poll's lookups. */
	for (char **e = req->env; *e != NULL; e++)
		if ((*e)[0] == name[0] && strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

void request_find_client(struct request *req)
{
	const char *remote = request_env(req, "REMOTE_ADDR");
	const char *forwarded = request_header(req, "X-Forwarded-For");
	static bool warned;
	if (client_address_resolve(remote, forwarded, req->cfg->trusted_proxies,
				   req->client_address, sizeof req->client_address))
		return;
	/* A proxy that is not trusted: every client behind it would count
	 * as one address. Said once per process; any client can send the
	 * header, so no more than that. */
	if (forwarded != NULL && remote != NULL && !warned &&
	    !client_address_in_list(req->cfg->trusted_proxies, remote)) {
		warned = true;
		log_warn("X-Forwarded-For ignored from %s, which is not in "
			 "trusted_proxies: if it is your reverse proxy, list it "
			 "there, or every client behind it counts as one address",
			 remote);
	}
}

const char *request_client_address(const struct request *req)
{
	if (req->client_address[0] != '\0')
		return req->client_address;
	return request_env(req, "REMOTE_ADDR");
}

const char *request_header(const struct request *req, const char *name)
{
	char var[128] = "HTTP_";
	size_t len = strlen(name);
	if (len > sizeof var - 6)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (c == '-')
			c = '_';
		else if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		var[5 + i] = c;
	}
	var[5 + len] = '\0';
	return request_env(req, var);
}

enum http_method request_method_parse(const char *name)
{
	static const char *const names[METHOD__MAX] = {
		[METHOD_GET] = "GET",
		[METHOD_PUT] = "PUT",
		[METHOD_POST] = "POST",
		[METHOD_DELETE] = "DELETE",
		[METHOD_OTHER] = NULL,
	};
	if (name != NULL)
		for (int i = 0; i < METHOD_OTHER; i++)
			if (strcmp(name, names[i]) == 0)
				return (enum http_method)i;
	return METHOD_OTHER;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *percent_decode(const char *src, size_t len, size_t *out_len)
{
	char *out = xmalloc(len + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = src[i];
		if (c == '%') {
			if (len - i < 3)
				goto fail;
			int hi = hex_value(src[i + 1]);
			int lo = hex_value(src[i + 2]);
			if (hi < 0 || lo < 0)
				goto fail;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (c == '\0')
			goto fail;
		out[o++] = c;
	}
	out[o] = '\0';
	if (out_len != NULL)
		*out_len = o;
	return out;
fail:
	free(out);
	return NULL;
}

/* Form fields: '+' is a space, then percent-decoding. */
static char *form_decode(const char *src, size_t len, size_t *out_len)
{
	char *copy = xstrndup(src, len);
	for (size_t i = 0; i < len; i++)
		if (copy[i] == '+')
			copy[i] = ' ';
	char *out = percent_decode(copy, len, out_len);
	free(copy);
	return out;
}

/*
 * "." and ".." (also spelt %2E) name no resource: a conforming client
 * removes dot segments before sending (RFC 3986, 5.2.4), and Apache maps
 * the normalised path to us while we split the raw REQUEST_URI, so the
 * two would disagree on what was asked ("storage/c/.." is "storage/" to
 * Apache, a record ".." to a naive split).
 */
static bool is_dot_segment(const char *seg, size_t len)
{
	return (len == 1 && seg[0] == '.') ||
	       (len == 2 && seg[0] == '.' && seg[1] == '.');
}

/* Split the path after the mount point into decoded segments. */
static enum request_parse_status split_path(struct request *req,
					    const char *path, size_t len,
					    bool decode)
{
	if (len == 0 || path[0] != '/')
		return REQUEST_NOT_FOUND;
	/* Ignore one trailing slash: "/1.0/u/info/collections/". */
	if (len > 1 && path[len - 1] == '/')
		len--;
	size_t pos = 1;
	while (pos <= len) {
		const char *seg = path + pos;
		const char *slash = memchr(seg, '/', len - pos);
		size_t seg_len = slash ? (size_t)(slash - seg) : len - pos;
		if (seg_len == 0)
			return len == 1 ? REQUEST_OK : REQUEST_NOT_FOUND;
		if (req->nsegments == REQUEST_MAX_SEGMENTS)
			return REQUEST_NOT_FOUND;
		size_t decoded_len = seg_len;
		char *decoded = decode ? percent_decode(seg, seg_len, &decoded_len)
				       : xstrndup(seg, seg_len);
		if (decoded == NULL)
			return REQUEST_BAD_ENCODING;
		if (is_dot_segment(decoded, decoded_len)) {
			free(decoded);
			return REQUEST_BAD_ENCODING;
		}
		req->segments[req->nsegments] = decoded;
		req->segment_lens[req->nsegments] = decoded_len;
		req->nsegments++;
		pos += seg_len + 1;
	}
	return REQUEST_OK;
}

static enum request_parse_status split_params(struct request *req,
					      const char *query, size_t len,
					      bool plus_is_space)
{
	size_t pos = 0;
	while (pos < len) {
		const char *item = query + pos;
		const char *amp = memchr(item, '&', len - pos);
		size_t item_len = amp ? (size_t)(amp - item) : len - pos;
		pos += item_len + 1;
		if (item_len == 0)
			continue;
		if (req->nparams == REQUEST_MAX_PARAMS)
			return REQUEST_TOO_LONG;
		const char *eq = memchr(item, '=', item_len);
		size_t name_len = eq ? (size_t)(eq - item) : item_len;
		const char *value = eq ? eq + 1 : item + item_len;
		size_t value_len = eq ? item_len - name_len - 1 : 0;
		struct query_param *p = &req->params[req->nparams];
		p->name = plus_is_space ? form_decode(item, name_len, NULL)
					: percent_decode(item, name_len, NULL);
		if (p->name == NULL)
			return REQUEST_BAD_ENCODING;
		p->value = plus_is_space ? form_decode(value, value_len, &p->value_len)
					 : percent_decode(value, value_len, &p->value_len);
		if (p->value == NULL) {
			free(p->name);
			p->name = NULL;
			return REQUEST_BAD_ENCODING;
		}
		req->nparams++;
	}
	return REQUEST_OK;
}

enum request_parse_status request_parse_uri(struct request *req,
					    const char *script_name,
					    const char *request_uri,
					    const char *path_info,
					    const char *query_string)
{
	const char *path;
	size_t path_len;
	const char *query = NULL;
	size_t query_len = 0;

	if (request_uri != NULL) {
		size_t uri_len = strlen(request_uri);
		if (uri_len > REQUEST_MAX_URI)
			return REQUEST_TOO_LONG;
		const char *q = memchr(request_uri, '?', uri_len);
		path = request_uri;
		path_len = q ? (size_t)(q - request_uri) : uri_len;
		if (q != NULL) {
			query = q + 1;
			query_len = uri_len - path_len - 1;
		}
		size_t mount_len = script_name ? strlen(script_name) : 0;
		/* Drop a trailing '/' of the mount point ("/" as SCRIPT_NAME). */
		if (mount_len > 0 && script_name[mount_len - 1] == '/')
			mount_len--;
		if (path_len < mount_len ||
		    (mount_len > 0 && memcmp(path, script_name, mount_len) != 0))
			return REQUEST_NOT_FOUND;
		path += mount_len;
		path_len -= mount_len;
		if (path_len == 0) {
			path = "/";
			path_len = 1;
		}
	} else {
		/* Plain CGI: PATH_INFO is already decoded; re-split it as is. */
		path = path_info ? path_info : "/";
		path_len = strlen(path);
		if (path_len > REQUEST_MAX_URI)
			return REQUEST_TOO_LONG;
		query = query_string;
		query_len = query ? strlen(query) : 0;
	}
	if (path_len > 0 && path[0] != '/')
		return REQUEST_NOT_FOUND;
	/* "/weave//1.0/u/...": what a client builds from a server URL typed
	 * with a trailing slash. Served as the single-slash path. */
	while (path_len > 1 && path[1] == '/') {
		path++;
		path_len--;
	}
	/* PATH_INFO (plain CGI) arrives decoded already: never decode twice. */
	enum request_parse_status st =
		split_path(req, path, path_len, request_uri != NULL);
	if (st != REQUEST_OK)
		return st;
	if (query != NULL)
		return split_params(req, query, query_len, false);
	return REQUEST_OK;
}

enum request_parse_status request_parse_form(struct request *req)
{
	if (req->body == NULL || req->body_len == 0)
		return REQUEST_OK;
	return split_params(req, req->body, req->body_len, true);
}

const struct query_param *request_param(const struct request *req,
					const char *name)
{
	for (size_t i = 0; i < req->nparams; i++)
		if (strcmp(req->params[i].name, name) == 0)
			return &req->params[i];
	return NULL;
}
