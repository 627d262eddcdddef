/* storage_place.c - a storage request's database (storage_place.h). */
#include "storage_place.h"

#include "db.h"
#include "db_storage.h"
#include "handler.h"
#include "log.h"

int storage_place_enter(struct request *req, struct response *resp,
			const struct user *user, bool writes)
{
	if (user->status == USER_STATUS_MOVING) {
		db_rollback();
		log_info("account moving to another storage node: 503");
		return resp_error(resp, 503, WEAVE_ERR_NONE);
	}
	size_t place = config_node_place(req->cfg, user->node);
	if (place == DB_ACCOUNTS)
		return 0;
	db_use(place);
	if (!writes)
		return 0;
	enum db_status st = db_begin();
	return st == DB_OK ? 0 : handler_db_failure(req, resp, st);
}

enum db_status storage_place_commit(void)
{
	if (db_current() == DB_ACCOUNTS)
		return DB_OK;
	enum db_status st = db_commit();
	db_use(DB_ACCOUNTS);
	return st;
}

void storage_place_leave(void)
{
	db_use(DB_ACCOUNTS);
}

/* The account's rows on place, in a transaction of that place's own. */
static enum db_status forget_on(size_t place, int64_t user_id)
{
	size_t was = db_use(place);
	enum db_status st = db_begin();
	if (st == DB_OK)
		st = db_storage_forget_user(user_id);
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback_current();
	db_use(was);
	return st;
}

enum db_status storage_place_forget_records(const struct config *cfg, int64_t user_id,
					    const char *node)
{
	enum db_status st = DB_OK;
	size_t home = config_node_place(cfg, node);
	if (home != DB_ACCOUNTS)
		st = forget_on(home, user_id);
	/* Every other node too: a copy an unfinished move left there. */
	for (size_t place = 1; place <= cfg->nnodes && st == DB_OK; place++)
		if (place != home)
			st = forget_on(place, user_id);
	return st;
}
