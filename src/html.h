/*
 * html.h - small HTML pages for people (password reset, the landing
 * page, the CAPTCHA page): escaping, the page skeleton and the security
 * headers every page carries.
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

/* For a page that needs more than html_page() allows (flags). */
enum html_allow {
	HTML_ALLOW_DATA_IMAGES = 1, /* <img src="data:..."> */
	HTML_ALLOW_FRAMING = 2,     /* any site may show the page in a frame */
};

/*
 * Start a page of one's own in page: doctype, charset, viewport, the
 * title (escaped) and style (a trusted style sheet), up to and with
 * <body>. The caller appends the body, then calls html_send().
 */
void html_open(struct buf *page, const char *title, const char *style);

/*
 * Close page (</body></html>) and answer `status` with it and the
 * headers: CSP (no scripts, forms to this site only; data: pictures and
 * framing only as `allow` says, X-Frame-Options DENY without
 * HTML_ALLOW_FRAMING), nosniff, no-referrer and no-store. The caller
 * still owns and frees page.
 */
void html_send(struct response *resp, int status, struct buf *page,
	       unsigned allow);

#endif
