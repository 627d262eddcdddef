/*
 * admin_backup.c - weave-admin backup: the whole server or chosen
 * accounts, read in one consistent snapshot, into a backup file
 * (backup_file.h; the format is in docs/backup.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "admin.h"
#include "admin_backup_db.h"
#include "backup_file.h"
#include "backup_names.h"
#include "db_admin.h"
#include "records.h"
#include "util.h"

struct backup_ctx {
	struct backup_writer w;
	struct buf line;
	struct user *users;
	size_t nusers, cap;
	int64_t nodes, records, versions, writes, usages;
	bool failed; /* a line did not fit or a write failed: w.why says */
};

static int emit(struct backup_ctx *b)
{
	if (b->failed)
		return 1;
	if (backup_writer_line(&b->w, &b->line) < 0) {
		b->failed = true;
		return 1;
	}
	return 0;
}

static int too_long(struct backup_ctx *b)
{
	snprintf(b->w.why, sizeof b->w.why, "a line is over %zu bytes",
		 (size_t)BACKUP_LINE_MAX);
	b->failed = true;
	return 1;
}

static int keep_user(void *ctx, const struct user *u, int64_t records, int64_t bytes)
{
	struct backup_ctx *b = ctx;
	(void)records;
	(void)bytes;
	if (b->nusers == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->users = xrealloc(b->users, b->cap * sizeof *b->users);
	}
	user_copy(&b->users[b->nusers++], u);
	return 0;
}

static int node_line(void *ctx, const struct db_node *n)
{
	struct backup_ctx *b = ctx;
	int rc = bk_open(&b->line, "node");
	rc |= bk_cstr(&b->line, "url", n->url);
	rc |= n->capacity < 0 ? buf_puts(&b->line, ",\"capacity\":null")
			      : bk_int(&b->line, "capacity", n->capacity);
	rc |= bk_int(&b->line, "created", n->created);
	rc |= bk_close(&b->line);
	if (rc != 0)
		return too_long(b);
	b->nodes++;
	return emit(b);
}

static int account_line(struct backup_ctx *b, const struct user *u)
{
	int rc = bk_open(&b->line, "account");
	rc |= bk_cstr(&b->line, "username", u->username);
	rc |= bk_cstr(&b->line, "password_hash", u->password_hash);
	rc |= bk_cstr(&b->line, "email", u->email);
	rc |= bk_int(&b->line, "status", u->status);
	rc |= u->quota_kb < 0 ? buf_puts(&b->line, ",\"quota_kb\":null")
			      : bk_int(&b->line, "quota_kb", u->quota_kb);
	rc |= bk_cstr(&b->line, "node", u->node);
	rc |= bk_cstr(&b->line, "alert", u->alert);
	rc |= bk_int(&b->line, "last_write", u->last_write);
	rc |= bk_int(&b->line, "created", u->created);
	rc |= bk_close(&b->line);
	return rc != 0 ? too_long(b) : emit(b);
}

static int record_out(void *ctx, const struct db_record *r)
{
	struct backup_ctx *b = ctx;
	int rc = bk_open(&b->line, "record");
	rc |= buf_putc(&b->line, ',');
	rc |= record_line_keys(&b->line, r);
	rc |= bk_close(&b->line);
	if (rc != 0)
		return too_long(b);
	b->records++;
	return emit(b);
}

static int version_out(void *ctx, const struct backup_version *v)
{
	struct backup_ctx *b = ctx;
	int rc = bk_open(&b->line, "version");
	rc |= bk_int(&b->line, "replaced", v->replaced);
	rc |= buf_putc(&b->line, ',');
	rc |= record_line_keys(&b->line, &v->rec);
	rc |= bk_close(&b->line);
	if (rc != 0)
		return too_long(b);
	b->versions++;
	return emit(b);
}

static int write_out(void *ctx, const struct backup_write *w)
{
	struct backup_ctx *b = ctx;
	int rc = bk_open(&b->line, "write");
	rc |= bk_int(&b->line, "stamp", w->stamp);
	rc |= bk_str(&b->line, "collection", w->collection, w->collection_len);
	rc |= bk_int(&b->line, "previous", w->previous);
	rc |= bk_int(&b->line, "written", w->written);
	rc |= bk_int(&b->line, "replaced", w->replaced);
	rc |= bk_int(&b->line, "deleted", w->deleted);
	rc |= bk_int(&b->line, "bytes", w->bytes);
	rc |= bk_str(&b->line, "agent", w->agent, w->agent_len);
	rc |= bk_close(&b->line);
	if (rc != 0)
		return too_long(b);
	b->writes++;
	return emit(b);
}

/*
 * A snapshot on every database: the account database's, then each storage
 * node's, all begun within moments. An account moved meanwhile is still
 * whole on the node its row names: a move deletes the old node's copy only
 * seconds after its switch (admin_move.c).
 */
static enum db_status snapshot_every_place(void)
{
	enum db_status st = DB_OK;
	for (size_t place = 0; place < db_places() && st == DB_OK; place++) {
		db_use(place);
		st = db_begin_snapshot();
	}
	db_use(DB_ACCOUNTS);
	return st;
}

static void end_snapshots(void)
{
	for (size_t place = 0; place < db_places(); place++) {
		db_use(place);
		db_commit(); /* read only: this ends the snapshot */
	}
	db_use(DB_ACCOUNTS);
}

/* One account: its row, records, kept versions, logged writes, usage. */
static enum db_status backup_account(struct backup_ctx *b, const struct user *u)
{
	int64_t bytes = 0, since = 0;
	account_line(b, u);
	/* The records on the database of the account's node (each place
	 * holds its own snapshot: backup_snapshot()). */
	size_t was = db_use(records_place(u));
	enum db_status st = b->failed ? DB_OK : db_admin_export(u->id, record_out, b);
	if (st == DB_OK && !b->failed)
		st = backup_db_versions(u->id, INT64_MIN, version_out, b);
	if (st == DB_OK && !b->failed)
		st = backup_db_writes(u->id, INT64_MIN, write_out, b);
	if (st == DB_OK && !b->failed)
		st = backup_db_usage(u->id, &bytes, &since);
	db_use(was);
	if (st == DB_NOT_FOUND)
		return DB_OK;
	if (st == DB_OK && !b->failed) {
		int rc = bk_open(&b->line, "usage");
		rc |= bk_int(&b->line, "bytes", bytes);
		rc |= bk_int(&b->line, "since", since);
		rc |= bk_close(&b->line);
		if (rc != 0 ? too_long(b) : emit(b))
			return DB_OK;
		b->usages++;
	}
	return st;
}

static int header_line(struct backup_ctx *b, int64_t schema, bool whole)
{
	time_t now = time(NULL);
	char when[32];
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_reset(&b->line);
	int rc = buf_printf(&b->line, "{\"weave_backup\":%d", BACKUP_FORMAT);
	rc |= bk_int(&b->line, "schema", schema);
	rc |= bk_cstr(&b->line, "server", "weave-server " PACKAGE_VERSION);
	rc |= bk_int(&b->line, "created", (int64_t)now);
	rc |= bk_cstr(&b->line, "created_utc", when);
	rc |= bk_cstr(&b->line, "database", admin_cfg.db_name);
	rc |= bk_cstr(&b->line, "scope", whole ? "server" : "accounts");
	rc |= bk_int(&b->line, "accounts", (int64_t)b->nusers);
	rc |= bk_close(&b->line);
	return rc != 0 ? too_long(b) : emit(b);
}

/* The accounts to back up, read inside the snapshot. An exit code. */
static int choose_accounts(struct backup_ctx *b, const struct backup_names *names)
{
	enum db_status st;
	if (names->count == 0) {
		struct user_filter f = { .status = USER_ANY, .sort = USER_SORT_NAME };
		st = db_user_search(&f, keep_user, b);
		return st == DB_OK ? EXIT_OK : db_fail(st, "listing the accounts");
	}
	for (size_t i = 0; i < names->count; i++) {
		struct user u;
		st = db_user_get(names->at[i].name, USER_LOCK_NONE, &u);
		if (st == DB_NOT_FOUND)
			return fail(EXIT_FAILED, "no such user: %s (nothing was written)",
				    names->at[i].name);
		if (st != DB_OK)
			return db_fail(st, "looking up the accounts");
		keep_user(b, &u, 0, 0);
		user_free(&u);
	}
	return EXIT_OK;
}

/* Everything between the snapshot's start and its end. An exit code. */
static int backup_all(struct backup_ctx *b, const struct backup_names *names)
{
	int64_t schema = 0;
	enum db_status st = db_schema_version(&schema);
	if (st != DB_OK)
		return db_fail(st, "reading the schema version");
	int rc = choose_accounts(b, names);
	if (rc != EXIT_OK)
		return rc;
	header_line(b, schema, names->count == 0);
	/* Nodes belong to the server: a backup of some accounts carries only
	 * their own node URLs. */
	if (names->count == 0 && !b->failed)
		st = db_node_list(node_line, b);
	struct progress p;
	progress_start(&p, "backup", "accounts", (int64_t)b->nusers);
	for (size_t i = 0; st == DB_OK && !b->failed && i < b->nusers; i++) {
		st = backup_account(b, &b->users[i]);
		progress_update(&p, (int64_t)i + 1);
	}
	progress_end(&p);
	if (st != DB_OK)
		return db_fail(st, "reading the accounts");
	if (b->failed)
		return fail(EXIT_FAILED, "cannot write the backup: %s", b->w.why);
	return EXIT_OK;
}

static int write_trailer(struct backup_ctx *b)
{
	int rc = bk_open(&b->line, "end");
	rc |= bk_int(&b->line, "accounts", (int64_t)b->nusers);
	rc |= bk_int(&b->line, "nodes", b->nodes);
	rc |= bk_int(&b->line, "records", b->records);
	rc |= bk_int(&b->line, "versions", b->versions);
	rc |= bk_int(&b->line, "writes", b->writes);
	rc |= bk_int(&b->line, "usages", b->usages);
	if (rc != 0 || backup_writer_end(&b->w, &b->line) < 0)
		return fail(EXIT_FAILED, "cannot write the backup: %s", b->w.why);
	return EXIT_OK;
}

static void print_summary(const struct args *a, const struct backup_ctx *b,
			  const char *file, double took)
{
	if (has_opt(a, OPT_JSON)) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "file", json_object_new_string(file));
		json_object_object_add(o, "accounts", json_object_new_int64((int64_t)b->nusers));
		json_object_object_add(o, "nodes", json_object_new_int64(b->nodes));
		json_object_object_add(o, "records", json_object_new_int64(b->records));
		json_object_object_add(o, "versions", json_object_new_int64(b->versions));
		json_object_object_add(o, "writes", json_object_new_int64(b->writes));
		json_object_object_add(o, "seconds", json_object_new_double(took));
		json_print(o);
	} else if (!has_opt(a, OPT_QUIET)) {
		printf("backed up %zu accounts (%" PRId64 " records, %" PRId64
		       " kept versions, %" PRId64 " nodes) to %s in %.1f s\n",
		       b->nusers, b->records, b->versions, b->nodes, file, took);
	}
}

/* A temporary file beside `file` (mode 0600: it holds password hashes). */
static int open_output(const char *file, char **tmp)
{
	size_t len = strlen(file) + 8;
	*tmp = xmalloc(len);
	snprintf(*tmp, len, "%s.XXXXXX", file);
	int fd = mkstemp(*tmp);
	if (fd < 0) {
		fail(EXIT_FAILED, "cannot create %s: %s", *tmp, strerror(errno));
		free(*tmp);
		*tmp = NULL;
	}
	return fd;
}

static void free_users(struct backup_ctx *b)
{
	for (size_t i = 0; i < b->nusers; i++)
		user_free(&b->users[i]);
	free(b->users);
}

int cmd_backup(const struct args *a)
{
	const char *file = a->pos[0];
	struct backup_names names;
	struct backup_ctx b = { 0 };
	struct stat sb;
	char *tmp = NULL;
	double started = monotonic_seconds();

	if (strcmp(file, "-") == 0)
		return usage_error("a backup goes to a FILE, not standard output: it is "
				   "written beside it and renamed when whole");
	if (!has_opt(a, OPT_FORCE) && stat(file, &sb) == 0)
		return fail(EXIT_FAILED, "%s exists: give --force to replace it", file);
	int rc = backup_names_get(a, &names);
	if (rc != EXIT_OK)
		return rc;
	int fd = open_output(file, &tmp);
	if (fd < 0 || backup_writer_open(&b.w, fd) < 0) {
		if (fd >= 0)
			close(fd);
		rc = fd < 0 ? EXIT_FAILED : fail(EXIT_FAILED, "%s", b.w.why);
		goto done;
	}
	buf_init(&b.line, BACKUP_LINE_MAX);
	enum db_status st = snapshot_every_place();
	rc = st == DB_OK ? backup_all(&b, &names) : db_fail(st, "starting the snapshot");
	end_snapshots();
	if (rc == EXIT_OK)
		rc = write_trailer(&b);
	else
		backup_writer_abort(&b.w);
	if (rc == EXIT_OK && rename(tmp, file) != 0)
		rc = fail(EXIT_FAILED, "cannot rename %s to %s: %s", tmp, file, strerror(errno));
	if (rc == EXIT_OK)
		print_summary(a, &b, file, monotonic_seconds() - started);
	buf_free(&b.line);
done:
	if (rc != EXIT_OK && tmp != NULL)
		unlink(tmp);
	free(tmp);
	free_users(&b);
	backup_names_free(&names);
	return rc;
}
