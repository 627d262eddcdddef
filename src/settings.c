/* settings.c - operator settings from the database (db_settings.c), cached per process. */
#include "settings.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "db_schema.h"
#include "db_settings.h"
#include "util.h"

struct settings_cache {
	bool loaded;
	int64_t read_at;
	bool has_backoff, has_maintenance, has_retry_after;
	int64_t backoff, retry_after;
	bool maintenance;
	bool schema_behind;
};

static struct settings_cache cache;

static int setting_row(void *ctx, const char *name, const char *value)
{
	(void)ctx;
	int64_t n;
	if (strcmp(name, "backoff") == 0 && parse_int64(value, 0, 86400, &n) == 0) {
		cache.has_backoff = true;
		cache.backoff = n;
	} else if (strcmp(name, "retry_after") == 0 &&
		   parse_int64(value, 1, 86400, &n) == 0) {
		cache.has_retry_after = true;
		cache.retry_after = n;
	} else if (strcmp(name, "maintenance") == 0) {
		cache.has_maintenance = true;
		cache.maintenance = strcmp(value, "on") == 0;
	}
	return 0;
}

void settings_current(const struct config *cfg, int64_t now_seconds,
		      struct operator_settings *out)
{
	if (!cache.loaded || now_seconds - cache.read_at >= SETTINGS_REFRESH ||
	    now_seconds < cache.read_at) {
		struct settings_cache saved = cache;
		cache.has_backoff = cache.has_maintenance = cache.has_retry_after = false;
		int64_t version = 0;
		if (db_settings_read(setting_row, NULL) == DB_OK &&
		    db_schema_version(&version) == DB_OK) {
			cache.loaded = true;
			cache.read_at = now_seconds;
			cache.schema_behind = version < DB_SCHEMA_VERSION;
		} else {
			/* Keep what we knew; try again at the next request. */
			cache = saved;
		}
	}
	out->backoff = cache.has_backoff ? cache.backoff : cfg->backoff;
	out->maintenance = cache.has_maintenance ? cache.maintenance : cfg->maintenance;
	out->retry_after = cache.has_retry_after ? cache.retry_after : cfg->retry_after;
	out->schema_behind = cache.schema_behind;
}

struct load_ctx {
	char *backoff, *maintenance, *retry_after;
	size_t cap;
};

static int load_row(void *ctx, const char *name, const char *value)
{
	struct load_ctx *l = ctx;
	char *dest = NULL;
	if (strcmp(name, "backoff") == 0)
		dest = l->backoff;
	else if (strcmp(name, "maintenance") == 0)
		dest = l->maintenance;
	else if (strcmp(name, "retry_after") == 0)
		dest = l->retry_after;
	if (dest != NULL)
		snprintf(dest, l->cap, "%s", value);
	return 0;
}

enum db_status settings_load(char *backoff, char *maintenance, char *retry_after,
			     size_t cap)
{
	struct load_ctx l = { backoff, maintenance, retry_after, cap };
	backoff[0] = maintenance[0] = retry_after[0] = '\0';
	return db_settings_read(load_row, &l);
}
