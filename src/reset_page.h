/*
 * reset_page.h - the HTML pages at /weave-password-reset, for people:
 *   GET               a form asking for the user name
 *   POST uid=NAME     mails a reset link (the 1.0 add-on posts this form
 *                     and looks for "Further instructions have been sent")
 *   GET ?username=&key=   a form for a new password (the mailed link)
 *   POST username, key, password, confirm   sets it
 */
#ifndef WEAVE_RESET_PAGE_H
#define WEAVE_RESET_PAGE_H

#include "request.h"
#include "response.h"

int reset_page(struct request *req, struct response *resp);

#endif
