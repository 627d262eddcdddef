/*
 * throttle_gate.h - what one request's logins owe the throttle
 * (throttle.h). The login notes failures and successes in the request
 * while its transaction is open; gate_settle_logins() counts them once
 * the transaction is over, so a rolled-back or re-run request counts
 * once and never holds throttle rows locked.
 */
#ifndef WEAVE_THROTTLE_GATE_H
#define WEAVE_THROTTLE_GATE_H

#include <stdint.h>

#include "db.h"
#include "request.h"

/* May the admin secret be checked from this address? 1 yes, 0 no, -1 *st failed. */
int gate_address_allowed(struct request *req, enum db_status *st);

/* The secret tried on name (NULL: no account) was wrong: count it.
 * user_id: the account's id, 0 if there is none. */
void gate_login_failed(struct request *req, const char *name, int64_t user_id);

/* name logged in correctly: see throttle_login_success_to_record(). */
void gate_login_succeeded(struct request *req, const char *name);

/*
 * Count or record logins and wrong reset codes now that the request's
 * transaction is over. A failed login also stops every process answering
 * the account from a kept row (account_cache.h) until the database, which
 * holds its count and lock, has been asked again; an address it locks is
 * published the same way.
 */
void gate_settle_logins(struct request *req);

#endif
