/*
 * reset_flow.c - the password-reset flow the User API and the reset pages
 * share: mail a code, redeem a code (one use, throttled), store the new
 * password.
 */
#include "reset_flow.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "account_name.h"
#include "buf.h"
#include "config.h"
#include "db_user.h"
#include "log.h"
#include "mail.h"
#include "password.h"
#include "reset_code.h"
#include "response.h"
#include "throttle.h"
#include "util.h"

/*
 * The domain of the mail's From: when mail_from is unset: public_url's
 * host when that is set, since the server name Apache passes on is the
 * requester's Host header (with UseCanonicalName Off, its default).
 */
static void mail_domain(const struct request *req, char *out, size_t cap)
{
	size_t n = 0;
	const char *host = req->cfg->public_url != NULL
				   ? url_host(req->cfg->public_url, false, &n)
				   : NULL;
	if (n == 0 || n >= cap) {
		host = request_env(req, "SERVER_NAME");
		if (host == NULL || host[0] == '\0')
			host = "localhost";
		n = strlen(host);
	}
	snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), host);
}

/* The mail's From: mail_from, else "Weave Sync <weave@DOMAIN>". */
static void from_header(const struct request *req, struct buf *from)
{
	if (req->cfg->mail_from != NULL) {
		buf_puts(from, req->cfg->mail_from);
		return;
	}
	char domain[256];
	mail_domain(req, domain, sizeof domain);
	buf_printf(from, "Weave Sync <weave@%s>", domain);
}

/* An e-mail login knows its account by the address, not by the hashed
 * name it is stored under: name it so, in the text and the link. */
static const char *shown_name(const struct user *u, char mapped[USERNAME_MAX + 1])
{
	if (account_name_normalise(u->email, strlen(u->email), mapped) &&
	    strcmp(mapped, u->username) == 0)
		return u->email;
	return u->username;
}

/* s percent-encoded for a query value (unreserved characters and '@' kept). */
static void put_query_value(struct buf *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '.' || c == '_' || c == '-' || c == '@')
			buf_putc(out, (char)c);
		else
			buf_printf(out, "%%%02X", c);
	}
}

/* The mail's text: the code, and where to enter it. */
static void write_body(struct buf *body, const struct config *cfg,
		       const char *shown, const char *code)
{
	long long hours = (long long)(cfg->reset_code_lifetime + 3599) / 3600;
	/* The code never goes into the link: a URL ends up in web server
	 * logs, proxies and browser histories, where a live code must not. */
	buf_printf(body,
		   "Someone (hopefully you) asked to reset the password of the sync\n"
		   "account \"%s\".\n\n"
		   "Your reset code is:\n\n"
		   "  %s\n\n",
		   shown, code);
	/* Only a configured URL makes the link: one built from the request's
	 * Host header would let whoever asked for the mail point the owner
	 * at a page of its own, where the owner would type the code. */
	if (cfg->public_url != NULL) {
		buf_printf(body,
			   "To choose a new password, open this page within %lld hours and\n"
			   "enter the code there (dashes and case do not matter):\n\n"
			   "  %sweave-password-reset?username=",
			   hours, cfg->public_url);
		put_query_value(body, shown);
		buf_puts(body, "\n\n");
	} else {
		log_warn("reset mail sent without a link: set public_url in "
			 "weave.conf so that it can carry one");
		buf_printf(body,
			   "To choose a new password within %lld hours, open the page\n"
			   "weave-password-reset of your sync server (the address you\n"
			   "set up for syncing, followed by weave-password-reset) and\n"
			   "enter the code there (dashes and case do not matter).\n\n",
			   hours);
	}
	buf_puts(body, "If you did not ask for this, ignore this message: your password\n"
		       "stays as it is.\n");
}

int reset_send_code(const struct request *req, const struct user *u)
{
	const struct config *cfg = req->cfg;
	char code[RESET_CODE_TEXT_MAX];
	unsigned char hash[32];

	if (u->email == NULL || u->email[0] == '\0')
		return WEAVE_ERR_NO_EMAIL;
	if (reset_code_make(code) < 0 || reset_code_hash(code, hash) < 0)
		return -1;
	int64_t expires = now_seconds() + cfg->reset_code_lifetime;
	if (db_reset_store(u->id, hash, expires) != DB_OK)
		return -1;

	struct buf body, from;
	char mapped[USERNAME_MAX + 1];
	buf_init(&body, 16384);
	buf_init(&from, 512);
	from_header(req, &from);
	write_body(&body, cfg, shown_name(u, mapped), code);
	int rc = mail_send(cfg->sendmail_command, from.data, u->email,
			   "Reset your sync account password", body.data);
	if (rc == 0)
		log_info("password reset code mailed");
	OPENSSL_cleanse(code, sizeof code);
	buf_free_secret(&body);
	buf_free(&from);
	return rc;
}

int reset_store_password(const struct request *req, const struct user *u,
			const char *password, size_t len)
{
	char hash[PASSWORD_HASH_MAX];
	switch (password_check_new(password, len, u->username)) {
	case NEW_PASSWORD_OK:
		break;
	case NEW_PASSWORD_EMPTY:
		return WEAVE_ERR_MISSING_PASSWORD;
	default:
		return WEAVE_ERR_WEAK_PASSWORD;
	}
	if (password_hash(password, len, (int)req->cfg->password_cost, hash,
			  sizeof hash) < 0)
		return -1;
	if (db_user_set_password(u->id, hash) != DB_OK ||
	    db_reset_clear(u->id) != DB_OK)
		return -1;
	log_info("password of %s changed", u->username);
	return 0;
}

enum reset_redeem reset_redeem_code(struct request *req, const struct user *u,
				    const char *code, int64_t *retry_after,
				    enum db_status *st)
{
	unsigned char hash[32];
	*st = DB_OK;
	switch (throttle_code_check(req->cfg, request_client_address(req),
				    now_seconds(), retry_after, st)) {
	case THROTTLE_ALLOW:
		break;
	case THROTTLE_DENY:
		log_info("reset code not checked: too many wrong ones from this "
			 "address");
		return RESET_REDEEM_THROTTLED;
	case THROTTLE_DB_FAILED:
	default:
		return RESET_REDEEM_DB_FAILED;
	}
	if (u == NULL || code == NULL || reset_code_hash(code, hash) < 0)
		*st = DB_NOT_FOUND;
	else
		*st = db_reset_take(u->id, hash, now_seconds());
	OPENSSL_cleanse(hash, sizeof hash);
	if (*st == DB_NOT_FOUND) {
		/* Counted by gate_settle_logins() after the transaction. */
		req->reset_code_failed = true;
		return RESET_REDEEM_WRONG;
	}
	return *st == DB_OK ? RESET_REDEEM_OK : RESET_REDEEM_DB_FAILED;
}
