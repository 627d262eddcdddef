/*
 * txn.h - a request's transaction and the one place a request runs again.
 *
 * A request runs as attempts. An attempt opens its transaction (the
 * login for a write, or txn_begin()), runs its handler and ends with
 * txn_end(): commit when the answer is below 400, else roll back. An
 * attempt that returns HANDLER_RETRY (handler.h: a deadlock, a Galera
 * certification failure, a server lost before anything was committed)
 * is rolled back and run again after a short random pause that doubles
 * each time, at most TXN_MAX_ATTEMPTS times in all; then 503. Nothing
 * else in the server loops over a transaction.
 *
 * A lost connection is reconnected by db.c on the next statement (to
 * the next server of db_host); this file only calls db.h.
 */
#ifndef WEAVE_TXN_H
#define WEAVE_TXN_H

#include "db.h"
#include "handler.h"
#include "request.h"
#include "response.h"

#define TXN_MAX_ATTEMPTS 10

/*
 * One attempt: fills resp and returns its status, or HANDLER_RETRY with
 * nothing of its own left allocated (ctx is the caller's).
 */
typedef int (*txn_attempt_fn)(struct request *req, struct response *resp, void *ctx);

/* Run attempt until it answers; the response is reset before each. */
int txn_run(struct request *req, struct response *resp, txn_attempt_fn attempt,
	    void *ctx);

/* Begin the attempt's transaction: 0, or the status of
 * handler_db_failure() (HANDLER_RETRY or 503 answered). */
int txn_begin(struct request *req, struct response *resp);

/* Statements a caller runs last inside its transaction, before COMMIT. */
typedef enum db_status (*txn_last_fn)(const struct request *req, const void *ctx);

/*
 * End the attempt's transaction, if one is open: when status < 400, run
 * last (may be NULL) and commit if it succeeded; else roll back. Returns
 * status, or what handler_db_failure() gives for a failure; a COMMIT
 * whose connection was lost is never run again (it may have committed).
 */
int txn_end(struct request *req, struct response *resp, int status, txn_last_fn last,
	    const void *ctx);

#endif
