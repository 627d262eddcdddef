/*
 * reset_flow.h - the password-reset flow shared by the User API
 * (user/<u>/password_reset, X-Weave-Password-Reset) and the reset pages
 * (/weave-password-reset): one definition each of sending a code,
 * redeeming one and storing the new password.
 */
#ifndef WEAVE_RESET_FLOW_H
#define WEAVE_RESET_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_user.h"
#include "request.h"

/*
 * Make a reset code for u, keep its hash, and mail the link. Returns 0,
 * WEAVE_ERR_NO_EMAIL when u has no address, or -1 when storing or
 * mailing failed (logged).
 */
int reset_send_code(const struct request *req, const struct user *u);

enum reset_redeem {
	RESET_REDEEM_OK,        /* the code was u's and is now used up */
	RESET_REDEEM_WRONG,     /* wrong, used or expired; counted (throttle.h) */
	RESET_REDEEM_THROTTLED, /* too many wrong codes from this address: not checked */
	RESET_REDEEM_DB_FAILED, /* *st says why */
};

/*
 * Check the code as typed (any case, dashes optional) against u's
 * pending code and take it, so that it works once. Call it in a
 * transaction holding u's row lock; u NULL (no such account) is a wrong
 * code. A wrong code sets req->reset_code_failed, counted against the
 * address after the transaction (throttle_gate.h). On THROTTLED,
 * *retry_after is the seconds until codes are checked again.
 */
enum reset_redeem reset_redeem_code(struct request *req, const struct user *u,
				    const char *code, int64_t *retry_after,
				    enum db_status *st);

/*
 * Check and hash a new password for u (password_check_new(), the one
 * rule) and store it, clearing any reset code. Returns 0,
 * WEAVE_ERR_MISSING_PASSWORD, WEAVE_ERR_WEAK_PASSWORD, or -1 on a
 * storage failure.
 */
int reset_store_password(const struct request *req, const struct user *u,
			 const char *password, size_t len);

#endif
