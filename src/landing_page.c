/* landing_page.c - the HTML page at the mount root: the server, the URL to enter, sign-up. */
#include "landing_page.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "html.h"
#include "user_api.h"
#include "util.h"

/* Only a request that names JSON and never HTML is a program's. */
static bool wants_json(const struct request *req)
{
	const char *accept = request_env(req, "HTTP_ACCEPT");
	return accept != NULL && strstr(accept, "application/json") != NULL &&
	       strstr(accept, "text/html") == NULL;
}

int landing_page(struct request *req, struct response *resp)
{
	if (wants_json(req))
		return resp_error(resp, 404, WEAVE_ERR_NONE);
	struct buf url, body;
	buf_init(&url, 4096);
	buf_init(&body, 16384);
	user_public_url(req, &url);
	/* The host part names the server: "sync.example.org". */
	size_t host_len;
	const char *host = url_host(url.data, true, &host_len);
	char name[256];
	snprintf(name, sizeof name, "%.*s", (int)(host_len < 255 ? host_len : 255), host);

	buf_puts(&body, "<p>This is <strong>");
	html_escape(&body, name);
	buf_puts(&body, "</strong>, a Weave Sync server: it keeps the encrypted bookmarks, "
			"history, passwords, tabs and preferences of Firefox 4 to 28, "
			"Pale Moon and the Weave add-on, for the accounts it holds.</p>\n"
			"<p>To sync with it, choose <em>Use a custom server</em> when you "
			"set up Sync and enter this address:</p>\n<p><code>");
	html_escape(&body, url.data);
	buf_puts(&body, "</code></p>\n");
	if (req->cfg->registration)
		buf_puts(&body, "<p>Sign-up is <strong>open</strong>: create an account from "
				"the client's set-up.</p>\n");
	else
		buf_puts(&body, "<p>Sign-up is <strong>closed</strong>: the administrator "
				"creates accounts.</p>\n");
	buf_puts(&body, "<p>Your passphrase (sync key) never leaves your devices; the "
			"server sees only encrypted records.</p>\n"
			"<p><a href=\"");
	html_escape(&body, url.data);
	buf_puts(&body, "weave-password-reset\">Forgot your password?</a></p>\n");
	html_page(resp, 200, name, body.data);
	buf_free(&url);
	buf_free(&body);
	return 200;
}
