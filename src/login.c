/*
 * login.c - the login: credentials in, an account or a refusal out. Behind
 * it: the throttle's gates (throttle_gate.h), this process's kept rows
 * (account_cache.h) and the change board, the user row, the password
 * verification and its re-hash, the credential cache. Also the admin
 * secret, which counts as a login of the client address.
 */
#include "login.h"

#include <stdlib.h>
#include <string.h>

#include "account_cache.h"
#include "auth.h"
#include "change_board.h"
#include "config.h"
#include "handler.h"
#include "log.h"
#include "password.h"
#include "throttle.h"
#include "throttle_gate.h"
#include "util.h"
#include "validate.h"

/* A hash that no password matches, verified for unknown users so that
 * their answers take as long as those for real accounts. */
static const char *dummy_hash(int cost)
{
	static char hash[PASSWORD_HASH_MAX];
	static int hash_cost;
	if (hash_cost != cost) {
		unsigned char random_password[16] = { 0 };
		if (password_hash((const char *)random_password,
				  sizeof random_password, cost, hash,
				  sizeof hash) == 0)
			hash_cost = cost;
	}
	return hash;
}

/*
 * X-Weave-Secret against the configured admin secret, compared in
 * constant time; a wrong one counts as a failed login of the client
 * address, and a locked address is not checked at all.
 */
bool login_check_admin_secret(struct request *req)
{
	const char *secret = req->cfg->admin_secret;
	const char *given = request_header(req, "X-Weave-Secret");
	enum db_status st;
	if (secret == NULL || secret[0] == '\0' || given == NULL)
		return false;
	int allowed = gate_address_allowed(req, &st);
	if (allowed <= 0) {
		log_info("admin secret not checked: %s",
			 allowed == 0 ? "the client address is locked"
				      : db_status_text(st));
		return false;
	}
	size_t len = strlen(secret);
	if (strlen(given) == len && bytes_equal_const_time(secret, given, len))
		return true;
	log_info("wrong admin secret");
	gate_login_failed(req, NULL, 0);
	return false;
}

/*
 * A read may skip the database and answer from this process's kept row
 * of the account when the client address is not known to be locked,
 * account_cache_get() still gives the row (unchanged on the change
 * board, younger than account_cache_seconds; docs/HACKING.md, Caches)
 * and the password hits the credential cache for that row's hash. Rows
 * are kept only from logins with no failures on record, so such a login
 * has nothing to clear and is not recorded with the throttle. true with
 * *user filled.
 *
 * The request's time is taken before the board is read: see write_begins().
 */
static bool login_from_kept_row(struct request *req,
				const struct credentials *cred, struct user *user)
{
	int64_t started = now_centiseconds();
	int64_t now = started / 100;
	change_board_refresh();
	if (now < change_board_address_locked_until(request_client_address(req)))
		return false;
	if (!account_cache_get(cred->username, now, user))
		return false;
	if (!auth_cache_lookup(cred->username, user->password_hash, cred->password,
			       cred->password_len)) {
		user_free(user);
		return false;
	}
	req->started = started;
	return true;
}

/* The password KDF, counted on the board (weave-admin cache). */
static enum password_verdict verify_password(const struct credentials *cred,
					     const char *stored, int cost)
{
	change_board_count(BOARD_VERIFICATIONS);
	return password_verify(cred->password, cred->password_len, stored, cost);
}

/*
 * The KDF for credentials the cache did not vouch for, run at most once
 * per host at a time: if another process is verifying the same ones, its
 * verdict is awaited instead (auth.h).
 */
static enum password_verdict verify_once(const struct credentials *cred,
					 const char *stored, int cost)
{
	if (auth_cache_wait_or_claim(cred->username, stored, cred->password,
				     cred->password_len))
		return PASSWORD_OK;
	enum password_verdict v = verify_password(cred, stored, cost);
	if (v == PASSWORD_OK || v == PASSWORD_OK_REHASH)
		auth_cache_store(cred->username, stored, cred->password,
				 cred->password_len);
	else
		auth_cache_abandon(cred->username, stored, cred->password,
				   cred->password_len);
	return v;
}

/*
 * A write now holds its account's row lock, until its commit. It marks the
 * account changed on the board, and only then takes its time, from which
 * its timestamp follows. That keeps X-Weave-Timestamp a safe high-water
 * mark for newer=: a read that found the board unmarked took its own time
 * earlier, so it answers with a timestamp below this write's; a read that
 * finds it marked reads the row LOCK IN SHARE MODE and waits for the
 * commit. (The time is taken after the lock for reads of the database
 * too: one that read the row just before the lock started earlier.)
 */
static void write_begins(struct request *req, const struct user *user)
{
	change_board_bump(user->id);
	req->started = now_centiseconds();
}

/* login.h. The order of the checks is that of login.h's head comment. */
enum auth_outcome login_authenticate(struct request *req, struct response *resp,
				      bool writes, struct user *user)
{
	const struct config *cfg = req->cfg;
	struct credentials cred;
	const char *source = NULL;
	enum auth_outcome outcome = AUTH_FAILED;
	enum db_status st;
	char *verified_hash = NULL; /* the stored hash the KDF accepted */

	enum auth_parse_status ps =
		auth_parse_basic(auth_find_header(req, &source), &cred);
	if (ps != AUTH_PARSE_OK) {
		log_info("authentication failed: %s%s%s", auth_parse_status_text(ps),
			 source ? " in " : "", source ? source : "");
		resp_error(resp, 401, WEAVE_ERR_NONE);
		goto done;
	}
	log_set_request(req->id, cred.username);
	log_debug("credentials found in %s", source);
	if (!validate_username(cred.username, cred.username_len)) {
		log_info("authentication failed: invalid user name");
		resp_error(resp, 401, WEAVE_ERR_NONE);
		goto done;
	}
	struct login_subjects subjects;
	throttle_login_subjects(cfg, cred.username, request_client_address(req),
				&subjects);

	if (!writes && login_from_kept_row(req, &cred, user)) {
		outcome = AUTH_DONE;
		goto done;
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		req->started = now_centiseconds();
		if (writes) {
			st = db_begin();
			if (st != DB_OK)
				goto db_failed;
		}
		/* Reads may keep the row they read (account_cache.h). */
		struct account_probe probe = { 0 };
		if (!writes)
			account_cache_probe(cred.username, &probe);
		struct login_counters counters;
		st = db_user_get_login(cred.username,
				       writes ? USER_LOCK_EXCLUSIVE : USER_LOCK_SHARED,
				       &subjects, req->started / 100, user,
				       &counters);
		if (st != DB_OK && st != DB_NOT_FOUND)
			goto db_failed;
		if (throttle_login_locked(&counters, req->started / 100)) {
			/* Perhaps locked by another web server: tell this
			 * host's processes, so kept rows do not bypass it. */
			if (st == DB_OK)
				change_board_bump(user->id);
			change_board_note_address_lock(request_client_address(req),
						       counters.address_locked_until);
			db_rollback();
			resp_error(resp, 401, WEAVE_ERR_NONE);
			goto done;
		}
		req->success_to_record =
			throttle_login_success_to_record(&counters, req->started / 100);
		if (st == DB_NOT_FOUND) {
			db_rollback();
			verify_password(&cred, dummy_hash((int)cfg->password_cost),
					(int)cfg->password_cost);
			log_info("authentication failed: no such user");
			gate_login_failed(req, cred.username, 0);
			resp_error(resp, 401, WEAVE_ERR_NONE);
			goto done;
		}
		if (user->status != 1) {
			db_rollback();
			/* Pay for the hash as every other refusal does: a fast
			 * answer would tell that the account exists. */
			enum password_verdict pv = verify_password(
				&cred, user->password_hash, (int)cfg->password_cost);
			if (pv != PASSWORD_OK && pv != PASSWORD_OK_REHASH)
				gate_login_failed(req, cred.username, user->id);
			log_info("authentication failed: account disabled");
			resp_error(resp, 401, WEAVE_ERR_NONE);
			goto done;
		}
		/* Kept only with no failures on record: a kept row's logins
		 * never clear any (gate_login_succeeded). */
		bool keep = !writes && !counters.name_counted;
		bool verified = verified_hash != NULL &&
				strcmp(verified_hash, user->password_hash) == 0;
		if (verified || auth_cache_lookup(cred.username, user->password_hash,
						  cred.password, cred.password_len)) {
			gate_login_succeeded(req, cred.username);
			if (keep)
				account_cache_put(&probe, user, req->started / 100);
			if (writes)
				write_begins(req, user);
			outcome = AUTH_DONE;
			goto done;
		}
		if (attempt == 1)
			break; /* the hash changed while we verified: give up */
		/* Never hold the row lock while the slow KDF runs. */
		db_rollback();
		enum password_verdict v =
			verify_once(&cred, user->password_hash, (int)cfg->password_cost);
		const char *why = v == PASSWORD_BAD_HASH
					  ? password_hash_problem(user->password_hash) : NULL;
		if (v == PASSWORD_BAD_HASH)
			log_error("stored password hash refused: %s",
				  why ? why : "its KDF failed");
		if (v != PASSWORD_OK && v != PASSWORD_OK_REHASH) {
			log_info("authentication failed: wrong password");
			gate_login_failed(req, cred.username, user->id);
			resp_error(resp, 401, WEAVE_ERR_NONE);
			goto done;
		}
		if (v == PASSWORD_OK_REHASH) {
			char fresh[PASSWORD_HASH_MAX];
			if (password_hash(cred.password, cred.password_len,
					  (int)cfg->password_cost, fresh,
					  sizeof fresh) == 0 &&
			    db_user_set_password(user->id, fresh) == DB_OK) {
				log_info("password re-hashed with the current scheme");
				free(user->password_hash);
				user->password_hash = xstrdup(fresh);
			}
		}
		if (v == PASSWORD_OK_REHASH)
			auth_cache_store(cred.username, user->password_hash,
					 cred.password, cred.password_len);
		gate_login_succeeded(req, cred.username);
		if (!writes) {
			if (keep)
				account_cache_put(&probe, user, req->started / 100);
			outcome = AUTH_DONE;
			goto done;
		}
		/* Load again, now under the row lock; the password holds if the
		 * hash is still the one just verified (the credential cache may
		 * be off). */
		verified_hash = xstrdup(user->password_hash);
		user_free(user);
	}
	log_info("authentication failed: password changed during the request");
	resp_error(resp, 401, WEAVE_ERR_NONE);
	goto done;

db_failed:
	db_rollback();
	outcome = handler_db_failure(req, resp, st) == HANDLER_RETRY ? AUTH_RETRY
								      : AUTH_FAILED;
done:
	free(verified_hash);
	auth_credentials_wipe(&cred);
	return outcome;
}
