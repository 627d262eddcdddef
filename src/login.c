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

#include <openssl/crypto.h>

#include "account_cache.h"
#include "auth.h"
#include "kdf_gate.h"
#include "change_board.h"
#include "config.h"
#include "handler.h"
#include "log.h"
#include "password.h"
#include "shared_credential.h"
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

/* One login on its way through the steps below: the request's state. */
struct login {
	struct request *req;
	struct response *resp;
	bool writes;
	struct user *user;
	struct credentials cred;
	struct login_subjects subjects;
	struct account_probe probe;  /* for reads: may keep the row read */
	struct login_counters counters;
	bool found;                  /* the row was read (not DB_NOT_FOUND) */
	struct login_verifier verifier; /* the row's shared verifier, if read */
	char *verified_hash;         /* the stored hash the KDF accepted */
};

/*
 * When this process last found the database unreachable (seconds; 0:
 * reached since), and when it last said so: process state, not the
 * request's. A read answered from a kept row during an outage is right
 * (nobody can change the account meanwhile), but the admin must see it.
 */
#define OUTAGE_SECONDS 10
static int64_t db_unreachable_at;
static int64_t outage_logged_at;

/* What a step gives: go on, or the login's outcome. */
enum step { STEP_NEXT, STEP_DONE, STEP_FAILED, STEP_RETRY };

static enum step refuse(struct login *l, const char *why)
{
	log_info("authentication failed: %s", why);
	resp_error(l->resp, 401, WEAVE_ERR_NONE);
	return STEP_FAILED;
}

static enum step db_failed(struct login *l, enum db_status st)
{
	if (st == DB_UNAVAILABLE)
		db_unreachable_at = l->req->started / 100;
	db_rollback();
	return handler_db_failure(l->req, l->resp, st) == HANDLER_RETRY ? STEP_RETRY
									: STEP_FAILED;
}

/*
 * The password KDF against stored, within the host's bound (kdf_gate.h)
 * and counted on the board (weave-admin cache): STEP_NEXT with *v, or
 * 503 answered when too many run at once.
 */
static enum step run_kdf(struct login *l, const char *stored, enum password_verdict *v)
{
	*v = PASSWORD_MISMATCH;
	int slot = kdf_gate_enter();
	if (slot < 0) {
		log_info("login not checked: %d password checks are running on this host",
			 change_board_kdf_running());
		l->resp->retry_after = KDF_RETRY_AFTER;
		resp_error(l->resp, 503, WEAVE_ERR_NONE);
		return STEP_FAILED;
	}
	change_board_count(BOARD_VERIFICATIONS);
	*v = password_verify(l->cred.password, l->cred.password_len, stored,
			     (int)l->req->cfg->password_cost);
	kdf_gate_leave(slot);
	return STEP_NEXT;
}

static bool right(enum password_verdict v)
{
	return v == PASSWORD_OK || v == PASSWORD_OK_REHASH;
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
	/* An upload that locks late bumps when it locks (write_lock.c). */
	if (!req->lock_pending)
		change_board_bump(user->id);
	req->started = now_centiseconds();
}

/* The password was right for the row read: note it, keep the row. */
static enum step succeeded(struct login *l)
{
	gate_login_succeeded(l->req, l->cred.username);
	/* Kept only with no failures on record: a kept row's logins never
	 * clear any (gate_login_succeeded). */
	if (!l->writes && !l->counters.name_counted)
		account_cache_put(&l->probe, l->user, l->req->started / 100);
	if (l->writes)
		write_begins(l->req, l->user);
	return STEP_DONE;
}

/* Step: Basic credentials present, well formed, with a valid name. */
static enum step parse_credentials(struct login *l)
{
	const char *source = NULL;
	enum auth_parse_status ps =
		auth_parse_basic(auth_find_header(l->req, &source), &l->cred);
	if (ps != AUTH_PARSE_OK) {
		log_info("authentication failed: %s%s%s", auth_parse_status_text(ps),
			 source ? " in " : "", source ? source : "");
		resp_error(l->resp, 401, WEAVE_ERR_NONE);
		return STEP_FAILED;
	}
	log_set_request(l->req->id, l->cred.username);
	log_debug("credentials found in %s", source);
	if (!validate_username(l->cred.username, l->cred.username_len))
		return refuse(l, "invalid user name");
	return STEP_NEXT;
}

/*
 * Step, reads only: answer from the host's kept row of the account when
 * the client address is not known to be locked and the account cache
 * vouches for row and password (account_cache.h, the promise). Rows are
 * kept only from logins with no failures on record, so such a login has
 * nothing to clear and is not recorded with the throttle.
 *
 * The request's time is taken before the board is read: see write_begins().
 */
static enum step kept_row(struct login *l)
{
	if (l->writes)
		return STEP_NEXT;
	int64_t started = now_centiseconds();
	int64_t now = started / 100;
	change_board_refresh();
	if (now < change_board_address_locked_until(request_client_address(l->req)))
		return STEP_NEXT;
	if (!account_cache_login(l->cred.username, l->cred.password, l->cred.password_len,
				 now, l->user))
		return STEP_NEXT;
	l->req->started = started;
	if (now - db_unreachable_at < OUTAGE_SECONDS && now - outage_logged_at >= OUTAGE_SECONDS) {
		log_warn("the database was unreachable %lld s ago: reads are answered "
			 "from kept account rows, writes get 503",
			 (long long)(now - db_unreachable_at));
		outage_logged_at = now;
	}
	return STEP_DONE;
}

/* Step: the user row and the throttle's counters, in share mode for a
 * read, locked in a new transaction for a write (read without a lock in
 * it for an upload that locks late: req->lock_pending, write_lock.h). */
static enum step load_account(struct login *l)
{
	enum db_status st;
	l->req->started = now_centiseconds();
	if (l->writes) {
		st = db_begin();
		if (st != DB_OK)
			return db_failed(l, st);
	} else {
		account_cache_probe(l->cred.username, &l->probe);
	}
	enum user_lock lock = !l->writes ? USER_LOCK_SHARED
			      : l->req->lock_pending ? USER_LOCK_NONE
						     : USER_LOCK_EXCLUSIVE;
	/* Here, not with the credentials: a poll answered from a kept row
	 * never reads the counters these name. */
	throttle_login_subjects(l->req->cfg, l->cred.username,
				request_client_address(l->req), &l->subjects);
	st = db_user_get_login(l->cred.username, lock,
			       &l->subjects, l->req->started / 100, l->user,
			       &l->counters, shared_credential_wanted() ? &l->verifier : NULL);
	if (st != DB_OK && st != DB_NOT_FOUND)
		return db_failed(l, st);
	db_unreachable_at = 0;
	l->found = st == DB_OK;
	return STEP_NEXT;
}

/* Step: a locked account or client address is refused unchecked. */
static enum step check_throttle(struct login *l)
{
	int64_t now = l->req->started / 100;
	if (throttle_login_locked(&l->counters, now)) {
		/* Perhaps locked by another web server: tell this host's
		 * processes, so kept rows do not bypass it. */
		if (l->found)
			change_board_bump(l->user->id);
		change_board_note_address_lock(request_client_address(l->req),
					       l->counters.address_locked_until);
		db_rollback();
		resp_error(l->resp, 401, WEAVE_ERR_NONE);
		return STEP_FAILED;
	}
	l->req->success_to_record = throttle_login_success_to_record(&l->counters, now);
	return STEP_NEXT;
}

/*
 * Step: an unknown name or a disabled account is refused, after paying
 * for a hash as every other refusal does (a fast answer would tell that
 * the account exists or not).
 */
static enum step check_state(struct login *l)
{
	enum password_verdict v;
	if (!l->found) {
		db_rollback();
		if (run_kdf(l, dummy_hash((int)l->req->cfg->password_cost), &v) != STEP_NEXT)
			return STEP_FAILED;
		gate_login_failed(l->req, l->cred.username, 0);
		return refuse(l, "no such user");
	}
	if (l->user->status != USER_STATUS_ENABLED && l->user->status != USER_STATUS_MOVING) {
		db_rollback();
		if (run_kdf(l, l->user->password_hash, &v) != STEP_NEXT)
			return STEP_FAILED;
		if (!right(v))
			gate_login_failed(l->req, l->cred.username, l->user->id);
		return refuse(l, "account disabled");
	}
	return STEP_NEXT;
}

/* Step: the credential cache vouches for the password of this row. */
static enum step cached_credential(struct login *l)
{
	if (!account_cache_credential_ok(l->user, l->cred.password, l->cred.password_len,
					 l->req->started / 100))
		return STEP_NEXT;
	return succeeded(l);
}

/* Step: a verification stored in the database by any web server vouches
 * for the password of this row (shared_credential.h): no KDF. */
static enum step shared_verification(struct login *l)
{
	if (!shared_credential_vouches(l->user, &l->verifier, l->cred.password,
				       l->cred.password_len, l->req->started / 100))
		return STEP_NEXT;
	return succeeded(l);
}

/*
 * The KDF for a password the cache did not vouch for, at most once per
 * host at a time (kdf_gate.h): if another process is verifying the same
 * one, its verdict is awaited instead. A password this process verified
 * is stored for the other web servers too, after the claim is given back
 * (a hash to be replaced is stored by rehash() instead).
 */
static enum step verify_once(struct login *l, enum password_verdict *v)
{
	const struct credentials *c = &l->cred;
	struct kdf_claim claim;
	enum step s = STEP_NEXT;
	bool verified_here = false;
	*v = PASSWORD_OK;
	if (!kdf_gate_claim(l->user, c->password, c->password_len, &claim)) {
		s = run_kdf(l, l->user->password_hash, v);
		verified_here = s == STEP_NEXT && right(*v);
		if (verified_here)
			account_cache_credential_put(l->user, c->password, c->password_len,
						     now_seconds());
	}
	kdf_gate_unclaim(&claim);
	if (verified_here && *v == PASSWORD_OK)
		shared_credential_put(l->user, c->password, c->password_len,
				      now_seconds());
	return s;
}

/*
 * Store fresh in place of the hash just verified, if that is still the
 * stored one: the KDF ran without the row lock, and a password changed
 * meanwhile must not be overwritten with the old one. Its own short
 * transaction (the login holds none here).
 */
static bool replace_verified_hash(const struct user *u, const char *fresh)
{
	struct user now;
	if (db_begin() != DB_OK)
		return false;
	enum db_status st = db_user_get(u->username, USER_LOCK_EXCLUSIVE, &now);
	bool same = st == DB_OK && now.id == u->id &&
		    strcmp(now.password_hash, u->password_hash) == 0;
	user_free(&now);
	if (same && db_user_set_password(u->id, fresh) == DB_OK && db_commit() == DB_OK)
		return true;
	db_rollback();
	if (st == DB_OK && !same)
		log_info("password not re-hashed: it changed during the login");
	return false;
}

/* A hash of an old scheme is replaced by one of the current scheme: a
 * KDF too, so within the host's bound (else at a later login). */
static void rehash(struct login *l)
{
	char fresh[PASSWORD_HASH_MAX];
	const struct credentials *c = &l->cred;
	int slot = kdf_gate_enter();
	if (slot < 0)
		return;
	int rc = password_hash(c->password, c->password_len,
			       (int)l->req->cfg->password_cost, fresh, sizeof fresh);
	kdf_gate_leave(slot);
	if (rc == 0 && replace_verified_hash(l->user, fresh)) {
		log_info("password re-hashed with the current scheme");
		free(l->user->password_hash);
		l->user->password_hash = xstrdup(fresh);
		account_cache_credential_put(l->user, c->password, c->password_len,
					     now_seconds());
		shared_credential_put(l->user, c->password, c->password_len,
				      now_seconds());
	}
	OPENSSL_cleanse(fresh, sizeof fresh);
}

/* Step: the KDF, never with the row lock held. A read is then done. */
static enum step verify(struct login *l)
{
	enum password_verdict v;
	db_rollback();
	if (verify_once(l, &v) != STEP_NEXT)
		return STEP_FAILED;
	if (v == PASSWORD_BAD_HASH) {
		const char *why = password_hash_problem(l->user->password_hash);
		log_error("stored password hash refused: %s", why ? why : "its KDF failed");
	}
	if (!right(v)) {
		gate_login_failed(l->req, l->cred.username, l->user->id);
		return refuse(l, "wrong password");
	}
	if (v == PASSWORD_OK_REHASH)
		rehash(l);
	if (!l->writes)
		return succeeded(l);
	l->verified_hash = xstrdup(l->user->password_hash);
	user_free(l->user);
	return STEP_NEXT;
}

/*
 * Step, writes only: the row read again, now under its lock, and checked
 * as the first time; the password holds if the hash is still the one
 * just verified (the credential cache may be off).
 */
static enum step relock(struct login *l)
{
	enum step s = load_account(l);
	if (s == STEP_NEXT)
		s = check_throttle(l);
	if (s == STEP_NEXT)
		s = check_state(l);
	if (s != STEP_NEXT)
		return s;
	if (strcmp(l->verified_hash, l->user->password_hash) != 0) {
		db_rollback();
		return refuse(l, "password changed during the request");
	}
	return succeeded(l);
}

/* The login, in the order of login.h's head comment. */
static enum step (*const steps[])(struct login *) = {
	parse_credentials, kept_row, load_account, check_throttle,
	check_state, cached_credential, shared_verification, verify, relock,
};

enum auth_outcome login_authenticate(struct request *req, struct response *resp,
				      bool writes, struct user *user)
{
	struct login l = { .req = req, .resp = resp, .writes = writes, .user = user };
	enum step s = STEP_NEXT;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0] && s == STEP_NEXT; i++)
		s = steps[i](&l);
	if (l.verified_hash != NULL)
		OPENSSL_cleanse(l.verified_hash, strlen(l.verified_hash));
	free(l.verified_hash);
	auth_credentials_wipe(&l.cred);
	if (s == STEP_DONE)
		return AUTH_DONE;
	user_free(user);
	return s == STEP_RETRY ? AUTH_RETRY : AUTH_FAILED;
}
