/*
 * storage_place.h - which database a storage request's SQL runs on.
 *
 * An account's records live on the database of its storage node: the
 * account database unless users.node is the url of a node of weave.conf
 * (config_node_place(); docs/shards.md). The login always reads the
 * account database; a storage handler then runs on the node's place.
 *
 * A write on a node holds two transactions: the login's on the account
 * database (the users row locked, so the account's writes still run one
 * at a time and stamp above last_write) and the records' on the node.
 * The node commits first, then the account database raises last_write:
 * a reader that sees the new last_write sees the records. A failure
 * between the two leaves records stamped above last_write, which a
 * reader fetches again at worst (docs/shards.md, "What a write costs").
 */
#ifndef WEAVE_STORAGE_PLACE_H
#define WEAVE_STORAGE_PLACE_H

#include <stdbool.h>

#include "config.h"
#include "db_user.h"
#include "request.h"
#include "response.h"

/*
 * Make the database of user's records current (and open its transaction
 * for a write). 0, or the status answered: 503 + Retry-After while the
 * account moves between nodes; a database failure (handler.h).
 */
int storage_place_enter(struct request *req, struct response *resp,
			const struct user *user, bool writes);

/*
 * A write on a node, before the account database commits: commit the
 * node's transaction and make the account database current. DB_OK with
 * nothing to do on the account database's own records.
 */
enum db_status storage_place_commit(void);

/* The account database current again (the end of an attempt). */
void storage_place_leave(void);

/*
 * Before an account is deleted: its records and record history on its
 * node (users.node is node), in a transaction of the node's own,
 * committed first, then on every other storage node (a copy left by an
 * unfinished move). A failure after it leaves an account with no records,
 * never records with no account. The account database's own rows are the
 * caller's (db_user_delete() removes them in its transaction). Leaves the
 * current place as it was.
 */
enum db_status storage_place_forget_records(const struct config *cfg, int64_t user_id,
					    const char *node);

#endif
