/* txn.c - a request's transaction: begin, commit or roll back, and the re-runs of txn.h. */
#include "txn.h"

#include <stdbool.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/*
 * Two writers of one account that keep meeting (on Galera: two nodes whose
 * transactions fail certification against each other) would meet again
 * if both ran again at once: wait a few milliseconds, random, doubling up
 * to 32-256 ms. A small write that InnoDB keeps choosing as the deadlock's
 * victim (a DELETE of a few ids among uploads of many records to the same
 * account) needs the later, longer pauses to find the account quiet.
 */
static void pause_before_retry(int attempt)
{
	static unsigned int seed;
	if (seed == 0)
		seed = (unsigned int)getpid() ^ (unsigned int)now_centiseconds();
	seed = seed * 1103515245u + 12345u;
	int doublings = attempt < 5 ? attempt : 5;
	int64_t ms = (int64_t)(1 + (seed >> 16) % 8) << doublings; /* up to 256 ms */
	sleep_micros(ms * 1000);
}

int txn_run(struct request *req, struct response *resp, txn_attempt_fn attempt,
	    void *ctx)
{
	for (int n = 1;; n++) {
		response_reset(resp);
		int status = attempt(req, resp, ctx);
		if (status != HANDLER_RETRY)
			return status;
		db_rollback();
		if (n == TXN_MAX_ATTEMPTS)
			break;
		log_info("deadlock or lost database server; running the request "
			 "again (attempt %d)", n + 1);
		pause_before_retry(n - 1);
	}
	log_warn("deadlock or lost database server in each of %d attempts: "
		 "answering 503", TXN_MAX_ATTEMPTS);
	response_reset(resp);
	return resp_error(resp, 503, WEAVE_ERR_NONE);
}

int txn_begin(struct request *req, struct response *resp)
{
	enum db_status st = db_begin();
	return st == DB_OK ? 0 : handler_db_failure(req, resp, st);
}

int txn_end(struct request *req, struct response *resp, int status, txn_last_fn last,
	    const void *ctx)
{
	/* Asked before last runs: a connection lost in it ends the
	 * transaction, and that must be a failure, not "nothing to do". */
	if (!db_in_transaction())
		return status;
	enum db_status before_commit = status < 400 && last != NULL ? last(req, ctx) : DB_OK;
	if (status >= 400 || before_commit != DB_OK) {
		db_rollback();
		if (status >= 400)
			return status;
		return handler_db_failure(req, resp, before_commit);
	}
	enum db_status st = db_commit();
	if (st == DB_OK)
		return status;
	db_rollback();
	/* Lost during COMMIT: it may have committed, so never run again. */
	if (st == DB_UNAVAILABLE)
		req->db_tried_again = true;
	return handler_db_failure(req, resp, st);
}
