/* throttle_gate.c - what a request's logins owe the throttle: noted while it runs, counted after its transaction. */
#include "throttle_gate.h"

#include <string.h>

#include "change_board.h"
#include "throttle.h"
#include "util.h"

/* May the admin secret be checked from this address? 1 yes, 0 no, -1 *st failed. */
int gate_address_allowed(struct request *req, enum db_status *st)
{
	switch (throttle_address_check(req->cfg, request_client_address(req),
				       now_seconds(), st)) {
	case THROTTLE_ALLOW:
		return 1;
	case THROTTLE_DENY:
		return 0;
	case THROTTLE_DB_FAILED:
	default:
		return -1;
	}
}

/* Names reaching here are valid, so never longer than the field. */
static void copy_name(char *dst, size_t cap, const char *name)
{
	size_t len = name != NULL ? strnlen(name, cap - 1) : 0;
	memcpy(dst, name != NULL ? name : "", len);
	dst[len] = '\0';
}

/* The secret tried on name (NULL: no account) was wrong: count it.
 * user_id: the account's id, 0 if there is none. */
void gate_login_failed(struct request *req, const char *name,
			      int64_t user_id)
{
	req->login_failed = true;
	copy_name(req->failed_name, sizeof req->failed_name, name);
	req->failed_user_id = user_id;
}

/* name logged in correctly: see throttle_login_success_to_record(). */
void gate_login_succeeded(struct request *req, const char *name)
{
	if (req->success_to_record)
		copy_name(req->succeeded_name, sizeof req->succeeded_name, name);
}

/*
 * Count or record logins and wrong reset codes now that the request's
 * transaction is over. A failed login also stops every process answering
 * the account from a kept row (account_cache.h) until the database, which
 * holds its count and lock, has been asked again; an address it locks is
 * published the same way.
 */
void gate_settle_logins(struct request *req)
{
	if (req->login_failed) {
		const char *address = request_client_address(req);
		int64_t locked_until = throttle_login_failed(
			req->cfg, req->failed_name[0] != '\0' ? req->failed_name : NULL,
			address, now_seconds());
		if (req->failed_user_id != 0)
			change_board_bump(req->failed_user_id);
		if (locked_until > 0)
			change_board_note_address_lock(address, locked_until);
	}
	if (req->succeeded_name[0] != '\0')
		throttle_login_succeeded(req->cfg, req->succeeded_name,
					 request_client_address(req),
					 now_seconds());
	if (req->reset_code_failed)
		throttle_code_failed(req->cfg, request_client_address(req),
				     now_seconds());
}
