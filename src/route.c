/* route.c - the route table, the gate and the transaction around a handler (the login is login.c). */
#include "route.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "account_name.h"
#include "auth.h"
#include "body.h"
#include "captcha.h"
#include "config.h"
#include "db_history.h"
#include "db_user.h"
#include "landing_page.h"
#include "log.h"
#include "login.h"
#include "reset_page.h"
#include "settings.h"
#include "storage_api.h"
#include "storage_place.h"
#include "throttle_gate.h"
#include "txn.h"
#include "upload_order.h"
#include "user_api.h"
#include "util.h"
#include "validate.h"
#include "write_lock.h"

#define ANY METHOD__MAX

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
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE },
	{ METHOD_GET, "{sver}/{user}/info/collection_counts",
	  storage_info_collection_counts, NEEDS_AUTH | USER_MUST_MATCH | ON_NODE },
	{ METHOD_GET, "{sver}/{user}/info/quota", storage_info_quota,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE },
	{ METHOD_GET, "{sver}/{user}/info/collection_usage",
	  storage_info_collection_usage, NEEDS_AUTH | USER_MUST_MATCH | ON_NODE },
	{ ANY, "{sver}/{user}/info", storage_illegal_method, 0 },
	{ METHOD_GET, "{sver}/{user}/storage/{coll}", storage_get_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE },
	{ METHOD_POST, "{sver}/{user}/storage/{coll}", storage_post_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE | READS_BODY | WRITES | LOCKS_LATE },
	{ METHOD_PUT, "{sver}/{user}/storage/{coll}", storage_post_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE | READS_BODY | WRITES | LOCKS_LATE },
	{ METHOD_DELETE, "{sver}/{user}/storage/{coll}", storage_delete_collection,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE | WRITES },
	{ METHOD_GET, "{sver}/{user}/storage/{coll}/{id}", storage_get_record,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE },
	{ METHOD_PUT, "{sver}/{user}/storage/{coll}/{id}", storage_put_record,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE | READS_BODY | WRITES | LOCKS_LATE },
	{ METHOD_DELETE, "{sver}/{user}/storage/{coll}/{id}", storage_delete_record,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE | WRITES },
	{ METHOD_DELETE, "{sver}/{user}/storage", storage_delete_all,
	  NEEDS_AUTH | USER_MUST_MATCH | ON_NODE | WRITES },
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
		char name[USERNAME_MAX + 1];
		if (!account_name_normalise(m->user, m->user_len, name)) {
			resp_error(resp, 400, WEAVE_ERR_USERNAME);
			return -1;
		}
		/* Segments are ours: the stored name replaces the one given. */
		for (size_t i = 0; i < req->nsegments; i++) {
			if (req->segments[i] == m->user) {
				free(req->segments[i]);
				req->segments[i] = xstrdup(name);
				req->segment_lens[i] = strlen(name);
				req->path_user = req->segments[i];
			}
		}
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

/*
 * While history_days > 0, a write keeps the records it replaces or
 * deletes and is logged with the client's User-Agent (db_history.h).
 */
static void history_open(struct request *req, const struct user *user)
{
	if (req->write == NULL)
		req->write = xcalloc(1, sizeof *req->write);
	if (req->cfg->history_days <= 0) {
		db_history_cancel(req->write);
		return;
	}
	struct history_write w = {
		.user_id = user->id,
		.stamp = req->timestamp,
		.previous = user->last_write,
		.collection = req->collection,
		.agent = request_header(req, "User-Agent"),
		.max_kb = req->cfg->history_max_kb,
		/* The stamp may move under the lock: versions wait under a
		 * mark of this write's own (write_lock.h). */
		.keep_as = req->lock_pending ? write_lock_provisional_mark() : 0,
	};
	db_history_begin(req->write, &w);
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
 * Does something stand in for the login? A reset code beside credentials
 * that is empty is no code: the credentials decide; alone it is a wrong
 * code (400 10, answered by the handler). Or the admin secret.
 */
static bool login_stood_in(const struct request *req, const struct route *r)
{
	const char *code = request_header(req, "X-Weave-Password-Reset");
	const char *source;
	return ((r->flags & RESET_CODE_OK) && code != NULL &&
		(code[0] != '\0' || auth_find_header(req, &source) == NULL)) ||
	       ((r->flags & ADMIN_SECRET_OK) && req->admin_secret_ok);
}

/* One attempt of a route, for txn_run(); user is the attempt's account. */
struct attempt {
	const struct route *r;
	struct user user;
};

/*
 * The login and the checks that follow it, or the transaction of a route
 * without one: 0 to run the handler, else the status answered (or
 * HANDLER_RETRY).
 */
static int open_attempt(struct request *req, struct response *resp,
			struct attempt *a)
{
	bool writes = (a->r->flags & WRITES) != 0;
	if (!(a->r->flags & NEEDS_AUTH) || login_stood_in(req, a->r)) {
		req->started = now_centiseconds();
		req->timestamp = req->started;
		return writes ? txn_begin(req, resp) : 0;
	}
	/* An upload joins its account's queue on this host; it locks late
	 * (its login reads the row unlocked) if another is in flight. */
	bool ordered = writes && (a->r->flags & LOCKS_LATE) && req->cfg->late_write_lock;
	int64_t arrived = now_centiseconds();
	req->lock_pending = ordered && upload_order_enter(&req->turn, req->path_user, arrived + 1);
	enum auth_outcome o = login_authenticate(req, resp, writes, &a->user);
	if (o != AUTH_DONE)
		return o == AUTH_RETRY ? HANDLER_RETRY : resp->status;
	req->user = &a->user;
	if (a->user.alert != NULL && a->user.alert[0] != '\0')
		resp_header(resp, "X-Weave-Alert", "%s", a->user.alert);
	if ((a->r->flags & USER_MUST_MATCH) &&
	    strcmp(req->path_user, a->user.username) != 0) {
		db_rollback();
		log_info("path user %s does not match the login", req->path_user);
		return resp_error(resp, 401, WEAVE_ERR_USER_MISMATCH);
	}
	if (a->r->flags & ON_NODE) {
		int status = storage_place_enter(req, resp, &a->user, writes);
		if (status != 0)
			return status;
	}
	req->timestamp = account_stamp(&a->user, req->started, writes);
	if (ordered) {
		/* The stamp handed out at its arrival, unless last_write is
		 * past it; one that locked at its login lets the next go. */
		req->timestamp = upload_order_stamp(&req->turn,
						    account_stamp(&a->user, arrived, writes));
		if (!req->lock_pending)
			upload_order_pass(&req->turn);
	}
	if (writes)
		history_open(req, &a->user);
	return 0;
}

/* The statements a write runs last, inside its transaction (txn_end). */
static enum db_status before_commit(const struct request *req, const void *ctx)
{
	const struct route *r = ctx;
	if (!(r->flags & WRITES) || req->user == NULL)
		return DB_OK;
	if (req->lock_pending) {
		/* A handler answered without taking its lock: never commit. */
		log_error("write about to commit without its account's lock");
		return DB_ERROR;
	}
	enum db_status st = db_history_finish(req->write);
	if (st == DB_OK)
		st = storage_place_commit();
	return st == DB_OK ? db_user_set_last_write(req->user->id, req->timestamp) : st;
}

static int run_attempt(struct request *req, struct response *resp, void *ctx)
{
	struct attempt *a = ctx;
	req->timestamp = 0; /* a refused login answers the current time */
	req->lock_pending = false;
	int status = open_attempt(req, resp, a);
	if (status == 0) {
		status = a->r->handler(req, resp);
		if (status != HANDLER_RETRY)
			status = txn_end(req, resp, status, before_commit, a->r);
	}
	upload_order_leave(&req->turn);
	storage_place_leave();
	if (status != HANDLER_RETRY)
		response_set_timestamp(resp, req->timestamp);
	req->user = NULL;
	user_free(&a->user);
	return status;
}

/* The route's handler inside its login and transaction (txn.h). */
static int run_handler(struct request *req, struct response *resp,
		       const struct route *r)
{
	struct attempt a = { .r = r };
	return txn_run(req, resp, run_attempt, &a);
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
	settings_current(cfg, now_seconds(), &ops);
	resp->backoff = ops.backoff;
	resp->retry_after = ops.retry_after;
	if (ops.maintenance) {
		log_info("maintenance mode: answering 503");
		if (resp->backoff <= 0)
			resp->backoff = ops.retry_after;
		resp_error(resp, 503, WEAVE_ERR_NONE);
		return;
	}
	if ((r->flags & WRITES) && ops.schema_behind) { /* settings.h */
		log_info("schema older than this server: write answered 503 until "
			 "'weave-admin db upgrade'");
		resp->retry_after = SETTINGS_UPGRADE_RETRY_AFTER;
		resp_error(resp, 503, WEAVE_ERR_NONE);
		return;
	}
	if ((r->flags & READS_BODY) && body_read(req, resp) < 0)
		return;
	if (r->flags & ADMIN_SECRET_OK)
		req->admin_secret_ok = login_check_admin_secret(req);
	run_handler(req, resp, r);
	db_rollback(); /* nothing may stay open between requests */
	gate_settle_logins(req);
}
