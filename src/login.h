/*
 * login.h - the login: Basic credentials in, an account or a refusal out.
 *
 * Order (one answer per check): credentials present and well formed
 * (401) → name valid (401) → a read may answer from this process's kept
 * row (account_cache.h) → user row read, in share mode for a read and
 * locked in a transaction for a write (503 or a re-run on failure) →
 * account or client address locked by the throttle (401, password not
 * checked) → unknown name (401, after a dummy hash) → account disabled
 * (401) → password: credential cache, else the KDF without the row lock
 * held, a re-hash when the stored scheme is old (401 wrong) → for a
 * write, the row read again under its lock. Failures and successes are
 * noted for gate_settle_logins() (throttle_gate.h).
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
