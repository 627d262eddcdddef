/*
 * settings.h - operator settings kept in the database (table settings)
 * so that an admin can change them for every process at once:
 * "backoff" (seconds, 0 = off), "maintenance" (on/off) and
 * "retry_after" (seconds). A value there overrides weave.conf.
 *
 * Each process re-reads the table at most every SETTINGS_REFRESH
 * seconds; while the database is unreachable the last values stay.
 */
#ifndef WEAVE_SETTINGS_H
#define WEAVE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "db.h"

#define SETTINGS_REFRESH 5

struct config;

struct operator_settings {
	int64_t backoff;
	bool maintenance;
	int64_t retry_after;
};

/* The settings in force now: weave.conf overlaid with the table. */
void settings_current(const struct config *cfg, int64_t now_seconds,
		      struct operator_settings *out);

/* Forget the cached values (the next call reads the table). */
void settings_invalidate(void);

/* For weave-admin: write one setting; value NULL deletes it. */
enum db_status settings_store(const char *name, const char *value);
enum db_status settings_load(char *backoff, char *maintenance, char *retry_after,
			     size_t cap);

#endif
