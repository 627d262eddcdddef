/*
 * landing_page.h - the page at the mount root (https://host/weave/), for
 * the person who opens the server's URL in a browser, as the clients'
 * set-up asks them to (to accept the certificate): it names the server,
 * the URL to enter as the custom server, and whether sign-up is open.
 */
#ifndef WEAVE_LANDING_PAGE_H
#define WEAVE_LANDING_PAGE_H

#include "request.h"
#include "response.h"

/*
 * GET <mount>/: 200 with the HTML page. A request that asks for JSON and
 * not HTML keeps the answer the mount root always gave: 404 with Weave
 * code 0.
 */
int landing_page(struct request *req, struct response *resp);

#endif
