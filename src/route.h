/*
 * route.h - the route table and the gate every request passes before a
 * handler runs.
 *
 * Gate order (one status per check): path parses (400/404) → route known
 * (404, 400 11 unknown function) → method allowed (400 1) → path fields
 * valid (400 3 username, 400 13 collection, 400 8 id) → maintenance
 * (503) → body size (413) → the login, for NEEDS_AUTH routes (login.h:
 * 401, or 503 without a database) → path user = authenticated user
 * (401 5). Failed logins are counted after the transaction ends
 * (throttle_gate.h). Then the handler runs (handler.h) inside the
 * route's transaction, which commits when the handler answers < 400
 * and rolls back otherwise; a deadlock runs the whole request again.
 */
#ifndef WEAVE_ROUTE_H
#define WEAVE_ROUTE_H

#include "handler.h"
#include "request.h"
#include "response.h"

enum route_flag {
	NEEDS_AUTH = 1 << 0,      /* Basic credentials of an enabled account */
	USER_MUST_MATCH = 1 << 1, /* the {user} of the path is the authenticated user */
	READS_BODY = 1 << 2,      /* the body is read (bounded by max_request_bytes) */
	WRITES = 1 << 3,          /* one transaction, user row locked, new timestamp */
	RESET_CODE_OK = 1 << 4,   /* X-Weave-Password-Reset stands in for NEEDS_AUTH */
	ADMIN_SECRET_OK = 1 << 5, /* the admin X-Weave-Secret is checked (req->admin_secret_ok)
				     and stands in for NEEDS_AUTH */
	LOCKS_LATE = 1 << 6,      /* with late_write_lock, the handler locks the account
				     itself, after its records (write_lock.h) */
	ON_NODE = 1 << 7,         /* the handler's SQL runs on the database of the
				     account's storage node (storage_place.h) */
};

/*
 * The gate's first steps, which need no database: method, URI (path
 * segments and query), route and path fields (e-mail names mapped).
 * Returns 0 and the route's flags, or -1 with the error answered (400
 * bad encoding or too long; 404; 400 1 method; 400 3, 13 or 8 for the
 * user, collection or id). route_dispatch() starts with it.
 */
int route_resolve(struct request *req, struct response *resp, unsigned *flags);

/* Run one request through the gate, its handler and the transaction. */
void route_dispatch(struct request *req, struct response *resp);

#endif
