/*
 * reset_page.h - the HTML pages at /weave-password-reset, for people:
 *   GET               a form asking for the user name
 *   POST uid=NAME     mails a reset code (the 1.0 add-on posts this form
 *                     and looks for "Further instructions have been sent")
 *   GET ?username=    a form for the code and a new password (the mailed
 *                     link; the code is typed, never carried in the URL)
 *   POST username, key, password, confirm   sets it
 */
#ifndef WEAVE_RESET_PAGE_H
#define WEAVE_RESET_PAGE_H

#include "request.h"
#include "response.h"

int reset_page(struct request *req, struct response *resp);

#endif
