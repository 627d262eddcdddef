/* route.c - the route table, the gate and the transaction around a handler. */
#include "route.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "account_cache.h"
#include "auth.h"
#include "captcha.h"
#include "change_board.h"
#include "config.h"
#include "db_history.h"
#include "db_user.h"
#include "landing_page.h"
#include "log.h"
#include "password.h"
#include "reset_page.h"
#include "settings.h"
#include "storage_api.h"
#include "throttle.h"
#include "user_api.h"
#include "util.h"
#include "validate.h"

#define ANY METHOD__MAX
#define MAX_DEADLOCK_RETRIES 5

struct route {
	enum http_method method; /* ANY matches every method */
	const char *pattern;
	route_handler handler;
	unsigned flags;
};

/*
 * The whole API on one screen. Patterns are '/'-separated tokens:
 * {sver} = 1 | 1.0 | 1.1, {user}, {coll}, {id} capture one segment,
 * '*' matches one or more segments, anything else is literal. The first
 * row whose pattern and method match wins; a pattern that matches with
 * the wrong method falls through to the catch-all rows below it.
 */
static const struct route routes[] = {
	{ METHOD_GET, "{sver}/{user}/info/collections", storage_info_collections,
	  NEEDS_AUTH | USER_MUST_MATCH },
	{ METHOD_GET, "{sver}/{user}/info/collection_counts",
	  storage_info_collection_counts, NEEDS_AUTH | USER_MUST_MATCH },
	{ METHOD_GET, "{sver}/{user}/info/quota", storage_info_quota,
	  NEEDS_AUTH | USER_MUST_MATCH },
	{ METHOD_GET, "{sver}/{user}/info/collection_usage",
	  storage_info_collection_usage, NEEDS_AUTH | USER_MUST_MATCH },
	{ ANY, "{sver}/{user}/info", storage_illegal_method, 0 },
	{ METHOD_GET, "{sver}/{user}/storage/{coll}", storage_get_collection,
	  NEEDS_AUTH | USER_MUST_MATCH },
	{ METHOD_POST, "{sver}/{user}/storage/{coll}", storage_post_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | READS_BODY | WRITES },
	{ METHOD_PUT, "{sver}/{user}/storage/{coll}", storage_post_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | READS_BODY | WRITES },
	{ METHOD_DELETE, "{sver}/{user}/storage/{coll}", storage_delete_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | WRITES },
	{ METHOD_GET, "{sver}/{user}/storage/{coll}/{id}", storage_get_record,
	  NEEDS_AUTH | USER_MUST_MATCH },
	{ METHOD_PUT, "{sver}/{user}/storage/{coll}/{id}", storage_put_record,
	  NEEDS_AUTH | USER_MUST_MATCH | READS_BODY | WRITES },
	{ METHOD_DELETE, "{sver}/{user}/storage/{coll}/{id}", storage_delete_record,
	  NEEDS_AUTH | USER_MUST_MATCH | WRITES },
	{ METHOD_DELETE, "{sver}/{user}/storage", storage_delete_all,
	  NEEDS_AUTH | USER_MUST_MATCH | WRITES },
	{ ANY, "{sver}/{user}/storage", storage_illegal_method, 0 },
	{ ANY, "{sver}/{user}/storage/*", storage_illegal_method, 0 },
	{ ANY, "{sver}/{user}/info/*", storage_illegal_method, 0 },
	{ METHOD_GET, "misc/{uver}/captcha_html", misc_captcha_html, 0 },
	{ METHOD_POST, "misc/{uver}/captcha_html", misc_captcha_html, 0 },
	{ ANY, "{sver}/{user}/*", storage_unsupported_function, 0 },

	{ METHOD_GET, "user/{uver}/{user}", user_exists, 0 },
	{ METHOD_PUT, "user/{uver}/{user}", user_create, READS_BODY | ADMIN_SECRET_OK },
	{ METHOD_DELETE, "user/{uver}/{user}", user_delete,
	  NEEDS_AUTH | USER_MUST_MATCH | WRITES | ADMIN_SECRET_OK },
	{ METHOD_GET, "user/{uver}/{user}/node/weave", user_node, 0 },
	{ METHOD_POST, "user/{uver}/{user}/password", user_change_password,
	  NEEDS_AUTH | USER_MUST_MATCH | READS_BODY | WRITES | RESET_CODE_OK },
	{ METHOD_GET, "user/{uver}/{user}/password_reset", user_request_reset, 0 },
	{ METHOD_DELETE, "user/{uver}/{user}/password_reset", user_clear_reset,
	  NEEDS_AUTH | USER_MUST_MATCH | WRITES },
	{ METHOD_POST, "user/{uver}/{user}/email", user_change_email,
	  NEEDS_AUTH | USER_MUST_MATCH | READS_BODY | WRITES },
	{ ANY, "user/{uver}/{user}", user_unknown_action, 0 },
	{ ANY, "user/{uver}/{user}/*", user_unknown_action, 0 },

	{ METHOD_GET, "weave-password-reset", reset_page, 0 },
	{ METHOD_POST, "weave-password-reset", reset_page, READS_BODY },

	{ METHOD_GET, "", landing_page, 0 }, /* the mount root, for people */
};

#define NROUTES (sizeof routes / sizeof routes[0])

struct match {
	const char *user;
	const char *collection;
	const char *record_id;
	size_t user_len, collection_len, record_id_len;
};

static bool match_pattern(const char *pattern, const struct request *req,
			  struct match *m)
{
	size_t seg = 0;
	const char *p = pattern;

	memset(m, 0, sizeof *m);
	while (*p != '\0') {
		const char *slash = strchr(p, '/');
		size_t tlen = slash ? (size_t)(slash - p) : strlen(p);
		if (tlen == 1 && p[0] == '*')
			return seg < req->nsegments;
		if (seg >= req->nsegments)
			return false;
		const char *s = req->segments[seg];
		size_t slen = req->segment_lens[seg];
		if (tlen == 6 && memcmp(p, "{sver}", 6) == 0) {
			if (strcmp(s, "1.0") != 0 && strcmp(s, "1") != 0 &&
			    strcmp(s, "1.1") != 0)
				return false;
		} else if (tlen == 6 && memcmp(p, "{uver}", 6) == 0) {
			if (strcmp(s, "1.0") != 0 && strcmp(s, "1") != 0)
				return false;
		} else if (tlen == 6 && memcmp(p, "{user}", 6) == 0) {
			m->user = s;
			m->user_len = slen;
		} else if (tlen == 6 && memcmp(p, "{coll}", 6) == 0) {
			m->collection = s;
			m->collection_len = slen;
		} else if (tlen == 4 && memcmp(p, "{id}", 4) == 0) {
			m->record_id = s;
			m->record_id_len = slen;
		} else if (tlen != slen || memcmp(p, s, tlen) != 0) {
			return false;
		}
		seg++;
		p = slash ? slash + 1 : p + tlen;
	}
	return seg == req->nsegments;
}

/* The first route for this path and method, or NULL; *path_known if any pattern matched. */
static const struct route *find_route(const struct request *req, struct match *m)
{
	for (size_t i = 0; i < NROUTES; i++) {
		if (!match_pattern(routes[i].pattern, req, m))
			continue;
		if (routes[i].method == ANY || routes[i].method == req->method)
			return &routes[i];
	}
	return NULL;
}

/* Is there a row for this path under some other method? */
static bool path_known(const struct request *req)
{
	struct match m;
	for (size_t i = 0; i < NROUTES; i++)
		if (match_pattern(routes[i].pattern, req, &m))
			return true;
	return false;
}

/* The methods of the rows, catch-alls aside, whose pattern fits the path. */
static unsigned methods_for_path(const struct request *req)
{
	struct match m;
	unsigned methods = 0;
	for (size_t i = 0; i < NROUTES; i++)
		if (routes[i].method != ANY &&
		    match_pattern(routes[i].pattern, req, &m))
			methods |= 1u << routes[i].method;
	return methods;
}

/*
 * Sync 1.1 clients were written against server-core's routing, which
 * answers a method a resource lacks with 405 and an Allow header;
 * 1.0 and 1 keep the PHP server's 400 1. Returns -1 with the 405
 * answered, else 0.
 */
static int check_method_1_1(const struct request *req, struct response *resp)
{
	static const char *const names[METHOD__MAX] = {
		[METHOD_GET] = "GET", [METHOD_PUT] = "PUT",
		[METHOD_POST] = "POST", [METHOD_DELETE] = "DELETE",
	};
	if (req->nsegments == 0 || strcmp(req->segments[0], "1.1") != 0)
		return 0;
	unsigned methods = methods_for_path(req);
	if (methods == 0 || (methods & (1u << req->method)) != 0)
		return 0;
	char allow[64] = "";
	size_t used = 0;
	for (int i = 0; i < METHOD__MAX; i++)
		if ((methods & (1u << i)) && names[i] != NULL)
			used += (size_t)snprintf(allow + used, sizeof allow - used,
						 "%s%s", used ? ", " : "", names[i]);
	resp_error(resp, 405, WEAVE_ERR_NONE);
	resp_header(resp, "Allow", "%s", allow);
	return -1;
}

/* Validate and store the captured path fields; answers 400 on a bad one. */
static int take_path_fields(struct request *req, struct response *resp,
			    const struct match *m)
{
	if (m->user != NULL) {
		char *user = (char *)m->user;
		if (memchr(user, '@', m->user_len) != NULL) {
			char mapped[33];
			auth_email_to_username(user, m->user_len, mapped);
			/* Segments are ours: replace in place (mapped is never longer
			 * than an e-mail that contains '@' plus 31 bytes; reallocate). */
			for (size_t i = 0; i < req->nsegments; i++) {
				if (req->segments[i] == m->user) {
					free(req->segments[i]);
					req->segments[i] = xstrdup(mapped);
					req->segment_lens[i] = 32;
					user = req->segments[i];
				}
			}
		}
		ascii_lower(user);
		if (!validate_username(user, strlen(user))) {
			resp_error(resp, 400, WEAVE_ERR_USERNAME);
			return -1;
		}
		req->path_user = user;
	}
	if (m->collection != NULL) {
		if (!validate_collection(m->collection, m->collection_len)) {
			resp_error(resp, 400, WEAVE_ERR_COLLECTION);
			return -1;
		}
		req->collection = m->collection;
	}
	if (m->record_id != NULL) {
		if (!validate_wbo_id(m->record_id, m->record_id_len)) {
			resp_error(resp, 400, WEAVE_ERR_INVALID_WBO);
			return -1;
		}
		req->record_id = m->record_id;
	}
	return 0;
}

static int read_body(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	const char *cl = request_env(req, "CONTENT_LENGTH");
	int64_t declared = -1;
	size_t limit = (size_t)cfg->max_request_bytes;

	if (cl != NULL && *cl != '\0' &&
	    parse_int64(cl, 0, INT64_MAX, &declared) < 0) {
		resp_error(resp, 400, WEAVE_ERR_NONE);
		return -1;
	}
	if (declared > (int64_t)limit) {
		log_info("request body of %lld bytes is over max_request_bytes (%zu)",
			 (long long)declared, limit);
		resp_error(resp, 413, WEAVE_ERR_SIZE_LIMIT);
		return -1;
	}
	size_t want = declared >= 0 ? (size_t)declared : limit + 1;
	size_t cap = declared >= 0 ? want : 65536;
	char *body = xmalloc(cap + 1);
	size_t have = 0;
	while (have < want && req->read_body != NULL) {
		if (have == cap) {
			cap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
			body = xrealloc(body, cap + 1);
		}
		long n = req->read_body(req->read_ctx, body + have, cap - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (have > limit) {
		free(body);
		resp_error(resp, 413, WEAVE_ERR_SIZE_LIMIT);
		return -1;
	}
	body[have] = '\0';
	req->body = body;
	req->body_len = have;
	return 0;
}

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

int handler_db_failure(struct request *req, struct response *resp,
		       enum db_status st)
{
	if (st == DB_RETRY)
		return HANDLER_RETRY;
	/* The server went away before anything was committed: run the
	 * request once more, on the next server of db_host. */
	if (st == DB_UNAVAILABLE && !req->db_tried_again) {
		req->db_tried_again = true;
		return HANDLER_RETRY;
	}
	/* Every storage failure is "try again later" for a sync client. */
	resp_error(resp, 503, WEAVE_ERR_NONE);
	return 503;
}

/* May the admin secret be checked from this address? 1 yes, 0 no, -1 *st failed. */
static int gate_address_allowed(struct request *req, enum db_status *st)
{
	switch (throttle_address_check(req->cfg, request_client_address(req),
				       now_centiseconds() / 100, st)) {
	case THROTTLE_ALLOW:
		return 1;
	case THROTTLE_DENY:
		return 0;
	case THROTTLE_DB_FAILED:
	default:
		return -1;
	}
}

/* Names reaching here are valid, so never longer than the field. */
static void copy_name(char *dst, size_t cap, const char *name)
{
	size_t len = name != NULL ? strnlen(name, cap - 1) : 0;
	memcpy(dst, name != NULL ? name : "", len);
	dst[len] = '\0';
}

/* The secret tried on name (NULL: no account) was wrong: count it.
 * user_id: the account's id, 0 if there is none. */
static void gate_login_failed(struct request *req, const char *name,
			      int64_t user_id)
{
	req->login_failed = true;
	copy_name(req->failed_name, sizeof req->failed_name, name);
	req->failed_user_id = user_id;
}

/* name logged in correctly: see throttle_login_success_to_record(). */
static void gate_login_succeeded(struct request *req, const char *name)
{
	if (req->success_to_record)
		copy_name(req->succeeded_name, sizeof req->succeeded_name, name);
}

/*
 * Count or record logins and wrong reset codes now that the request's
 * transaction is over. A failed login also stops every process answering
 * the account from a kept row (account_cache.h) until the database, which
 * holds its count and lock, has been asked again; an address it locks is
 * published the same way.
 */
static void settle_logins(struct request *req)
{
	if (req->login_failed) {
		const char *address = request_client_address(req);
		int64_t locked_until = throttle_login_failed(
			req->cfg, req->failed_name[0] != '\0' ? req->failed_name : NULL,
			address, now_centiseconds() / 100);
		if (req->failed_user_id != 0)
			change_board_bump(req->failed_user_id);
		if (locked_until > 0)
			change_board_note_address_lock(address, locked_until);
	}
	if (req->succeeded_name[0] != '\0')
		throttle_login_succeeded(req->cfg, req->succeeded_name,
					 request_client_address(req),
					 now_centiseconds() / 100);
	if (req->reset_code_failed)
		throttle_code_failed(req->cfg, request_client_address(req),
				     now_centiseconds() / 100);
}

/*
 * X-Weave-Secret against the configured admin secret, compared in
 * constant time; a wrong one counts as a failed login of the client
 * address, and a locked address is not checked at all.
 */
static bool check_admin_secret(struct request *req)
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

enum auth_outcome { AUTH_DONE, AUTH_FAILED, AUTH_RETRY };

/*
 * A read may skip the database and use this process's kept row of the
 * account (account_cache.h) when the password is one already verified
 * against that row's hash and the client address is not known to be
 * locked. true with *user filled.
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

/*
 * Authenticate and load the user row with the route's lock. On
 * AUTH_DONE, *user is filled (and, for WRITES, a transaction holds its
 * row lock). On failure the response holds the error.
 */
static enum auth_outcome authenticate(struct request *req, struct response *resp,
				      unsigned flags, struct user *user)
{
	const struct config *cfg = req->cfg;
	struct credentials cred;
	const char *source = NULL;
	enum auth_outcome outcome = AUTH_FAILED;
	enum db_status st;
	bool writes = (flags & WRITES) != 0;
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
		if (v == PASSWORD_BAD_HASH)
			log_error("stored password hash has an unknown format");
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

/*
 * While history_days > 0, a write keeps the records it replaces or
 * deletes and is logged with the client's User-Agent (db_history.h).
 */
static void history_open(const struct request *req, const struct user *user)
{
	if (req->cfg->history_days <= 0) {
		db_history_cancel();
		return;
	}
	struct history_write w = {
		.user_id = user->id,
		.stamp = req->timestamp,
		.previous = user->last_write,
		.collection = req->collection,
		.agent = request_header(req, "User-Agent"),
		.max_kb = req->cfg->history_max_kb,
	};
	db_history_begin(&w);
}

/*
 * Path, method and route: 0 with *out set, or -1 with the error answered
 * (404 unknown path, 400 1 or under /1.1/ 405 a method the path lacks).
 */
static int choose_route(struct request *req, struct response *resp,
			const struct route **out)
{
	struct match m;
	if (check_method_1_1(req, resp) < 0)
		return -1;
	const struct route *r = find_route(req, &m);
	if (r == NULL) {
		if (path_known(req))
			resp_error(resp, 400, WEAVE_ERR_ILLEGAL_METHOD);
		else
			resp_error(resp, 404, WEAVE_ERR_NONE);
		return -1;
	}
	if (take_path_fields(req, resp, &m) < 0)
		return -1;
	*out = r;
	return 0;
}

/*
 * The timestamp of an authenticated request, from the account's own
 * clock: the newest write it has (last_write), or its creation.
 *
 * A read answers exactly that: everything it can show is stamped at or
 * below it, and every write it cannot show yet (in flight here, on
 * another web server, or on another database node) is stamped above it,
 * because a write is stamped above the last_write it found under its row
 * lock. So X-Weave-Timestamp is a safe newer= for the client whatever the
 * web servers' clocks say. A write takes this host's clock when that is
 * ahead, so records carry real times; docs/protocol.md, Timestamps.
 */
static int64_t account_stamp(const struct user *user, int64_t now, bool writes)
{
	int64_t floor = user->created * 100;
	if (user->last_write > floor)
		floor = user->last_write;
	if (!writes)
		return floor;
	return (now > floor ? now : floor) + 1;
}

/*
 * Two writers of one account that keep meeting (on Galera: two nodes whose
 * transactions fail certification against each other) would meet again
 * if both ran again at once: wait a few milliseconds, random, doubling.
 */
static void pause_before_retry(int attempt)
{
	static unsigned int seed;
	if (seed == 0)
		seed = (unsigned int)getpid() ^ (unsigned int)now_centiseconds();
	seed = seed * 1103515245u + 12345u;
	long ms = (long)(1 + (seed >> 16) % 8) << attempt; /* up to 256 ms */
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

static int run_handler(struct request *req, struct response *resp,
		       const struct route *r)
{
	struct user user;
	memset(&user, 0, sizeof user);

	for (int attempt = 0; attempt <= MAX_DEADLOCK_RETRIES; attempt++) {
		int status;
		response_reset(resp);
		/* An empty reset code beside credentials is no code: the
		 * credentials decide. Alone it is a wrong code (400 10). */
		const char *code = request_header(req, "X-Weave-Password-Reset");
		const char *source;
		bool stand_in = ((r->flags & RESET_CODE_OK) && code != NULL &&
				 (code[0] != '\0' ||
				  auth_find_header(req, &source) == NULL)) ||
				((r->flags & ADMIN_SECRET_OK) && req->admin_secret_ok);
		if ((r->flags & NEEDS_AUTH) && !stand_in) {
			enum auth_outcome a = authenticate(req, resp, r->flags, &user);
			if (a == AUTH_RETRY)
				goto retry;
			if (a == AUTH_FAILED) {
				user_free(&user);
				return resp->status;
			}
			req->user = &user;
			if (user.alert != NULL && user.alert[0] != '\0')
				resp_header(resp, "X-Weave-Alert", "%s", user.alert);
			if ((r->flags & USER_MUST_MATCH) &&
			    strcmp(req->path_user, user.username) != 0) {
				db_rollback();
				log_info("path user %s does not match the login",
					 req->path_user);
				resp_error(resp, 401, WEAVE_ERR_USER_MISMATCH);
				status = 401;
				goto finish;
			}
			req->timestamp = account_stamp(&user, req->started,
						       (r->flags & WRITES) != 0);
			if (r->flags & WRITES)
				history_open(req, &user);
		} else {
			req->started = now_centiseconds();
			req->timestamp = req->started;
			if (r->flags & WRITES) {
				enum db_status st = db_begin();
				if (st != DB_OK) {
					status = handler_db_failure(req, resp, st);
					if (status == HANDLER_RETRY)
						goto retry;
					goto finish;
				}
			}
		}

		status = r->handler(req, resp);
		if (status == HANDLER_RETRY)
			goto retry;
		if (db_in_transaction()) {
			enum db_status st = DB_OK;
			bool committing = false;
			if (status < 400 && (r->flags & WRITES) && req->user != NULL) {
				st = db_history_finish();
				if (st == DB_OK)
					st = db_user_set_last_write(req->user->id,
								    req->timestamp);
			}
			if (status < 400 && st == DB_OK) {
				committing = true;
				st = db_commit();
			} else {
				db_rollback();
			}
			if (st == DB_RETRY)
				goto retry;
			/* Lost during COMMIT: it may have committed, so never run
			 * the request again. */
			if (st == DB_UNAVAILABLE && committing)
				req->db_tried_again = true;
			if (st != DB_OK) {
				db_rollback();
				status = handler_db_failure(req, resp, st);
				if (status == HANDLER_RETRY)
					goto retry;
			}
		}
finish:
		response_set_timestamp(resp, req->timestamp);
		req->user = NULL;
		user_free(&user);
		return status;
retry:
		db_rollback();
		req->user = NULL;
		user_free(&user);
		log_info("deadlock or lost database server; running the request "
			 "again (attempt %d)", attempt + 2);
		pause_before_retry(attempt);
	}
	resp_error(resp, 503, WEAVE_ERR_NONE);
	return 503;
}

/*
 * Method, URI and route: 0 with *out set, or -1 with the error answered
 * (400 bad encoding or too long, 404, 400 1, 400 3/13/8 path fields).
 */
static int resolve(struct request *req, struct response *resp,
		   const struct route **out)
{
	req->method_name = request_env(req, "REQUEST_METHOD");
	req->method = request_method_parse(req->method_name);
	switch (request_parse_uri(req, request_env(req, "SCRIPT_NAME"),
				  request_env(req, "REQUEST_URI"),
				  request_env(req, "PATH_INFO"),
				  request_env(req, "QUERY_STRING"))) {
	case REQUEST_OK:
		break;
	case REQUEST_BAD_ENCODING:
	case REQUEST_TOO_LONG:
		resp_error(resp, 400, WEAVE_ERR_NONE);
		return -1;
	case REQUEST_NOT_FOUND:
	default:
		resp_error(resp, 404, WEAVE_ERR_NONE);
		return -1;
	}
	return choose_route(req, resp, out);
}

int route_resolve(struct request *req, struct response *resp, unsigned *flags)
{
	const struct route *r = NULL;
	if (resolve(req, resp, &r) < 0)
		return -1;
	*flags = r->flags;
	return 0;
}

void route_dispatch(struct request *req, struct response *resp)
{
	const struct config *cfg = req->cfg;
	const struct route *r = NULL;

	struct operator_settings ops;

	if (resolve(req, resp, &r) < 0)
		return;
	request_find_client(req);
	settings_current(cfg, now_centiseconds() / 100, &ops);
	resp->backoff = ops.backoff;
	resp->retry_after = ops.retry_after;
	if (ops.maintenance) {
		log_info("maintenance mode: answering 503");
		if (resp->backoff <= 0)
			resp->backoff = ops.retry_after;
		resp_error(resp, 503, WEAVE_ERR_NONE);
		return;
	}
	if ((r->flags & READS_BODY) && read_body(req, resp) < 0)
		return;
	if (r->flags & ADMIN_SECRET_OK)
		req->admin_secret_ok = check_admin_secret(req);
	run_handler(req, resp, r);
	db_rollback(); /* nothing may stay open between requests */
	db_history_cancel();
	settle_logins(req);
}
