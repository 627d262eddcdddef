/*
 * db_admin.h - SQL that only weave-admin needs: storage nodes, usage
 * statistics, purging expired records, exporting and importing a
 * user's records row for row, and inspecting the installed schema.
 * No HTTP here. (Account columns are in db_user.h; db_node_pick(),
 * which account creation uses, is there too.)
 *
 * Every call returns an enum db_status from db.h. Strings handed to row
 * callbacks are valid only during the callback. Timestamps and expiry
 * are centiseconds; node and schema times are seconds.
 */
#ifndef WEAVE_DB_ADMIN_H
#define WEAVE_DB_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "db_schema.h"
#include "validate.h"
#include "wbo.h"

/* ---- storage nodes ------------------------------------------------------ */

struct db_node {
	const char *url;  /* normalised: ends in '/' */
	int64_t capacity; /* most accounts; -1: unlimited */
	int64_t users;    /* accounts assigned to it now */
	int64_t created;  /* seconds since the epoch */
};

typedef int (*db_node_fn)(void *ctx, const struct db_node *node);

/* DB_CONFLICT when the URL is already a node. capacity -1: unlimited. */
enum db_status db_node_add(const char *url, int64_t capacity, int64_t now);
/* DB_NOT_FOUND when url is not a node. */
enum db_status db_node_set_capacity(const char *url, int64_t capacity);
enum db_status db_node_remove(const char *url);
/* One node with its user count; DB_NOT_FOUND when there is none. */
enum db_status db_node_get(const char *url, db_node_fn fn, void *ctx);
/* Every node in URL order. */
enum db_status db_node_list(db_node_fn fn, void *ctx);

/* ---- statistics ---------------------------------------------------------- */

/* Accounts in total and how many of them are disabled. */
enum db_status db_admin_count_users(int64_t *total, int64_t *disabled);

/* Per collection over all users: users holding it, unexpired records, bytes. */
typedef int (*db_collection_stats_fn)(void *ctx, const char *collection,
				      size_t len, int64_t users,
				      int64_t records, int64_t bytes);
enum db_status db_admin_collection_stats(int64_t now, db_collection_stats_fn fn,
					 void *ctx);

/* Per account with unexpired records on this database, by ascending id:
 * their count and bytes. */
typedef int (*db_usage_fn)(void *ctx, int64_t user_id, int64_t records, int64_t bytes);
enum db_status db_admin_usage_by_user(int64_t now, db_usage_fn fn, void *ctx);

/* One user's unexpired records per collection: count, bytes, newest modified. */
typedef int (*db_user_collection_fn)(void *ctx, const char *collection,
				     size_t len, int64_t records, int64_t bytes,
				     int64_t modified);
enum db_status db_admin_user_collections(int64_t user_id, int64_t now,
					 db_user_collection_fn fn, void *ctx);

/*
 * Records whose expiry has passed (expires <= now) and that purge has not
 * removed yet; user_id 0 counts every user's.
 */
enum db_status db_admin_count_expired(int64_t user_id, int64_t now,
				      int64_t *count);

/* ---- purge --------------------------------------------------------------- */

/*
 * wbo has no key on expires (its entries cost every upload a fifth of its
 * database work), so purge walks the primary key (user_id, collection,
 * id) instead. A place in it: user_id 0 is before every account.
 */
struct db_wbo_key {
	int64_t user_id;
	char collection[COLLECTION_MAX + 2]; /* and db_admin_skip_collection's '\0' */
	size_t collection_len;
	char id[WBO_ID_MAX + 1];
	size_t id_len;
};

/* The first record expired at `now` from *at on (at's own collection of
 * its account and after; `at`'s id is not used), read in key order
 * without locks, into *at; *found false when there is none. */
enum db_status db_admin_next_expired(struct db_wbo_key *at, int64_t now, bool *found);

/* Move *at past its collection: the next look starts at the account's
 * next collection. */
void db_admin_skip_collection(struct db_wbo_key *at);

/*
 * Delete at most `batch` expired records (expires <= now) of at's account
 * and collection, from at's id on, in one short statement of its own
 * (autocommit). Under READ COMMITTED it keeps locks only on the rows it
 * deletes, but waits for an upload in progress of the records it reads.
 * *deleted gets the count; fewer than `batch` means nothing expired is
 * left there.
 */
enum db_status db_admin_purge_batch(const struct db_wbo_key *at, int64_t now,
				    int64_t batch, uint64_t *deleted);

/* ---- export and import ----------------------------------------------------- */

/* One wbo row with every column: the record as the server returns it,
 * its collection and expiry. NULL pointers are SQL NULLs. */
struct db_record {
	const char *collection;
	size_t collection_len;
	struct wbo_row row;
	int64_t expires; /* DB_RECORD_NEVER: no ttl */
};

#define DB_RECORD_NEVER INT64_MAX

/* Rows per statement of db_admin_insert_records() (bounded by db.c's
 * parameter limit); callers may pass more, they are chunked. */
#define DB_INSERT_CHUNK 16

typedef int (*db_record_row_fn)(void *ctx, const struct db_record *r);

/* Every record of the user, expired ones included, by collection then id. */
enum db_status db_admin_export(int64_t user_id, db_record_row_fn fn, void *ctx);
/* The user's record (collection, id), if there is one (fn not called). */
enum db_status db_admin_export_one(int64_t user_id, const char *collection, const char *id,
				   db_record_row_fn fn, void *ctx);
/* How many rows db_admin_export() would give. */
enum db_status db_admin_count_records(int64_t user_id, int64_t *count);

/*
 * Insert rows for the user exactly as given (timestamps, sortindex,
 * expiry, NULLs); a row whose (collection, id) exists replaces it.
 * payload_size is the payload's byte length. Run inside a transaction
 * to make a set of calls atomic.
 */
enum db_status db_admin_insert_records(int64_t user_id,
				       const struct db_record *rows, size_t n);

/* ---- schema ---------------------------------------------------------------- */

enum db_status db_admin_schema_record(int64_t version, int64_t now);

/* Tables and indexes present in the configured database; index is NULL
 * for a table row. */
typedef int (*db_schema_fn)(void *ctx, const char *table, const char *index);
enum db_status db_admin_schema_tables(db_schema_fn fn, void *ctx);
enum db_status db_admin_schema_indexes(db_schema_fn fn, void *ctx);

#endif
