/* settings.c - operator settings from the database, cached per process. */
#include "settings.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "util.h"

struct settings_cache {
	bool loaded;
	int64_t read_at;
	bool has_backoff, has_maintenance, has_retry_after;
	int64_t backoff, retry_after;
	bool maintenance;
};

static struct settings_cache cache;

static int setting_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ctx;
	(void)ncols;
	const char *name = row[0].s, *value = row[1].s;
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

void settings_invalidate(void)
{
	cache.loaded = false;
}

void settings_current(const struct config *cfg, int64_t now_seconds,
		      struct operator_settings *out)
{
	if (!cache.loaded || now_seconds - cache.read_at >= SETTINGS_REFRESH ||
	    now_seconds < cache.read_at) {
		struct settings_cache saved = cache;
		cache.has_backoff = cache.has_maintenance = cache.has_retry_after = false;
		if (db_run("SELECT name, value FROM settings", NULL, 0, setting_row,
			   NULL, NULL) == DB_OK) {
			cache.loaded = true;
			cache.read_at = now_seconds;
		} else {
			/* Keep what we knew; try again at the next request. */
			cache = saved;
		}
	}
	out->backoff = cache.has_backoff ? cache.backoff : cfg->backoff;
	out->maintenance = cache.has_maintenance ? cache.maintenance : cfg->maintenance;
	out->retry_after = cache.has_retry_after ? cache.retry_after : cfg->retry_after;
}

enum db_status settings_store(const char *name, const char *value)
{
	if (value == NULL) {
		struct db_param p[] = { DB_CSTR(name) };
		return db_run("DELETE FROM settings WHERE name = ?", p, 1, NULL, NULL,
			      NULL);
	}
	struct db_param p[] = { DB_CSTR(name), DB_CSTR(value) };
	return db_run("REPLACE INTO settings (name, value) VALUES (?, ?)", p, 2,
		      NULL, NULL, NULL);
}

struct load_ctx {
	char *backoff, *maintenance, *retry_after;
	size_t cap;
};

static int load_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct load_ctx *l = ctx;
	(void)ncols;
	char *dest = NULL;
	if (strcmp(row[0].s, "backoff") == 0)
		dest = l->backoff;
	else if (strcmp(row[0].s, "maintenance") == 0)
		dest = l->maintenance;
	else if (strcmp(row[0].s, "retry_after") == 0)
		dest = l->retry_after;
	if (dest != NULL)
		snprintf(dest, l->cap, "%s", row[1].s);
	return 0;
}

enum db_status settings_load(char *backoff, char *maintenance, char *retry_after,
			     size_t cap)
{
	struct load_ctx l = { backoff, maintenance, retry_after, cap };
	backoff[0] = maintenance[0] = retry_after[0] = '\0';
	return db_run("SELECT name, value FROM settings", NULL, 0, load_row, &l,
		      NULL);
}
