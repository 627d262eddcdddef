/*
 * write_lock.h - an upload's account lock, taken late (late_write_lock).
 *
 * Normally a write locks its account's users row in the login and holds
 * it to the commit, so one account's writes run one at a time for their
 * whole length. With late_write_lock on, a plain upload (POST or PUT of
 * records) logs in as a read does, writes its records with a provisional
 * stamp (above the last_write the login saw) and only then locks the row.
 * Under the lock: the account must still be enabled with the password
 * hash the login verified (else 401, the upload rolled back); the stamp
 * stays if it is still above last_write, else the rows written move to
 * one centisecond above the later of this host's clock and last_write
 * (db_storage_restamp). So, as before, every write is stamped above the
 * last_write it found under the lock and an account's writes commit in
 * stamp order (docs/protocol.md, Timestamps); the lock now covers the
 * check, perhaps the restamp, last_write, the log row and the commit.
 * The provisional stamps of one account's uploads on this host come from
 * upload_order.h, which also makes them ask for the lock in stamp order,
 * so that the restamp is the exception.
 */
#ifndef WEAVE_WRITE_LOCK_H
#define WEAVE_WRITE_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"
#include "response.h"
#include "wbo.h"

/*
 * Take the lock if req->lock_pending (else nothing: 0). items (n) are the
 * records already written to collection under the provisional stamp
 * (none if called before writing). 0, or the status answered (401, 503)
 * or HANDLER_RETRY. After it req->timestamp is final.
 */
int write_lock_take(struct request *req, struct response *resp,
		    const char *collection, const struct wbo *items, size_t n);

/*
 * A `replaced` for the versions an upload keeps before its stamp is final:
 * negative (no stamp is) and random, so that no other write's versions
 * carry it and db_history_settle() moves exactly this write's.
 */
int64_t write_lock_provisional_mark(void);

#endif
