/*
 * response.h - the only writer of status lines, headers and bodies.
 *
 * A handler fills a struct response; response_send() writes it as a
 * CGI/FastCGI response. Every response carries X-Weave-Timestamp (set
 * by the caller through response_set_timestamp(), or "now" at send
 * time) and, where the operator asked for it, X-Weave-Backoff.
 *
 * Errors leave through resp_error() alone: a bare JSON integer body with
 * Content-Type application/json, plus the headers the status needs
 * (WWW-Authenticate on 401, Retry-After and X-Weave-Backoff on 503).
 * The body is 0 when no Weave error code applies.
 */
#ifndef WEAVE_RESPONSE_H
#define WEAVE_RESPONSE_H

#include <stdint.h>

#include "buf.h"

/* Weave error codes (docs/protocol.md, Weave error codes). */
enum weave_error {
	WEAVE_ERR_NONE = 0,
	WEAVE_ERR_ILLEGAL_METHOD = 1,
	WEAVE_ERR_CAPTCHA = 2,
	WEAVE_ERR_USERNAME = 3,
	WEAVE_ERR_OVERWRITE = 4,
	WEAVE_ERR_USER_MISMATCH = 5,
	WEAVE_ERR_JSON = 6,
	WEAVE_ERR_MISSING_PASSWORD = 7,
	WEAVE_ERR_INVALID_WBO = 8,
	WEAVE_ERR_WEAK_PASSWORD = 9,
	WEAVE_ERR_RESET_CODE = 10,
	WEAVE_ERR_UNSUPPORTED_FUNCTION = 11,
	WEAVE_ERR_NO_EMAIL = 12,
	WEAVE_ERR_COLLECTION = 13,
	WEAVE_ERR_OVER_QUOTA = 14,
	WEAVE_ERR_EMAIL_MISMATCH = 15,
	WEAVE_ERR_UPGRADE = 16,
	WEAVE_ERR_SIZE_LIMIT = 17,
	WEAVE_ERR__MAX
};

#define RESPONSE_MAX_BODY (64u * 1024 * 1024)
#define RESPONSE_MAX_HEADERS (16u * 1024)

struct response {
	int status;
	const char *content_type;
	struct buf headers;
	struct buf body;
	int64_t timestamp;   /* centiseconds; 0 = now at send time */
	int64_t backoff;     /* X-Weave-Backoff seconds; 0 = none */
	int64_t retry_after; /* Retry-After seconds on 503 */
};

void response_init(struct response *resp);
/* Drop status, headers and body (before a retry of the handler). */
void response_reset(struct response *resp);
void response_free(struct response *resp);

/* Add one header line. Names and values must not contain CR or LF. */
void resp_header(struct response *resp, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* resp_header(resp, name, "%lld", value), without printf's machinery:
 * a warm poll's one formatted header. */
void resp_header_int(struct response *resp, const char *name, int64_t value);

void response_set_timestamp(struct response *resp, int64_t centiseconds);

/* 200 with a JSON body already serialised. */
void resp_json(struct response *resp, const char *json, size_t len);
/* 200 with a text/plain body. */
void resp_text(struct response *resp, const char *text);
/* 200 with text/html. */
void resp_html(struct response *resp, const char *html, size_t len);

/* The single error exit; returns status, so a handler writes
 * `return resp_error(resp, 400, WEAVE_ERR_JSON);`. */
int resp_error(struct response *resp, int status, enum weave_error code);

/*
 * Retry-After for a 503 while the database cannot be reached: short at
 * first and doubling as the outage lasts, the smallest power of two
 * seconds not below outage_seconds, at most RESP_FAILOVER_RETRY_MAX and
 * never above ceiling (the operator's retry_after). A failover takes
 * seconds; a 10-minute Retry-After would stop every client syncing for
 * 10 minutes (docs/cluster.md).
 */
#define RESP_FAILOVER_RETRY_MAX 30
int64_t resp_failover_retry_after(int64_t outage_seconds, int64_t ceiling);

/* 503 for a database outage that has lasted outage_seconds, with
 * resp_failover_retry_after() below the retry_after already set. */
int resp_unavailable(struct response *resp, int64_t outage_seconds);

const char *http_status_text(int status);

/*
 * Write the whole response through write_fn (FastCGI or stdout); the
 * body is skipped when head_only. Returns 0 or -1 on a write error.
 */
typedef int (*response_write_fn)(void *ctx, const char *data, size_t len);
int response_send(struct response *resp, response_write_fn write_fn, void *ctx,
		  int head_only);

#endif
