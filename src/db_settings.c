/* db_settings.c - SQL for the settings table. */
#include "db_settings.h"

#include <stddef.h>

struct read_ctx {
	db_setting_fn fn;
	void *ctx;
};

static int setting_row(void *ctx, const struct db_value *row, size_t ncols)
{
	struct read_ctx *r = ctx;
	(void)ncols;
	return r->fn(r->ctx, row[0].s, row[1].s);
}

enum db_status db_settings_read(db_setting_fn fn, void *ctx)
{
	struct read_ctx r = { fn, ctx };
	return db_run("SELECT name, value FROM settings", NULL, 0, setting_row, &r,
		      NULL);
}

enum db_status db_settings_store(const char *name, const char *value)
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
