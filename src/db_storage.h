/*
 * db_storage.h - rows of the wbo table (the records). No HTTP here.
 *
 * Every read filters out expired records (expires <= now). Timestamps
 * and expiry are centiseconds.
 */
#ifndef WEAVE_DB_STORAGE_H
#define WEAVE_DB_STORAGE_H

#include <stdint.h>

#include "db.h"
#include "db_history.h"

/* One row per collection of the user: name, and an integer (max modified,
 * count or bytes, depending on the call). */
typedef int (*db_collection_fn)(void *ctx, const char *collection, size_t len,
				int64_t value);

/*
 * Newest timestamp per collection of the unexpired records, and in
 * *valid_until the earliest of the expiries of each collection's newest
 * record (of one of them, when several share the stamp: the stamp holds
 * at least that long). Until then the answer changes only by a write;
 * INT64_MAX when the user has no records.
 */
enum db_status db_storage_collection_stamps(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx,
					    int64_t *valid_until);
enum db_status db_storage_collection_counts(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx);
enum db_status db_storage_collection_bytes(int64_t user_id, int64_t now,
					   db_collection_fn fn, void *ctx);
/* Sum of payload bytes of the user's unexpired records. */
enum db_status db_storage_total_bytes(int64_t user_id, int64_t now,
				      int64_t *bytes);



#include "query.h"
#include "wbo.h"

typedef int (*db_record_fn)(void *ctx, const struct wbo_row *row);

/*
 * The user's unexpired records of a collection matching q, in q's order.
 * Without full only id and modified are filled.
 */
enum db_status db_storage_select(int64_t user_id, const char *collection,
				 const struct wbo_query *q, int64_t now,
				 db_record_fn fn, void *ctx);

/* One unexpired record; DB_NOT_FOUND when there is none. */
enum db_status db_storage_get(int64_t user_id, const char *collection,
			      const char *id, int64_t now, db_record_fn fn,
			      void *ctx);

/* Newest modified of a collection (or of all when collection is NULL); 0 if empty. */
enum db_status db_storage_last_modified(int64_t user_id, const char *collection,
					int64_t now, int64_t *modified);

/*
 * Insert or update records with timestamp `stamp`. A present field is
 * set; an absent one keeps its stored value (a new record gets NULL).
 * modified becomes `stamp` when payload, parentid or predecessorid is
 * present (a sortindex- or ttl-only update keeps it, as PHP did).
 * Expired records with the same ids are replaced, not revived.
 * `items` must not repeat an id.
 *
 * Writes take the write's context (db_history.h): the rows they replace
 * or delete are kept in the record history when wc keeps it; NULL keeps
 * nothing. account_locked: this transaction holds the account's users
 * row lock (write_lock.h), so no other upload of the account writes its
 * records meanwhile; only then do new records go in first (db_storage.c).
 */
enum db_status db_storage_put(struct write_context *wc, int64_t user_id,
			      const char *collection, const struct wbo *items,
			      size_t n, int64_t stamp, bool account_locked);
/*
 * Move the rows of items (n, no repeated id) whose modified is `from` to
 * `to`: for an upload written before its account's row lock was taken
 * (write_lock.h), whose stamp proved too low under the lock.
 */
enum db_status db_storage_restamp(int64_t user_id,
				  const char *collection, const struct wbo *items,
				  size_t n, int64_t from, int64_t to);

/* Delete the records matching q (all of the collection when q selects nothing). */
enum db_status db_storage_delete(struct write_context *wc, int64_t user_id,
				 const char *collection, const struct wbo_query *q,
				 int64_t now, uint64_t *deleted);

enum db_status db_storage_delete_one(struct write_context *wc, int64_t user_id,
				     const char *collection, const char *id);

enum db_status db_storage_delete_all(struct write_context *wc, int64_t user_id);

/* Every row of the account's storage on this database, its records and
 * its record history alike, kept nowhere; in the caller's transaction
 * (deleting an account, or its copy on a storage node). */
enum db_status db_storage_forget_user(int64_t user_id);
#endif
