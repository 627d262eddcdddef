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

/* One row per collection of the user: name, and an integer (max modified,
 * count or bytes, depending on the call). */
typedef int (*db_collection_fn)(void *ctx, const char *collection, size_t len,
				int64_t value);

enum db_status db_storage_collection_stamps(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx);
enum db_status db_storage_collection_counts(int64_t user_id, int64_t now,
					    db_collection_fn fn, void *ctx);
enum db_status db_storage_collection_bytes(int64_t user_id, int64_t now,
					   db_collection_fn fn, void *ctx);
/* Sum of payload bytes of the user's unexpired records. */
enum db_status db_storage_total_bytes(int64_t user_id, int64_t now,
				      int64_t *bytes);

#endif
