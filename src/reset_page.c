/* reset_page.c - password-reset pages: ask for a name, then the code and a new password. */
#include "reset_page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "auth.h"
#include "buf.h"
#include "db_user.h"
#include "html.h"
#include "log.h"
#include "password.h"
#include "reset_code.h"
#include "throttle.h"
#include "user_api.h"
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

/* The account name as typed: lower-cased, e-mail logins hashed; NULL if invalid. */
static bool account_name(const char *typed, char out[USERNAME_MAX + 1])
{
	size_t len = strlen(typed);
	if (memchr(typed, '@', len) != NULL) {
		if (!validate_email(typed, len))
			return false;
		auth_email_to_username(typed, len, out);
		return true;
	}
	if (!validate_username(typed, len))
		return false;
	memcpy(out, typed, len + 1);
	ascii_lower(out);
	return true;
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
				       (int64_t)time(NULL), &retry_after, &st)) {
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
		int rc = user_send_reset_code(req, &u);
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
	unsigned char hash[32];
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
	int64_t retry_after;
	switch (throttle_code_check(req->cfg, request_client_address(req),
				    (int64_t)time(NULL), &retry_after, &st)) {
	case THROTTLE_ALLOW:
		break;
	case THROTTLE_DENY: {
		char why[160];
		log_info("reset code for %s not checked: too many wrong ones from "
			 "this address", name);
		snprintf(why, sizeof why,
			 "Too many wrong reset codes came from your network. Please "
			 "try again in %lld minutes.", (long long)(retry_after + 59) / 60);
		resp_header(resp, "Retry-After", "%lld", (long long)retry_after);
		new_password_again(resp, 429, username, key, why);
		return 429;
	}
	case THROTTLE_DB_FAILED:
	default:
		goto unavailable;
	}
	if (db_begin() != DB_OK)
		goto unavailable;
	st = db_user_get(name, USER_LOCK_EXCLUSIVE, &u);
	if (st == DB_OK) {
		if (key == NULL || reset_code_hash(key, hash) < 0)
			st = DB_NOT_FOUND;
		else
			st = db_reset_take(u.id, hash, (int64_t)time(NULL));
		if (st == DB_OK) {
			int rc = user_store_password(req, &u, pw->value, pw->value_len);
			st = rc == 0 ? DB_OK : DB_ERROR;
		}
		user_free(&u);
	}
	if (st == DB_NOT_FOUND) {
		db_rollback();
		req->reset_code_failed = true;
		log_info("password reset for %s refused: wrong, used or expired code",
			 name);
		new_password_page(resp, 400, username, key,
				  "That reset code is wrong, used or expired. Check it "
				  "against the mail and try again below, or "
				  "<a href=\"weave-password-reset\">ask for a new one</a>.");
		return 400;
	}
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
