/*
 * request.h - one HTTP request as FastCGI/CGI hands it to us, parsed and
 * bounded: method, percent-decoded path segments, query parameters, body.
 *
 * Ownership: the request owns every string it holds; request_free()
 * releases them all (one call per loop iteration). The environment array
 * is borrowed from libfcgi (or environ) and must outlive the request.
 */
#ifndef WEAVE_REQUEST_H
#define WEAVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upload_order.h"

#define REQUEST_MAX_SEGMENTS 8
#define REQUEST_MAX_PARAMS 32
#define REQUEST_MAX_URI 65536

enum http_method {
	METHOD_GET,
	METHOD_PUT,
	METHOD_POST,
	METHOD_DELETE,
	METHOD_OTHER,
	METHOD__MAX
};

struct query_param {
	char *name;
	char *value;
	size_t value_len;
};

enum request_parse_status {
	REQUEST_OK,
	REQUEST_BAD_ENCODING,  /* bad %XX or an encoded NUL: 400 */
	REQUEST_TOO_LONG,      /* URI or query parameters over the limits: 400 */
	REQUEST_NOT_FOUND,     /* not below the mount point, empty segments, or
				* more segments than any route has: 404 */
	REQUEST_PARSE__MAX
};

struct user;
struct config;
struct write_context;

typedef long (*request_read_fn)(void *ctx, char *buf, size_t len);

struct request {
	unsigned long id;
	char **env;
	const struct config *cfg;
	request_read_fn read_body;
	void *read_ctx;
	enum http_method method;
	const char *method_name;

	char *segments[REQUEST_MAX_SEGMENTS];
	size_t segment_lens[REQUEST_MAX_SEGMENTS];
	size_t nsegments;

	struct query_param params[REQUEST_MAX_PARAMS];
	size_t nparams;

	char *body;
	size_t body_len;

	/* Filled by the route matcher from the path. */
	const char *path_user;
	const char *collection;
	const char *record_id;

	/* Filled by the gate once the client is authenticated. */
	struct user *user;
	int64_t started;   /* centiseconds, taken before the user row is read */
	int64_t timestamp; /* a write's timestamp (strictly above last_write) */
	/* A write's context (db_history.h), filled by the gate once the
	 * account is locked, handed to db_storage_ writes; NULL before.
	 * Owned by the request (request_free() frees it). */
	struct write_context *write;
	/* The write's login took no row lock yet and req->timestamp is
	 * provisional until write_lock_take() (write_lock.h). */
	bool lock_pending;
	/* Such an upload's place among its account's (upload_order.h). */
	struct upload_turn turn;

	/*
	 * Throttling (throttle.h), acted on by the gate after the request's
	 * transaction, so that a rollback cannot undo a count: a wrong secret
	 * (password, admin secret) tried on failed_name ("": no account), a
	 * correct login that must be recorded, and a wrong reset code.
	 */
	bool login_failed;
	char failed_name[64];
	int64_t failed_user_id; /* its account, 0 if none */
	bool success_to_record; /* set by the throttle check of the login */
	char succeeded_name[64];
	bool reset_code_failed; /* set by the handler that checked the code */
	char client_address[64]; /* request_client_address(); "" until resolved */
	bool admin_secret_ok; /* X-Weave-Secret matched; checked once by the gate */
	bool db_tried_again; /* ran again once after losing its database server */
};

/* Zero the request and remember the environment. */
void request_init(struct request *req, unsigned long id, char **env);
void request_free(struct request *req);

/* Value of a FastCGI/CGI variable, or NULL. */
const char *request_env(const struct request *req, const char *name);

/*
 * The client's address: REMOTE_ADDR, or, when that is one of the
 * trusted_proxies, the address the proxy saw (client_address.h). NULL
 * when the web server gave none. request_find_client() decides, once.
 */
const char *request_client_address(const struct request *req);
void request_find_client(struct request *req);

/* Value of a request header by its HTTP name ("X-Confirm-Delete"), or NULL. */
const char *request_header(const struct request *req, const char *name);

/*
 * Split the URI into path and query, strip the mount point (script_name)
 * and percent-decode each path segment and each query name and value on
 * its own. '+' stays a literal plus. A trailing '/' is ignored.
 * path_info is used when request_uri is NULL (plain CGI runs).
 */
enum request_parse_status request_parse_uri(struct request *req,
					    const char *script_name,
					    const char *request_uri,
					    const char *path_info,
					    const char *query_string);

/*
 * Parse the body as application/x-www-form-urlencoded ('+' is a space
 * here, unlike in our query strings) and add its fields after the query
 * parameters. REQUEST_BAD_ENCODING or REQUEST_TOO_LONG on bad input.
 */
enum request_parse_status request_parse_form(struct request *req);

/* First value of the query parameter, or NULL. */
const struct query_param *request_param(const struct request *req,
					const char *name);

enum http_method request_method_parse(const char *name);

/*
 * Percent-decode src[0..len) into a new NUL-terminated string. Returns
 * NULL for a malformed escape or a decoded NUL byte.
 */
char *percent_decode(const char *src, size_t len, size_t *out_len);

#endif
