/*
 * login.h - the login: Basic credentials in, an account or a refusal out.
 *
 * The login is a flat list of steps in login.c, each with one outcome:
 *  parse_credentials  present, well formed, a valid name (401)
 *  kept_row           a read may answer from the host's kept row and
 *                     verified credential (account_cache.h)
 *  load_account       the user row, in share mode for a read, locked in
 *                     a new transaction for a write (503 or a re-run)
 *  check_throttle     account or client address locked (401, password
 *                     not checked)
 *  check_state        unknown name (401, after a dummy hash), account
 *                     disabled (401)
 *  cached_credential  the account cache vouches for the password
 *  shared_verification a verification stored in the database by any web
 *                     server vouches for it (shared_credential.h)
 *  verify             the KDF, without the row lock, single-flight and
 *                     bounded (kdf_gate.h: 503 when the host is busy);
 *                     a re-hash when the stored scheme is old, written
 *                     only over the hash verified (401 wrong); a right
 *                     password's verifier stored for the other servers
 *  relock             for a write, the row read again under its lock
 *                     and its hash compared with the one verified
 * Failures and successes are noted for gate_settle_logins()
 * (throttle_gate.h). Nothing here loops: re-runs are txn.h's.
 */
#ifndef WEAVE_LOGIN_H
#define WEAVE_LOGIN_H

#include <stdbool.h>

#include "db_user.h"
#include "request.h"
#include "response.h"

enum auth_outcome { AUTH_DONE, AUTH_FAILED, AUTH_RETRY };

/*
 * Authenticate and load the user row. On AUTH_DONE *user is filled (the
 * caller frees it with user_free()) and req->started is the request's
 * time; for writes a transaction holds the row lock. AUTH_FAILED: the
 * response holds the error. AUTH_RETRY: roll back and run the request
 * again (handler.h).
 */
enum auth_outcome login_authenticate(struct request *req, struct response *resp,
				     bool writes, struct user *user);

/*
 * X-Weave-Secret against the configured admin secret, compared in
 * constant time; a wrong one counts as a failed login of the client
 * address, and a locked address is not checked at all.
 */
bool login_check_admin_secret(struct request *req);

#endif
