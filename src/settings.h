/*
 * settings.h - operator settings kept in the database (table settings)
 * so that an admin can change them for every process at once:
 * "backoff" (seconds, 0 = off), "maintenance" (on/off) and
 * "retry_after" (seconds). A value there overrides weave.conf.
 *
 * Each process re-reads the table at most every SETTINGS_REFRESH
 * seconds; while the database is unreachable the last values stay.
 *
 * With them comes the installed schema version: while it is older than
 * DB_SCHEMA_VERSION (between installing a new binary and 'weave-admin db
 * upgrade'), schema_behind is set and writes answer 503 with a short
 * Retry-After (SETTINGS_UPGRADE_RETRY_AFTER) instead of failing on a
 * missing table or column.
 */
#ifndef WEAVE_SETTINGS_H
#define WEAVE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"

#define SETTINGS_REFRESH 5
#define SETTINGS_UPGRADE_RETRY_AFTER 30

struct config;

struct operator_settings {
	int64_t backoff;
	bool maintenance;
	int64_t retry_after;
	bool schema_behind;
};

/* The settings in force now: weave.conf overlaid with the table. */
void settings_current(const struct config *cfg, int64_t now_seconds,
		      struct operator_settings *out);

/* For weave-admin: the table's own values ("" when unset), each into a
 * buffer of cap bytes. Writing one is db_settings_store(). */
enum db_status settings_load(char *backoff, char *maintenance, char *retry_after,
			     size_t cap);

#endif
