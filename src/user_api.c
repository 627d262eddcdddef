/* user_api.c - User API handlers: accounts, node, passwords, e-mail. */
#include "user_api.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "account_name.h"
#include "body.h"
#include "captcha.h"
#include "client_address.h"
#include "config.h"
#include "db_storage.h"
#include "db_user.h"
#include "handler.h"
#include "log.h"
#include "password.h"
#include "reset_flow.h"
#include "storage_place.h"
#include "throttle.h"
#include "util.h"
#include "validate.h"

static int answer_text(struct response *resp, const char *text)
{
	resp_text(resp, text);
	return 200;
}

void user_public_url(const struct request *req, struct buf *out)
{
	if (req->cfg->public_url != NULL) {
		buf_puts(out, req->cfg->public_url);
		return;
	}
	const char *https = request_env(req, "HTTPS");
	const char *host = request_env(req, "HTTP_HOST");
	const char *script = request_env(req, "SCRIPT_NAME");
	buf_printf(out, "%s://%s%s",
		   (https && strcmp(https, "on") == 0) ? "https" : "http",
		   host ? host : "localhost", script ? script : "");
	if (out->len == 0 || out->data[out->len - 1] != '/')
		buf_putc(out, '/');
}

/* GET user/<u>: 200 "1" taken, "0" free ("1" for all when registration is off). */
int user_exists(struct request *req, struct response *resp)
{
	int exists = 0;
	if (!req->cfg->registration)
		return answer_text(resp, "1");
	enum db_status st = db_user_exists(req->path_user, &exists);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	return answer_text(resp, exists ? "1" : "0");
}

/* A string member of obj, or NULL. */
static const char *string_member(struct json_object *obj, const char *key,
				 size_t *len)
{
	struct json_object *v;
	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	if (len != NULL)
		*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* Is key in obj with a value that is neither a string nor null? */
static bool member_not_string(struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(obj, key, &v) && v != NULL &&
	       !json_object_is_type(v, json_type_string);
}

/* The password sits in json-c's string buffer: wipe it before release. */
static void wipe_password_member(struct json_object *obj)
{
	struct json_object *v;
	if (json_object_object_get_ex(obj, "password", &v) &&
	    json_object_is_type(v, json_type_string))
		OPENSSL_cleanse((char *)json_object_get_string(v),
				(size_t)json_object_get_string_len(v));
}

/* 400 2 / 503 unless the captcha in obj verifies. Returns 0 to go on. */
static int check_captcha(struct request *req, struct response *resp,
			 struct json_object *obj)
{
	const char *challenge = string_member(obj, "captcha-challenge", NULL);
	const char *answer = string_member(obj, "captcha-response", NULL);
	const char *address = request_client_address(req);
	enum captcha_verdict v = captcha_verify(req->cfg, challenge ? challenge : "",
						answer ? answer : "",
						address ? address : "",
						now_seconds());
	if (v == CAPTCHA_OK)
		return 0;
	log_info("registration refused: captcha %s", captcha_verdict_text(v));
	if (v == CAPTCHA_UNAVAILABLE)
		return resp_error(resp, 503, WEAVE_ERR_NONE);
	return resp_error(resp, 400, WEAVE_ERR_CAPTCHA);
}

/* 429 when this address registered registration_limit accounts in the window. */
static int check_registration_rate(struct request *req, struct response *resp,
				   const char *address)
{
	int64_t count = 0, now = now_seconds();
	if (req->cfg->registration_limit <= 0)
		return 0;
	enum db_status st = db_registrations_since(
		address, now - req->cfg->registration_window, &count);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	if (count >= req->cfg->registration_limit) {
		log_warn("registration refused: %lld accounts from %s in the last %lld s",
			 (long long)count, address, (long long)req->cfg->registration_window);
		resp_header(resp, "Retry-After", "%lld",
			    (long long)req->cfg->registration_window);
		return resp_error(resp, 429, WEAVE_ERR_NONE);
	}
	return 0;
}

int user_registration_parse(struct json_object *obj, const char *path_user,
			    struct registration *out)
{
	memset(out, 0, sizeof *out);
	out->email = string_member(obj, "email", &out->email_len);
	if (out->email != NULL && out->email_len == 0)
		out->email = NULL;
	/* A number or list is an invalid address, not a missing one. */
	if (member_not_string(obj, "email") ||
	    (out->email != NULL &&
	     (!validate_email(out->email, out->email_len) ||
	      memchr(out->email, '\0', out->email_len) != NULL)))
		return WEAVE_ERR_NO_EMAIL;
	if (out->email != NULL && account_name_is_hashed(path_user)) {
		char mapped[USERNAME_MAX + 1];
		if (!account_name_normalise(out->email, out->email_len, mapped) ||
		    strcmp(mapped, path_user) != 0)
			return WEAVE_ERR_EMAIL_MISMATCH;
	}
	out->password = string_member(obj, "password", &out->password_len);
	if (out->password == NULL || out->password_len == 0)
		return WEAVE_ERR_MISSING_PASSWORD;
	if (password_check_new(out->password, out->password_len, path_user) !=
	    NEW_PASSWORD_OK)
		return WEAVE_ERR_WEAK_PASSWORD;
	return 0;
}

/* Where a sign-up comes from, counted by network as throttle.h counts: an
 * IPv6 host has a /64 to pick addresses from. */
static const char *registration_address(struct request *req,
					char net[CLIENT_ADDRESS_MAX])
{
	const char *address = request_client_address(req);
	if (address == NULL)
		address = "";
	if (client_address_network(address, net, CLIENT_ADDRESS_MAX) == 0)
		address = net;
	return address;
}

/* The new account's row, on the storage node with room (docs/protocol.md,
 * Storage nodes): 0, or the status answered. */
static int store_account(struct request *req, struct response *resp,
			 const struct registration *reg, const char *hash)
{
	char *node = NULL;
	enum db_status st = db_node_pick(&node);
	if (st == DB_NOT_FOUND) {
		log_warn("registration refused: every storage node is full "
			 "(weave-admin node list)");
		return resp_error(resp, 503, WEAVE_ERR_NONE);
	}
	if (st == DB_OK)
		st = db_user_create(req->path_user, hash, reg->email, node, NULL);
	free(node);
	if (st == DB_CONFLICT)
		return resp_error(resp, 400, WEAVE_ERR_OVERWRITE);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	return 0;
}

/*
 * PUT user/<u>: create from {"password", "email", "captcha-challenge",
 * "captcha-response"}. 200 with the lower-case name; 400 11 registration
 * off; 400 6 bad JSON; 400 4 name taken; 400 12 bad e-mail (invalid, or
 * not a string); 400 15
 * e-mail does not hash to the name; 400 7 no password; 400 9 weak;
 * 400 2 captcha; 429 too many from this address; 503 (also when every
 * storage node is full). The account goes to db_node_pick()'s node. X-Weave-Secret
 * equal to the configured admin secret skips the switch, captcha and
 * rate limit.
 */
int user_create(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	bool admin = req->admin_secret_ok;
	int status = 0;
	char hash[PASSWORD_HASH_MAX];
	char net[CLIENT_ADDRESS_MAX];
	const char *address = registration_address(req, net);

	/* A sign-up spends its captcha and inserts the account outside one
	 * transaction: after a lost connection it must not run again (its
	 * right answer would read as replayed, and the account may exist
	 * already). The client gets 503 and asks again. */
	req->db_tried_again = true;
	if (!cfg->registration && !admin) {
		log_info("registration refused: registration is off");
		return resp_error(resp, 400, WEAVE_ERR_UNSUPPORTED_FUNCTION);
	}
	struct json_object *obj = body_parse_json(req, resp);
	if (obj == NULL)
		return 400;
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		return resp_error(resp, 400, WEAVE_ERR_JSON);
	}
	int exists = 0;
	enum db_status st = db_user_exists(req->path_user, &exists);
	if (st != DB_OK) {
		status = handler_db_failure(req, resp, st);
		goto done;
	}
	if (exists) {
		status = resp_error(resp, 400, WEAVE_ERR_OVERWRITE);
		goto done;
	}
	struct registration reg;
	int code = user_registration_parse(obj, req->path_user, &reg);
	if (code != 0) {
		status = resp_error(resp, 400, (enum weave_error)code);
		goto done;
	}
	/* The rate limit first: a refused request must not spend the
	 * person's challenge (nor call a remote verifier). */
	if (!admin && (status = check_registration_rate(req, resp, address)) != 0)
		goto done;
	if (!admin && cfg->captcha && (status = check_captcha(req, resp, obj)) != 0)
		goto done;
	if (password_hash(reg.password, reg.password_len, (int)cfg->password_cost, hash,
			  sizeof hash) < 0) {
		status = resp_error(resp, 503, WEAVE_ERR_NONE);
		goto done;
	}
	if ((status = store_account(req, resp, &reg, hash)) != 0)
		goto done;
	if (!admin) {
		int64_t now = now_seconds();
		db_registration_record(address, now, now - cfg->registration_window);
	}
	log_info("registered user %s%s", req->path_user, admin ? " (admin secret)" : "");
	status = answer_text(resp, req->path_user);
done:
	wipe_password_member(obj);
	json_object_put(obj);
	return status;
}

/* GET user/<u>/node/weave: 200 the node URL ending in '/'; 404 unknown user; 503. */
int user_node(struct request *req, struct response *resp)
{
	struct user u;
	enum db_status st = db_user_get(req->path_user, USER_LOCK_NONE, &u);
	if (st == DB_NOT_FOUND)
		return resp_error(resp, 404, WEAVE_ERR_NONE);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	struct buf url;
	buf_init(&url, 4096);
	if (u.node != NULL && u.node[0] != '\0') {
		buf_puts(&url, u.node);
		if (url.data[url.len - 1] != '/')
			buf_putc(&url, '/');
	} else {
		user_public_url(req, &url);
	}
	int status = answer_text(resp, url.data);
	buf_free(&url);
	user_free(&u);
	return status;
}

/*
 * Load the path's account with its row locked, for the routes where a
 * reset code or the admin secret stood in for Basic auth. Returns 0, or
 * the status already answered (404 unknown user, 503).
 */
static int load_path_user_locked(struct request *req, struct response *resp,
				 struct user *out)
{
	enum db_status st = db_user_get(req->path_user, USER_LOCK_EXCLUSIVE, out);
	if (st == DB_NOT_FOUND)
		return resp_error(resp, 404, WEAVE_ERR_NONE);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	return 0;
}

/*
 * POST user/<u>/password, body = the new password as raw text.
 * Authenticated by Basic auth, or by X-Weave-Password-Reset: <code>
 * instead. 200 "success"; 400 7 empty; 400 9 weak; 400 10 wrong or
 * expired reset code; 401; 404 unknown user (reset code path); 429 too
 * many wrong codes from this address (throttle.h); 503.
 */
int user_change_password(struct request *req, struct response *resp)
{
	struct user loaded;
	const struct user *u = req->user;
	int status;

	memset(&loaded, 0, sizeof loaded);
	if (u == NULL) {
		/* The gate let us in on the strength of a reset code: check it. */
		const char *code = request_header(req, "X-Weave-Password-Reset");
		int64_t retry_after = 0;
		enum db_status st;
		if ((status = load_path_user_locked(req, resp, &loaded)) != 0)
			return status;
		u = &loaded;
		switch (reset_redeem_code(req, u, code, &retry_after, &st)) {
		case RESET_REDEEM_OK:
			break;
		case RESET_REDEEM_THROTTLED:
			resp_header(resp, "Retry-After", "%lld", (long long)retry_after);
			status = resp_error(resp, 429, WEAVE_ERR_NONE);
			goto done;
		case RESET_REDEEM_WRONG:
			log_info("password change refused: wrong or expired reset code");
			status = resp_error(resp, 400, WEAVE_ERR_RESET_CODE);
			goto done;
		case RESET_REDEEM_DB_FAILED:
		default:
			status = handler_db_failure(req, resp, st);
			goto done;
		}
	}
	size_t len;
	char *password = body_text(req, &len);
	int rc = reset_store_password(req, u, password, len);
	OPENSSL_cleanse(password, len);
	free(password);
	if (rc > 0)
		status = resp_error(resp, 400, (enum weave_error)rc);
	else if (rc < 0)
		status = resp_error(resp, 503, WEAVE_ERR_NONE);
	else
		status = answer_text(resp, "success");
done:
	user_free(&loaded);
	return status;
}

/*
 * GET user/<u>/password_reset: mail a reset code. 200 "success"; 400 3
 * unknown user; 400 12 no e-mail; 429 too many requests (throttle.h); 503.
 */
int user_request_reset(struct request *req, struct response *resp)
{
	struct user u;
	int64_t retry_after;
	enum db_status st;
	switch (throttle_reset_request(req->cfg, req->path_user,
				       request_client_address(req),
				       now_seconds(), &retry_after, &st)) {
	case THROTTLE_ALLOW:
		break;
	case THROTTLE_DENY:
		log_info("password reset refused: too many requests");
		resp_header(resp, "Retry-After", "%lld", (long long)retry_after);
		return resp_error(resp, 429, WEAVE_ERR_NONE);
	case THROTTLE_DB_FAILED:
	default:
		return handler_db_failure(req, resp, st);
	}
	st = db_user_get(req->path_user, USER_LOCK_NONE, &u);
	if (st == DB_NOT_FOUND)
		return resp_error(resp, 400, WEAVE_ERR_USERNAME);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	int rc = reset_send_code(req, &u);
	user_free(&u);
	if (rc == WEAVE_ERR_NO_EMAIL)
		return resp_error(resp, 400, WEAVE_ERR_NO_EMAIL);
	if (rc != 0) {
		return resp_error(resp, 503, WEAVE_ERR_NONE);
	}
	return answer_text(resp, "success");
}

/* DELETE user/<u>/password_reset (Basic auth): forget a pending code. 200 "success"; 401; 503. */
int user_clear_reset(struct request *req, struct response *resp)
{
	enum db_status st = db_reset_clear(req->user->id);
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	return answer_text(resp, "success");
}

/* POST user/<u>/email (Basic auth), body = the new address. 200 the address; 400 12 invalid; 401; 503. */
int user_change_email(struct request *req, struct response *resp)
{
	size_t len;
	char *text = body_text(req, &len);
	char *start = text;
	while (len > 0 && (*start == ' ' || *start == '\t' || *start == '\r' ||
			   *start == '\n')) {
		start++;
		len--;
	}
	while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t' ||
			   start[len - 1] == '\r' || start[len - 1] == '\n'))
		len--;
	start[len] = '\0';
	int status;
	if (!validate_email(start, len) || memchr(start, '\0', len) != NULL) {
		status = resp_error(resp, 400, WEAVE_ERR_NO_EMAIL);
	} else {
		enum db_status st = db_user_set_email(req->user->id, start);
		status = st == DB_OK ? answer_text(resp, start)
				     : handler_db_failure(req, resp, st);
	}
	free(text);
	return status;
}

/*
 * DELETE user/<u>: the account and all its records, in one transaction.
 * Basic auth as the user, or X-Weave-Secret with the admin secret.
 * 200 "0" (as documented for User API 1.0); 401; 404 unknown user
 * (admin secret path); 503.
 */
int user_delete(struct request *req, struct response *resp)
{
	struct user loaded;
	const struct user *u = req->user;

	memset(&loaded, 0, sizeof loaded);
	if (u == NULL) {
		int status = load_path_user_locked(req, resp, &loaded);
		if (status != 0)
			return status;
		u = &loaded;
	}
	int64_t id = u->id;
	enum db_status st = storage_place_forget_records(req->cfg, id, u->node);
	user_free(&loaded);
	if (st == DB_OK)
		st = db_reset_clear(id);
	if (st == DB_OK)
		st = db_user_delete(id);
	if (st != DB_OK && st != DB_NOT_FOUND)
		return handler_db_failure(req, resp, st);
	log_info("deleted account %s and its records", req->path_user);
	return answer_text(resp, "0");
}

/* 400 1. */
int user_unknown_action(struct request *req, struct response *resp)
{
	(void)req;
	return resp_error(resp, 400, WEAVE_ERR_ILLEGAL_METHOD);
}
