/*
 * db_settings.h - the settings table: operator settings by name
 * ("backoff", "maintenance", "retry_after"), each a short text. No HTTP
 * here; settings.c holds their meaning and the per-process cache.
 */
#ifndef WEAVE_DB_SETTINGS_H
#define WEAVE_DB_SETTINGS_H

#include "db.h"

/* One row: return 0 to go on. Both strings are valid only during the call. */
typedef int (*db_setting_fn)(void *ctx, const char *name, const char *value);

/* Every row of the table, in no particular order. */
enum db_status db_settings_read(db_setting_fn fn, void *ctx);

/* Set name to value; value NULL deletes the row (back to weave.conf). */
enum db_status db_settings_store(const char *name, const char *value);

#endif
