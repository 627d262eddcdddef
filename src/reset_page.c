/* reset_page.c - password-reset pages: ask for a name, then the code and a new password. */
#include "reset_page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "account_name.h"
#include "buf.h"
#include "db_user.h"
#include "html.h"
#include "log.h"
#include "password.h"
#include "reset_flow.h"
#include "throttle.h"
#include "util.h"
#include "validate.h"

static const char *field(const struct request *req, const char *name)
{
	const struct query_param *p = request_param(req, name);
	return p ? p->value : NULL;
}

static void ask_username_page(struct response *resp, const char *error)
{
	struct buf b;
	buf_init(&b, 65536);
	if (error != NULL) {
		buf_puts(&b, "<p class=\"error\">");
		html_escape(&b, error);
		buf_puts(&b, "</p>\n");
	}
	buf_puts(&b, "<p>Enter the name of your sync account. If it has an e-mail "
		     "address, a link to choose a new password is sent there.</p>\n"
		     "<form method=\"post\" action=\"weave-password-reset\">\n"
		     "<label for=\"uid\">User name</label>\n"
		     "<input type=\"text\" id=\"uid\" name=\"uid\" autocomplete=\"username\" required>\n"
		     "<button type=\"submit\">Send reset link</button>\n</form>\n");
	html_page(resp, error ? 400 : 200, "Reset your password", b.data);
	buf_free(&b);
}

/*
 * The form for the code and a new password. code is what the person
 * typed in a form that came back with an error, never a value from the
 * URL: a code in a URL would stand in access logs.
 */
static void new_password_page(struct response *resp, int status,
			      const char *username, const char *code,
			      const char *error_html)
{
	struct buf b;
	buf_init(&b, 65536);
	if (error_html != NULL) {
		buf_puts(&b, "<p class=\"error\">");
		buf_puts(&b, error_html);
		buf_puts(&b, "</p>\n");
	} else {
		buf_puts(&b, "<p>Enter the reset code from the mail (dashes and case "
			     "do not matter) and choose a new password.</p>\n");
	}
	buf_puts(&b, "<form method=\"post\" action=\"weave-password-reset\">\n"
		     "<label for=\"username\">User name</label>\n"
		     "<input type=\"text\" id=\"username\" name=\"username\" value=\"");
	html_escape(&b, username ? username : "");
	buf_puts(&b, "\" autocomplete=\"username\" required>\n"
		     "<label for=\"key\">Reset code</label>\n"
		     "<input type=\"text\" id=\"key\" name=\"key\" value=\"");
	html_escape(&b, code ? code : "");
	buf_puts(&b, "\" autocomplete=\"off\" autocapitalize=\"characters\" "
		     "spellcheck=\"false\" required>\n"
		     "<label for=\"password\">New password (at least 8 characters)</label>\n"
		     "<input type=\"password\" id=\"password\" name=\"password\" "
		     "autocomplete=\"new-password\" required>\n"
		     "<label for=\"confirm\">New password again</label>\n"
		     "<input type=\"password\" id=\"confirm\" name=\"confirm\" "
		     "autocomplete=\"new-password\" required>\n"
		     "<button type=\"submit\">Change password</button>\n</form>\n"
		     "<p><a href=\"weave-password-reset\">Ask for a new code</a></p>\n");
	html_page(resp, status, "Choose a new password", b.data);
	buf_free(&b);
}

/* The same form again with a plain-text reason (escaped here). */
static void new_password_again(struct response *resp, int status,
			       const char *username, const char *code,
			       const char *why)
{
	struct buf e;
	buf_init(&e, 4096);
	html_escape(&e, why);
	new_password_page(resp, status, username, code, e.data);
	buf_free(&e);
}

/* The account name as typed (account_name.h); false if it is none. */
static bool account_name(const char *typed, char out[USERNAME_MAX + 1])
{
	return account_name_normalise(typed, strlen(typed), out);
}

/* POST uid=NAME: mail a code; the answer never tells whether NAME exists. */
static int send_link(struct request *req, struct response *resp, const char *uid)
{
	char name[USERNAME_MAX + 1];
	struct user u;

	if (!account_name(uid, name)) {
		ask_username_page(resp, "That is not a valid user name.");
		return 400;
	}
	int64_t retry_after;
	enum db_status st;
	switch (throttle_reset_request(req->cfg, name, request_client_address(req),
				       now_seconds(), &retry_after, &st)) {
	case THROTTLE_ALLOW:
		break;
	case THROTTLE_DENY:
		log_info("password reset for %s refused: too many requests", name);
		resp_header(resp, "Retry-After", "%lld", (long long)retry_after);
		html_page(resp, 429, "Too many requests",
			  "<p>Too many password resets were asked for this account "
			  "or from your network. Please try again later.</p>");
		return 429;
	case THROTTLE_DB_FAILED:
	default:
		goto unavailable;
	}
	st = db_user_get(name, USER_LOCK_NONE, &u);
	if (st == DB_OK) {
		int rc = reset_send_code(req, &u);
		if (rc == WEAVE_ERR_NO_EMAIL)
			log_info("password reset for %s: no e-mail address on file", name);
		else if (rc != 0)
			log_error("password reset for %s: the mail could not be sent", name);
		user_free(&u);
	} else if (st == DB_NOT_FOUND) {
		log_info("password reset asked for unknown user %s", name);
	} else {
		goto unavailable;
	}
	/* The 1.0 add-on looks for "Further instructions have been sent". */
	struct buf b;
	buf_init(&b, 4096);
	buf_puts(&b, "<p>Further instructions have been sent to the e-mail address "
		     "of the account, if it has one. The reset code in the message "
		     "is valid for a few hours.</p>\n"
		     "<p><a href=\"weave-password-reset?username=");
	buf_puts(&b, name); /* a valid name: URL- and HTML-safe */
	buf_puts(&b, "\">Enter the code</a></p>\n");
	html_page(resp, 200, "Check your mail", b.data);
	buf_free(&b);
	return 200;
unavailable:
	html_page(resp, 503, "Try again later",
		  "<p>The server cannot reach its database right now. "
		  "Please try again in a few minutes.</p>");
	return 503;
}

static int set_password(struct request *req, struct response *resp)
{
	const char *username = field(req, "username");
	const char *key = field(req, "key");
	const struct query_param *pw = request_param(req, "password");
	const char *confirm = field(req, "confirm");
	char name[USERNAME_MAX + 1];
	struct user u;

	if (username == NULL || !account_name(username, name)) {
		new_password_again(resp, 400, username, key, "Please enter your user name.");
		return 400;
	}
	if (pw == NULL || confirm == NULL || strcmp(pw->value, confirm) != 0) {
		new_password_again(resp, 400, username, key, "The two passwords differ.");
		return 400;
	}
	enum new_password_verdict verdict =
		password_check_new(pw->value, pw->value_len, name);
	if (verdict != NEW_PASSWORD_OK) {
		char why[160];
		const char *text = password_check_text(verdict);
		snprintf(why, sizeof why, "%c%s.", text[0] - 'a' + 'A', text + 1);
		new_password_again(resp, 400, username, key, why);
		return 400;
	}
	enum db_status st;
	int64_t retry_after = 0;
	memset(&u, 0, sizeof u);
	if (db_begin() != DB_OK)
		goto unavailable;
	st = db_user_get(name, USER_LOCK_EXCLUSIVE, &u);
	if (st != DB_OK && st != DB_NOT_FOUND)
		goto unavailable;
	switch (reset_redeem_code(req, st == DB_OK ? &u : NULL, key, &retry_after,
				  &st)) {
	case RESET_REDEEM_OK: {
		int rc = reset_store_password(req, &u, pw->value, pw->value_len);
		st = rc == 0 ? DB_OK : DB_ERROR;
		break;
	}
	case RESET_REDEEM_THROTTLED: {
		char why[160];
		db_rollback();
		user_free(&u);
		snprintf(why, sizeof why,
			 "Too many wrong reset codes came from your network. Please "
			 "try again in %lld minutes.", (long long)(retry_after + 59) / 60);
		resp_header(resp, "Retry-After", "%lld", (long long)retry_after);
		new_password_again(resp, 429, username, key, why);
		return 429;
	}
	case RESET_REDEEM_WRONG:
		db_rollback();
		user_free(&u);
		log_info("password reset for %s refused: wrong, used or expired code",
			 name);
		new_password_page(resp, 400, username, key,
				  "That reset code is wrong, used or expired. Check it "
				  "against the mail and try again below, or "
				  "<a href=\"weave-password-reset\">ask for a new one</a>.");
		return 400;
	case RESET_REDEEM_DB_FAILED:
	default:
		break;
	}
	user_free(&u);
	if (st != DB_OK || db_commit() != DB_OK)
		goto unavailable;
	html_page(resp, 200, "Password changed",
		  "<p>Your password has been changed. Use the new password on every "
		  "device that syncs with this account.</p>");
	return 200;
unavailable:
	db_rollback();
	html_page(resp, 503, "Try again later",
		  "<p>The server cannot change the password right now. Please try "
		  "again in a few minutes.</p>");
	return 503;
}

/*
 * GET or POST /weave-password-reset. 200 pages; 400 the page again with
 * the reason (bad name, passwords differ or too weak, wrong or used
 * code); 503 when the database is unreachable.
 */
int reset_page(struct request *req, struct response *resp)
{
	int status;
	if (req->method == METHOD_POST &&
	    request_parse_form(req) != REQUEST_OK) {
		ask_username_page(resp, "The form could not be read.");
		return 400;
	}
	const char *uid = field(req, "uid");
	if (req->method == METHOD_POST && uid != NULL)
		status = send_link(req, resp, uid);
	else if (req->method == METHOD_POST)
		status = set_password(req, resp);
	else if (field(req, "username") != NULL || field(req, "key") != NULL) {
		/* A key= in the URL (links of older mails) is not taken:
		 * the person types it from the mail. */
		new_password_page(resp, 200, field(req, "username"), NULL, NULL);
		status = 200;
	} else {
		ask_username_page(resp, NULL);
		status = 200;
	}
	/* Form values may hold a password: wipe them before they are freed. */
	for (size_t i = 0; i < req->nparams; i++)
		OPENSSL_cleanse(req->params[i].value, req->params[i].value_len);
	return status;
}
