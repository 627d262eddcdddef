/* handler.c - the one answer to a database failure, for handlers and the login. */
#include "handler.h"

#include "metrics.h"

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
	/* Every storage failure is "try again later" for a sync client; while
	 * the database is out, soon (docs/cluster.md). */
	metrics_db_error();
	int64_t outage = db_outage_seconds();
	if (st == DB_UNAVAILABLE || outage >= 0)
		return resp_unavailable(resp, outage > 0 ? outage : 0);
	return resp_error(resp, 503, WEAVE_ERR_NONE);
}
