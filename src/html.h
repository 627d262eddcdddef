/*
 * html.h - small HTML pages for people (password reset): escaping and
 * one page skeleton with the security headers every page carries.
 */
#ifndef WEAVE_HTML_H
#define WEAVE_HTML_H

#include "buf.h"
#include "response.h"

/* Append s with & < > " ' escaped. */
int html_escape(struct buf *out, const char *s);

/*
 * Answer `status` with a complete page: title (escaped) and body_html
 * (already safe HTML), under a line naming the service (in the tab
 * title too). Adds CSP (no scripts, no framing), nosniff,
 * no-referrer and no-store headers.
 */
void html_page(struct response *resp, int status, const char *title,
	       const char *body_html);

#endif
