/*
 * handler.h - the contract between the router and a handler, below both.
 *
 * A handler takes the request and fills the response: it answers errors
 * with `return resp_error(resp, status, code)` and returns the HTTP
 * status it answered. For a database failure it returns
 * handler_db_failure(), which either answers (503) or asks the router,
 * through HANDLER_RETRY, to roll back and run the whole request again
 * (a deadlock, or a lost server before anything was committed). The
 * router commits the route's transaction when the status is < 400 and
 * rolls it back otherwise. Handlers never include route.h.
 */
#ifndef WEAVE_HANDLER_H
#define WEAVE_HANDLER_H

#include "db.h"
#include "request.h"
#include "response.h"

/* Returned instead of a status: roll back and run the request again. */
#define HANDLER_RETRY (-1)

typedef int (*route_handler)(struct request *req, struct response *resp);

/*
 * The answer to a failed database call st: HANDLER_RETRY for a
 * deadlock, and once per request for a server lost before anything was
 * committed (req->db_tried_again); otherwise 503 answered and returned.
 */
int handler_db_failure(struct request *req, struct response *resp,
		       enum db_status st);

#endif
