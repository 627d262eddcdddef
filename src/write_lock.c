/* write_lock.c - an upload's account lock taken after its records (write_lock.h). */
#include "write_lock.h"

#include <string.h>

#include <openssl/rand.h>

#include "change_board.h"
#include "db_history.h"
#include "db_storage.h"
#include "db_user.h"
#include "handler.h"
#include "log.h"
#include "upload_order.h"
#include "util.h"

/* The row now, locked: still the account the login checked, enabled, with
 * the password hash verified then, on the same storage node? 0, or the
 * status answered. The row is in the account database, whatever place
 * the records are written on (storage_place.h). */
static int recheck(struct request *req, struct response *resp, struct user *now)
{
	size_t place = db_use(DB_ACCOUNTS);
	enum db_status st = db_user_get(req->user->username, USER_LOCK_EXCLUSIVE, now);
	db_use(place);
	if (st == DB_OK && (now->status == USER_STATUS_MOVING ||
			    !user_node_equal(now->node, req->user->node))) {
		log_info("account moving to another storage node during the upload: 503");
		return resp_error(resp, 503, WEAVE_ERR_NONE);
	}
	if (st == DB_NOT_FOUND) {
		log_info("authentication failed: account deleted during the upload");
		return resp_error(resp, 401, WEAVE_ERR_NONE);
	}
	if (st != DB_OK)
		return handler_db_failure(req, resp, st);
	const char *why = now->id != req->user->id ? "account replaced"
			  : now->status != USER_STATUS_ENABLED ? "account disabled"
			  : strcmp(now->password_hash, req->user->password_hash) != 0
				  ? "password changed"
				  : NULL;
	if (why == NULL)
		return 0;
	log_info("authentication failed: %s during the upload", why);
	return resp_error(resp, 401, WEAVE_ERR_NONE);
}

/* The final stamp: the provisional one if still above the account's
 * last write, else one above the later of the clock and that write. */
static int64_t final_stamp(const struct user *now, int64_t provisional)
{
	int64_t floor = now->created * 100;
	if (now->last_write > floor)
		floor = now->last_write;
	if (provisional > floor)
		return provisional;
	int64_t clock = now_centiseconds();
	return (clock > floor ? clock : floor) + 1;
}

int64_t write_lock_provisional_mark(void)
{
	uint64_t r = 0;
	if (RAND_bytes((unsigned char *)&r, sizeof r) != 1)
		r = (uint64_t)now_centiseconds() ^ ((uint64_t)(uintptr_t)&r << 16);
	return -(int64_t)(r >> 2) - 1;
}

int write_lock_take(struct request *req, struct response *resp,
		    const char *collection, const struct wbo *items, size_t n)
{
	if (!req->lock_pending)
		return 0;
	struct user now = { 0 };
	/* Lock in the order the account's uploads logged in on this host,
	 * so that each finds last_write below its stamp (upload_order.h). */
	upload_order_wait(&req->turn);
	int status = recheck(req, resp, &now);
	upload_order_pass(&req->turn);
	if (status != 0) {
		user_free(&now);
		return status;
	}
	/* Held now: mark the account changed before the stamp is final, as
	 * login.c's write_begins() does for a lock taken at the login. */
	change_board_bump(now.id);
	int64_t stamp = final_stamp(&now, req->timestamp);
	enum db_status st = DB_OK;
	if (stamp != req->timestamp) {
		change_board_count(BOARD_RESTAMPS);
		log_debug("stamp moved by %lld cs: a write of the account committed "
			  "since the login", (long long)(stamp - req->timestamp));
	}
	if (stamp != req->timestamp && n > 0)
		st = db_storage_restamp(now.id, collection, items, n, req->timestamp, stamp);
	if (st == DB_OK)
		st = db_history_settle(req->write, stamp, now.last_write);
	if (st == DB_OK) {
		req->timestamp = stamp;
		req->user->last_write = now.last_write;
		req->lock_pending = false;
	}
	user_free(&now);
	return st == DB_OK ? 0 : handler_db_failure(req, resp, st);
}
