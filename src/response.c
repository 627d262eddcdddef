/* response.c - status, headers and body; the single error exit. */
#include "response.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

void response_init(struct response *resp)
{
	memset(resp, 0, sizeof *resp);
	resp->status = 200;
	resp->content_type = "application/json";
	buf_init(&resp->headers, RESPONSE_MAX_HEADERS);
	buf_init(&resp->body, RESPONSE_MAX_BODY);
}

void response_reset(struct response *resp)
{
	resp->status = 200;
	resp->content_type = "application/json";
	buf_reset(&resp->headers);
	buf_reset(&resp->body);
}

void response_free(struct response *resp)
{
	buf_free(&resp->headers);
	buf_free(&resp->body);
}

void resp_header(struct response *resp, const char *name, const char *fmt, ...)
{
	size_t mark = resp->headers.len;
	va_list ap;
	buf_puts(&resp->headers, name);
	buf_puts(&resp->headers, ": ");
	va_start(ap, fmt);
	buf_vprintf(&resp->headers, fmt, ap);
	va_end(ap);
	/* Header injection is impossible by construction: drop CR/LF. */
	for (size_t i = mark; i < resp->headers.len; i++)
		if (resp->headers.data[i] == '\r' || resp->headers.data[i] == '\n')
			resp->headers.data[i] = ' ';
	buf_puts(&resp->headers, "\r\n");
}

void resp_header_int(struct response *resp, const char *name, int64_t value)
{
	buf_puts(&resp->headers, name);
	buf_puts(&resp->headers, ": ");
	buf_put_int(&resp->headers, value);
	buf_puts(&resp->headers, "\r\n");
}

void response_set_timestamp(struct response *resp, int64_t centiseconds)
{
	resp->timestamp = centiseconds;
}

void resp_json(struct response *resp, const char *json, size_t len)
{
	resp->status = 200;
	resp->content_type = "application/json";
	buf_reset(&resp->body);
	buf_append(&resp->body, json, len);
}

void resp_text(struct response *resp, const char *text)
{
	resp->status = 200;
	resp->content_type = "text/plain; charset=utf-8";
	buf_reset(&resp->body);
	buf_puts(&resp->body, text);
}

void resp_html(struct response *resp, const char *html, size_t len)
{
	resp->status = 200;
	resp->content_type = "text/html; charset=utf-8";
	buf_reset(&resp->body);
	buf_append(&resp->body, html, len);
}

int resp_error(struct response *resp, int status, enum weave_error code)
{
	resp->status = status;
	resp->content_type = "application/json";
	buf_reset(&resp->body);
	buf_printf(&resp->body, "%d", (int)code);
	if (status == 401 && code != WEAVE_ERR_USER_MISMATCH)
		resp_header(resp, "WWW-Authenticate", "Basic realm=\"Weave\"");
	if (status == 503) {
		if (resp->retry_after <= 0)
			resp->retry_after = 600;
		if (resp->backoff <= 0)
			resp->backoff = resp->retry_after;
		resp_header(resp, "Retry-After", "%lld",
			    (long long)resp->retry_after);
	}
	return status;
}

int64_t resp_failover_retry_after(int64_t outage_seconds, int64_t ceiling)
{
	int64_t limit = ceiling < RESP_FAILOVER_RETRY_MAX ? ceiling
							  : RESP_FAILOVER_RETRY_MAX;
	int64_t seconds = 1;
	while (seconds < outage_seconds && seconds < limit)
		seconds *= 2;
	if (seconds > limit)
		seconds = limit;
	return seconds < 1 ? 1 : seconds;
}

int resp_unavailable(struct response *resp, int64_t outage_seconds)
{
	int64_t ceiling = resp->retry_after > 0 ? resp->retry_after : 600;
	resp->retry_after = resp_failover_retry_after(outage_seconds, ceiling);
	return resp_error(resp, 503, WEAVE_ERR_NONE);
}

const char *http_status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 302: return "Found";
	case 303: return "See Other";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 412: return "Precondition Failed";
	case 413: return "Request Entity Too Large";
	case 414: return "Request-URI Too Long";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

int response_send(struct response *resp, response_write_fn write_fn, void *ctx,
		  int head_only)
{
	char stamp[32];
	struct buf head;
	int rc;

	format_timestamp(resp->timestamp ? resp->timestamp : now_centiseconds(),
			 stamp, sizeof stamp);
	buf_init(&head, RESPONSE_MAX_HEADERS * 2);
	/* Every answer's head: pieces put in place, as printf() would cost a
	 * sixth of a warm poll here. */
	buf_puts(&head, "Status: ");
	buf_put_int(&head, resp->status);
	buf_putc(&head, ' ');
	buf_puts(&head, http_status_text(resp->status));
	buf_puts(&head, "\r\nContent-Type: ");
	buf_puts(&head, resp->content_type);
	buf_puts(&head, "\r\nContent-Length: ");
	buf_put_int(&head, (int64_t)resp->body.len);
	buf_puts(&head, "\r\nX-Weave-Timestamp: ");
	buf_puts(&head, stamp);
	buf_puts(&head, "\r\n");
	if (resp->backoff > 0) {
		buf_puts(&head, "X-Weave-Backoff: ");
		buf_put_int(&head, resp->backoff);
		buf_puts(&head, "\r\n");
	}
	if (resp->headers.len > 0)
		buf_append(&head, resp->headers.data, resp->headers.len);
	buf_puts(&head, "\r\n");
	rc = write_fn(ctx, head.data, head.len);
	if (rc == 0 && !head_only && resp->body.len > 0)
		rc = write_fn(ctx, resp->body.data, resp->body.len);
	buf_free(&head);
	return rc;
}
