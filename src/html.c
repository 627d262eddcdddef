/* html.c - HTML escaping, the page skeleton and the headers of every page. */
#include "html.h"

#include <string.h>

int html_escape(struct buf *out, const char *s)
{
	int rc = 0;
	for (; *s != '\0' && rc == 0; s++) {
		switch (*s) {
		case '&': rc = buf_puts(out, "&amp;"); break;
		case '<': rc = buf_puts(out, "&lt;"); break;
		case '>': rc = buf_puts(out, "&gt;"); break;
		case '"': rc = buf_puts(out, "&quot;"); break;
		case '\'': rc = buf_puts(out, "&#39;"); break;
		default: rc = buf_putc(out, *s); break;
		}
	}
	return rc;
}

void html_open(struct buf *page, const char *title, const char *style)
{
	buf_puts(page, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		       "<meta charset=\"utf-8\">\n"
		       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		       "<title>");
	html_escape(page, title);
	buf_puts(page, "</title>\n<style>\n");
	buf_puts(page, style);
	buf_puts(page, "</style>\n</head>\n<body>\n");
}

void html_send(struct response *resp, int status, struct buf *page,
	       unsigned allow)
{
	buf_puts(page, "</body>\n</html>\n");
	resp_html(resp, page->data, page->len);
	resp->status = status;
	resp_header(resp, "Content-Security-Policy",
		    "default-src 'none'; %sstyle-src 'unsafe-inline'; "
		    "form-action 'self'; %sbase-uri 'none'",
		    (allow & HTML_ALLOW_DATA_IMAGES) ? "img-src data:; " : "",
		    (allow & HTML_ALLOW_FRAMING) ? "" : "frame-ancestors 'none'; ");
	if (!(allow & HTML_ALLOW_FRAMING))
		resp_header(resp, "X-Frame-Options", "DENY");
	resp_header(resp, "X-Content-Type-Options", "nosniff");
	resp_header(resp, "Referrer-Policy", "no-referrer");
	resp_header(resp, "Cache-Control", "no-store");
}

void html_page(struct response *resp, int status, const char *title,
	       const char *body_html)
{
	struct buf page, tab;
	buf_init(&page, RESPONSE_MAX_BODY);
	buf_init(&tab, RESPONSE_MAX_BODY);
	/* Which service this is, on every page and in every tab title. */
	buf_printf(&tab, "%s \xe2\x80\x94 Weave Sync", title);
	html_open(&page, tab.data,
		  "body{font-family:sans-serif;max-width:32em;margin:2em auto;padding:0 1em;color:#222}\n"
		  "label{display:block;margin-top:1em}\n"
		  "input[type=text],input[type=password]{width:100%;padding:.4em;box-sizing:border-box}\n"
		  "button{margin-top:1.2em;padding:.5em 1.2em}\n"
		  ".error{color:#a00}\n"
		  ".service{color:#666;margin-bottom:0}\n");
	buf_puts(&page, "<p class=\"service\">Weave Sync server</p>\n<h1>");
	html_escape(&page, title);
	buf_puts(&page, "</h1>\n");
	buf_puts(&page, body_html);
	buf_puts(&page, "\n");
	html_send(resp, status, &page, 0);
	buf_free(&tab);
	buf_free(&page);
}
