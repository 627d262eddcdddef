/*
 * migrate.h - the parts of weave-admin migrate (admin_migrate.c):
 * reading the source database (admin_migrate_source.c) and the source
 * formats it knows (admin_migrate_minimal.c: FSyncMS; admin_migrate_php.c:
 * the original PHP server; admin_migrate_files.c: servers with a file per
 * user, weave-minimal and the PHP server's SQLite engine). Internal to
 * weave-admin; admin.h declares the command. docs/migration.md tells
 * admins what each format migrates.
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
	/* Its tables (src_read_layout): names, and quoted for SQL text. */
	char users_name[72], wbo_name[72], users_table[80], wbo_table[80];
	char error[512];
};

/* Run one fixed query of ncols columns (1-16) and call fn per row with
 * exactly ncols values (a statement of another width is an error, so no
 * callback sees a short row). Values are bounded: SQLite refuses any
 * longer than 20 MB, MySQL any row over max_allowed_packet.
 * 0, or -1 with s->error set. */
int src_query(struct source *s, const char *sql, size_t ncols, src_row_fn fn, void *ctx);

/*
 * Open the source read-only, in one consistent snapshot: an SQLite file
 * (hardened: no triggers, views or untrusted schema functions, values
 * and heap bounded), or mysql://USER@HOST[:PORT]/DB[?socket=PATH&
 * tls=off|on|verify&ca=FILE] with the password from --password-file or
 * $WEAVE_MIGRATE_PASSWORD (one in the URL is refused: ps shows it); TLS
 * is required and verified for a host other than this one unless
 * tls= says otherwise. EXIT_OK, or an exit code (told).
 */
int src_open_sqlite(struct source *s, const char *path);
int src_open_mysql(struct source *s, const char *url, const struct args *a);
void src_close(struct source *s);

/* A number column as NUL-terminated text; false when too long. */
bool src_number_text(const struct src_value *v, char *out, size_t cap);
/* Any decimal or exponent form through a double, times scale, rounded,
 * within +-max: the fallback where exact parsing fails. */
bool src_number_by_double(const char *text, double scale, int64_t max, int64_t *out);

/* The names of the source's tables and of the users table's columns;
 * src_read_layout() refuses a source that fills the list. */
#define NAMES_MAX 256
struct name_list {
	char names[NAMES_MAX][65];
	size_t n;
};

struct layout {
	struct name_list tables, user_columns;
};

bool list_has(const struct name_list *l, const char *name);

/* Read the layout into l and the table names into s: users and wbo, or
 * FSyncMS fork's PREFIX_users and PREFIX_wbo (need_wbo only). A source
 * without a users table, or without a wbo table when need_wbo, is
 * refused (told). EXIT_OK or an exit code. */
int src_read_layout(struct source *s, struct layout *l, bool need_wbo);

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

extern const struct migrate_format migrate_fsyncms;       /* admin_migrate_minimal.c */
extern const struct migrate_format migrate_php;           /* admin_migrate_php.c */
extern const struct migrate_format migrate_php_sqlite;    /* admin_migrate_php.c */
extern const struct migrate_format migrate_weave_minimal; /* admin_migrate_files.c */

/* Shared by the formats that name collections and count seconds. */
const char *migrate_collection_by_name(const char *user_key, const struct src_value *v,
				       const char **name, size_t *len);
const char *migrate_modified_in_seconds(const char *text, int64_t *out);

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
	char *file; /* its SQLite file, for the per-user-file servers */
};

struct migration {
	struct source src;
	char *dir; /* the data directory of a per-user-file server, or NULL */
	const struct migrate_format *format;
	bool dry_run, quiet;
	struct legacy_user *users;
	size_t nusers, cap;
	struct legacy_user *current;
	size_t place; /* where current's records go: its node's database (db_use) */
	struct db_record batch[DB_INSERT_CHUNK];
	char *owned[DB_INSERT_CHUNK][5];
	size_t nbatch, batch_bytes;
	struct counters totals;
	int64_t seen, copied, orphans, orphan_users, warnings, failed, exists, created;
	char last_orphan[128];
	struct progress progress;
	int fatal; /* an exit code once the database failed */
};

/* Bytes from the source made safe for a terminal, in place: control
 * characters (C0, DEL, C1) become '?', and so does every byte >= 0x80
 * of text that is not UTF-8 (admin_migrate_users.c). */
void migrate_printable(char *s, size_t len);

/* A warning on stderr, the first hundred of a run, made printable
 * (admin_migrate_users.c). */
void migrate_warn(struct migration *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Read the source's users into m->users, sorted by key, the ones that
 * cannot be migrated marked LEGACY_FAILED with why. EXIT_OK or an exit
 * code (told). */
int migrate_load_users(struct migration *m, const struct layout *l);

/* One users row (key, username, hash, email, status, alert) into
 * m->users, as migrate_load_users() reads them; then, after the last,
 * migrate_users_loaded() sorts them and marks duplicates and
 * collisions. For sources without a users table. */
int migrate_user_row(void *ctx, const struct src_value *row, size_t ncols);
void migrate_users_loaded(struct migration *m);

/* The legacy account whose users key (wbo.username) is key, or NULL. */
struct legacy_user *migrate_find_user(struct migration *m, const char *key, size_t len);

/* One record row (username, collection, id, parentid, predecessorid,
 * sortindex, modified, payload[, ttl in seconds]) into its account,
 * rows grouped by user; a src_row_fn over a struct migration. */
int migrate_record(void *ctx, const struct src_value *row, size_t ncols);

/* The account is not migrated: rolled back, reported with why. */
void migrate_fail_user(struct migration *m, struct legacy_user *u, const char *why);

/* ---- per-user-file servers (admin_migrate_files.c) -------------------- */

/* Whether path is a directory (not a symbolic link to one is fine too). */
bool migrate_is_directory(const char *path);

/* A data directory: weave-minimal's NAME.HASH files, or the PHP
 * server's SQLite engine (_users and a/b/c/MD5 files). Chooses the
 * format (format_opt: --format or NULL) and reads the users.
 * EXIT_OK or an exit code (told). */
int migrate_dir_open(struct migration *m, const char *dir, const char *format_opt);

/* Stream every user's file through migrate_record(); EXIT_OK or told. */
int migrate_dir_records(struct migration *m);

#endif
