/*
 * migrate.h - the parts of weave-admin migrate (admin_migrate.c):
 * reading the source database (admin_migrate_source.c) and the source
 * formats it knows (admin_migrate_minimal.c: Weave Minimal and
 * FSyncMS; admin_migrate_php.c: the original PHP server). Internal to
 * weave-admin; admin.h declares the command.
 */
#ifndef WEAVE_MIGRATE_H
#define WEAVE_MIGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mysql.h>
#include <sqlite3.h>

#include "admin.h"
#include "db_admin.h"

/* The largest modified we store (centiseconds, DECIMAL(14) in wbo). */
#define MODIFIED_MAX INT64_C(99999999999999)

/* ---- the source database (admin_migrate_source.c) ---------------------- */

enum source_kind { SOURCE_SQLITE, SOURCE_MYSQL };

struct src_value {
	bool is_null;
	const char *s; /* bytes as stored, NUL-terminated copy not guaranteed */
	size_t len;
};

/* Called per row; a non-zero return stops the query (the rest is drained). */
typedef int (*src_row_fn)(void *ctx, const struct src_value *row, size_t ncols);

struct source {
	enum source_kind kind;
	sqlite3 *lite;
	MYSQL *my;
	char name[512]; /* for messages: never the password */
	char error[512];
};

/* Run one fixed query and call fn per row. 0, or -1 with s->error set. */
int src_query(struct source *s, const char *sql, src_row_fn fn, void *ctx);

/*
 * Open the source read-only, in one consistent snapshot: an SQLite file,
 * or mysql://USER[:PASS]@HOST[:PORT]/DB[?socket=PATH] (the password may
 * come from --password-file). EXIT_OK, or an exit code (told).
 */
int src_open_sqlite(struct source *s, const char *path);
int src_open_mysql(struct source *s, const char *url, const struct args *a);
void src_close(struct source *s);

/* A number column as NUL-terminated text; false when too long. */
bool src_number_text(const struct src_value *v, char *out, size_t cap);
/* Any decimal or exponent form through a double, times scale, rounded,
 * within +-max: the fallback where exact parsing fails. */
bool src_number_by_double(const char *text, double scale, int64_t max, int64_t *out);

/* The names of the source's tables and of the users table's columns. */
struct name_list {
	char names[64][65];
	size_t n;
};

struct layout {
	struct name_list tables, user_columns;
};

bool list_has(const struct name_list *l, const char *name);

/* Read the layout; a source without users and wbo tables is refused
 * (told). EXIT_OK or an exit code. */
int src_read_layout(struct source *s, struct layout *l);

/* ---- the source formats ------------------------------------------------ */

/* What differs between the servers migrate reads from. */
struct migrate_format {
	const char *name; /* --format value, and in the summary */
	/* The users column that wbo.username holds: the name or an id. */
	const char *user_key_column;
	/* Read what the records need besides the users; EXIT_OK or an
	 * exit code (told). May be NULL. */
	int (*prepare)(struct source *s, const struct layout *l);
	/* The name of the collection a wbo.collection value stands for, for
	 * the user whose users key is user_key: NULL, or why not. */
	const char *(*collection)(const char *user_key, const struct src_value *v,
				  const char **name, size_t *len);
	/* wbo.modified (a non-empty number as text) as centiseconds: NULL,
	 * or why not. */
	const char *(*modified)(const char *text, int64_t *out);
	/* Free what prepare() read. May be NULL. */
	void (*release)(void);
};

extern const struct migrate_format migrate_minimal; /* admin_migrate_minimal.c */
extern const struct migrate_format migrate_fsyncms; /* admin_migrate_minimal.c */
extern const struct migrate_format migrate_php;     /* admin_migrate_php.c */

/* ---- one run (admin_migrate.c, admin_migrate_users.c) ----------------- */

enum legacy_state {
	LEGACY_PENDING, /* not reached yet */
	LEGACY_ACTIVE,  /* its transaction is open (or, dry run, it would be) */
	LEGACY_DONE,    /* created and committed (dry run: would be) */
	LEGACY_EXISTS,  /* an account of that name exists here: skipped */
	LEGACY_FAILED,  /* not migrated, see why */
};

struct counter {
	char name[COLLECTION_MAX + 1];
	int64_t n;
};

struct counters {
	struct counter *items;
	size_t n, cap;
};

struct legacy_user {
	char *key; /* wbo.username as text: the name (Minimal) or the id (PHP) */
	size_t key_len;
	char name[USERNAME_MAX + 1]; /* ours */
	char *hash, *email, *alert;
	int status;
	enum legacy_state state;
	int64_t id; /* ours, once created */
	int64_t records, max_modified, skipped;
	struct counters collections;
	char *why;
};

struct migration {
	struct source src;
	const struct migrate_format *format;
	bool dry_run, quiet;
	struct legacy_user *users;
	size_t nusers, cap;
	struct legacy_user *current;
	struct db_record batch[DB_INSERT_CHUNK];
	char *owned[DB_INSERT_CHUNK][5];
	size_t nbatch;
	struct counters totals;
	int64_t seen, copied, orphans, orphan_users, warnings, failed, exists, created;
	char last_orphan[128];
	struct progress progress;
	int fatal; /* an exit code once the database failed */
};

/* A warning on stderr, the first hundred of a run (admin_migrate_users.c). */
void migrate_warn(struct migration *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Read the source's users into m->users, sorted by key, the ones that
 * cannot be migrated marked LEGACY_FAILED with why. EXIT_OK or an exit
 * code (told). */
int migrate_load_users(struct migration *m, const struct layout *l);

/* The legacy account whose users key (wbo.username) is key, or NULL. */
struct legacy_user *migrate_find_user(struct migration *m, const char *key, size_t len);

#endif
