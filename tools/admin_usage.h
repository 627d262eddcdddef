/*
 * admin_usage.h - accounts listed with their records counted where they
 * live.
 *
 * db_user_search() counts an account's records with a join in the
 * account database, which is right until storage nodes have databases of
 * their own (docs/shards.md): an account on such a node has its records
 * there, and the join finds none. With nodes, each node's database is
 * asked for its figures per account once (the account database's come
 * with the search), each account takes those of the database its row
 * names (so an account half-way through a move counts once, where it is
 * served from), and the filter's order and limit are applied here.
 * Without nodes this is db_user_search() itself.
 */
#ifndef WEAVE_ADMIN_USAGE_H
#define WEAVE_ADMIN_USAGE_H

#include "db_user.h"

/* As db_user_search(), the records and bytes from the account's node. */
enum db_status admin_user_search(const struct user_filter *f, db_user_fn fn, void *ctx);

#endif
