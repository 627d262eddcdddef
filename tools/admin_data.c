/*
 * admin_data.c - weave-admin purge, stats, export and import: the records themselves.
 * Over 600 lines: four commands that walk the records in batches with one
 * progress display; export and import share the line format (records.h),
 * which backup and restore use too.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "admin.h"
#include "db_admin.h"
#include "db_history.h"
#include "db_storage.h"
#include "db_throttle.h"
#include "admin_usage.h"
#include "db_user.h"
#include "line_reader.h"
#include "records.h"
#include "util.h"
#include "wbo.h"

#define PURGE_BATCH_DEFAULT 1000
#define PURGE_PAUSE_DEFAULT 50 /* milliseconds */
#define PURGE_RETRIES 5
#define TOP_DEFAULT 10
/* MEDIUMBLOB holds at most 2^24 - 1 bytes; an escaped line is longer. */
#define PAYLOAD_MAX 16777215
#define LINE_MAX_BYTES (8 * (size_t)PAYLOAD_MAX)
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
/* The API's id rule (validate_wbo_id), as a refusal says it. */
#define ID_RULE "must be 1-64 printable ASCII bytes without '/' or ','"

/* ---- purge ----------------------------------------------------------------- */

/* After a DB_RETRY (a deadlock or lock wait with a busy writer): back
 * off longer than the usual pause, and say whether to try again. */
static bool back_off(int *retries, int64_t pause)
{
	if (*retries >= PURGE_RETRIES)
		return false;
	(*retries)++;
	sleep_micros((pause > 0 ? pause * 4 : 200) * 1000);
	return true;
}

/*
 * Record history older than history_days (all of it when that is 0):
 * each logged write goes with its versions, `batch` writes per short
 * transaction. An exit code.
 */
static int purge_history(int64_t now, int64_t batch, int64_t pause, bool dry_run,
			 bool quiet)
{
	int64_t before = admin_cfg.history_days > 0
				 ? now - admin_cfg.history_days * 86400 * 100
				 : INT64_MAX;
	int64_t old = 0;
	uint64_t writes = 0, versions = 0;
	int retries = 0;
	enum db_status st = db_history_count_before(before, &old);
	if (st != DB_OK)
		return db_fail(st, "counting old history");
	if (dry_run) {
		if (!quiet)
			printf("%" PRId64 " logged writes older than history_days (%" PRId64
			       ") would be removed with their kept versions\n",
			       old, admin_cfg.history_days);
		return EXIT_OK;
	}
	for (;;) {
		uint64_t w = 0, v = 0;
		st = db_begin();
		if (st == DB_OK)
			st = db_history_purge_batch(before, batch, &w, &v);
		if (st == DB_OK && w < (uint64_t)batch && admin_cfg.history_days == 0)
			st = db_history_forget_usage();
		if (st == DB_OK)
			st = db_commit();
		else
			db_rollback();
		if (st == DB_RETRY && back_off(&retries, pause))
			continue;
		if (st != DB_OK)
			return db_fail(st, "purging old history");
		retries = 0;
		writes += w;
		versions += v;
		if (w < (uint64_t)batch)
			break;
		sleep_micros(pause * 1000);
	}
	if (!quiet && writes > 0)
		printf("removed %" PRIu64 " logged writes and %" PRIu64 " kept versions "
		       "older than history_days (%" PRId64 ")\n", writes, versions,
		       admin_cfg.history_days);
	return EXIT_OK;
}

/* One statement's worth of the expired records of at's collection, run
 * again after a DB_RETRY. */
static enum db_status purge_batch(const struct db_wbo_key *at, int64_t now, int64_t batch,
				  int64_t pause, uint64_t *deleted)
{
	enum db_status st;
	int retries = 0;
	while ((st = db_admin_purge_batch(at, now, batch, deleted)) == DB_RETRY &&
	       back_off(&retries, pause))
		;
	return st;
}

/* Expired records, collection after collection of account after account
 * (db_admin.h says why), with a pause after every `batch` records
 * deleted; *total and *batches (the statements that deleted some) say
 * how far it got, also on failure. */
static enum db_status purge_records(int64_t now, int64_t batch, int64_t pause,
				    int64_t expired, uint64_t *total, int64_t *batches)
{
	struct progress p;
	enum db_status st;
	struct db_wbo_key at = { 0 };
	bool found;
	uint64_t since_pause = 0;
	progress_start(&p, "purge", "records", expired);
	while ((st = db_admin_next_expired(&at, now, &found)) == DB_OK && found) {
		uint64_t deleted = 0;
		if ((st = purge_batch(&at, now, batch, pause, &deleted)) != DB_OK)
			break;
		/* A full batch may have left some: look in the same collection
		 * again. */
		if (deleted < (uint64_t)batch)
			db_admin_skip_collection(&at);
		*batches += deleted > 0;
		*total += deleted;
		progress_update(&p, (int64_t)*total);
		if ((since_pause += deleted) >= (uint64_t)batch) {
			since_pause = 0;
			sleep_micros(pause * 1000);
		}
	}
	progress_end(&p);
	return st;
}

/* The server forgets old failed-login counters as it goes; a quiet server
 * leaves some, removed here. */
static enum db_status purge_counters(int64_t now, int64_t batch, uint64_t *counters)
{
	enum db_status st;
	uint64_t removed;
	do {
		removed = 0;
		st = db_throttle_forget(now / 100, batch, &removed);
		*counters += removed;
	} while (st == DB_OK && removed == (uint64_t)batch);
	return st;
}

/* "storage node NAME: " before what a place's purge says (nothing for the
 * account database). */
static void say_place(bool quiet)
{
	if (!quiet && db_current() != DB_ACCOUNTS)
		printf("storage node %s: ", db_place_name(db_current()));
}

/* Expired records, then old history, of the current place's database. */
static int purge_place(int64_t now, int64_t batch, int64_t pause, bool dry_run, bool quiet,
		       uint64_t *total, int64_t *batches)
{
	/* Without an expiry key the count reads the whole table: only for
	 * a dry run's answer or a progress bar's total (0: unknown). */
	int64_t expired = 0;
	enum db_status st = dry_run || progress_shown()
				    ? db_admin_count_expired(0, now, &expired) : DB_OK;
	if (st != DB_OK)
		return db_fail(st, "counting expired records");
	if (dry_run) {
		*total += (uint64_t)expired;
		say_place(quiet);
		if (!quiet)
			printf("%" PRId64 " expired records would be removed\n", expired);
		return purge_history(now, batch, pause, true, quiet);
	}
	uint64_t purged = 0;
	int64_t n = 0;
	double started = monotonic_seconds();
	st = purge_records(now, batch, pause, expired, &purged, &n);
	*total += purged;
	*batches += n;
	if (st != DB_OK) {
		fprintf(stderr, "weave-admin: %" PRIu64 " expired records were removed "
				"before the failure\n", purged);
		return db_fail(st, "purging expired records");
	}
	say_place(quiet);
	if (!quiet)
		printf("purged %" PRIu64 " expired records in %" PRId64 " batches (%.1f s)\n",
		       purged, n, monotonic_seconds() - started);
	return purge_history(now, batch, pause, false, quiet);
}

/* Every database: the account database, then each storage node's. */
int cmd_purge(const struct args *a)
{
	int64_t batch = PURGE_BATCH_DEFAULT, pause = PURGE_PAUSE_DEFAULT, batches = 0;
	bool json = has_opt(a, OPT_JSON), quiet = has_opt(a, OPT_QUIET) || json;
	bool dry_run = has_opt(a, OPT_DRY_RUN);
	uint64_t total = 0, counters = 0;
	int rc = EXIT_OK;

	if (has_opt(a, OPT_BATCH) &&
	    (rc = parse_number_arg(a->opt[OPT_BATCH], 1, 100000, "--batch", &batch)) != EXIT_OK)
		return rc;
	if (has_opt(a, OPT_PAUSE) &&
	    (rc = parse_number_arg(a->opt[OPT_PAUSE], 0, 60000, "--pause", &pause)) != EXIT_OK)
		return rc;
	/* Records that expire while we run are left for the next run. */
	int64_t now = now_centiseconds();
	double started = monotonic_seconds();
	for (size_t place = 0; place < db_places() && rc == EXIT_OK; place++) {
		db_use(place);
		rc = purge_place(now, batch, pause, dry_run, quiet, &total, &batches);
	}
	db_use(DB_ACCOUNTS);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = dry_run ? DB_OK : purge_counters(now, batch, &counters);
	if (st != DB_OK)
		return db_fail(st, "removing old failed-login counters");
	struct json_object *o = json ? json_object_new_object() : NULL;
	if (o != NULL && dry_run) {
		json_object_object_add(o, "dry_run", json_object_new_boolean(1));
		json_object_object_add(o, "expired_records", json_object_new_int64((int64_t)total));
	} else if (o != NULL) {
		json_object_object_add(o, "purged_records", json_object_new_int64((int64_t)total));
		json_object_object_add(o, "batches", json_object_new_int64(batches));
		json_object_object_add(o, "seconds",
				       json_object_new_double(monotonic_seconds() - started));
		json_object_object_add(o, "removed_counters",
				       json_object_new_int64((int64_t)counters));
	}
	if (o != NULL)
		json_print(o);
	else if (!quiet && counters > 0)
		printf("removed %" PRIu64 " failed-login counters past their window\n",
		       counters);
	return EXIT_OK;
}

/* ---- stats ---------------------------------------------------------------------- */

struct stats_ctx {
	struct json_object *collections; /* array */
	struct json_object *largest;     /* array */
	int64_t records, bytes;
};

static int64_t member_int(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	json_object_object_get_ex(o, key, &v);
	return json_object_get_int64(v);
}

static const char *member_str(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	json_object_object_get_ex(o, key, &v);
	return v ? json_object_get_string(v) : "-";
}

static int stats_collection(void *ctx, const char *name, size_t len, int64_t users,
			    int64_t records, int64_t bytes)
{
	struct stats_ctx *s = ctx;
	s->records += records;
	s->bytes += bytes;
	/* A collection seen on another database already (storage nodes): summed. */
	for (size_t i = 0; i < json_object_array_length(s->collections); i++) {
		struct json_object *o = json_object_array_get_idx(s->collections, i);
		const char *have = member_str(o, "collection");
		if (strlen(have) != len || memcmp(have, name, len) != 0)
			continue;
		json_object_object_add(o, "users", json_object_new_int64(member_int(o, "users") + users));
		json_object_object_add(o, "records",
				       json_object_new_int64(member_int(o, "records") + records));
		json_object_object_add(o, "bytes", json_object_new_int64(member_int(o, "bytes") + bytes));
		return 0;
	}
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "collection", json_object_new_string_len(name, (int)len));
	json_object_object_add(o, "users", json_object_new_int64(users));
	json_object_object_add(o, "records", json_object_new_int64(records));
	json_object_object_add(o, "bytes", json_object_new_int64(bytes));
	json_object_array_add(s->collections, o);
	return 0;
}

static int stats_user(void *ctx, const struct user *u, int64_t records, int64_t bytes)
{
	struct stats_ctx *s = ctx;
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "username", json_object_new_string(u->username));
	json_object_object_add(o, "records", json_object_new_int64(records));
	json_object_object_add(o, "bytes", json_object_new_int64(bytes));
	json_object_object_add(o, "last_write", json_stamp(u->last_write));
	json_object_array_add(s->largest, o);
	return 0;
}

int cmd_stats(const struct args *a)
{
	int64_t top = TOP_DEFAULT, users = 0, disabled = 0, expired = 0;
	int64_t now = now_centiseconds();
	int rc;

	if (has_opt(a, OPT_TOP) &&
	    (rc = parse_number_arg(a->opt[OPT_TOP], 0, 100000, "--top", &top)) != EXIT_OK)
		return rc;
	struct stats_ctx s = { json_object_new_array(), json_object_new_array(), 0, 0 };
	struct user_filter f = { .status = USER_ANY, .sort = USER_SORT_USAGE,
				 .limit = top, .now = now };
	enum db_status st = db_admin_count_users(&users, &disabled);
	/* Records on every database: the account database and the nodes'. */
	for (size_t place = 0; place < db_places() && st == DB_OK; place++) {
		int64_t here = 0;
		db_use(place);
		st = db_admin_count_expired(0, now, &here);
		expired += here;
		if (st == DB_OK)
			st = db_admin_collection_stats(now, stats_collection, &s);
	}
	db_use(DB_ACCOUNTS);
	if (st == DB_OK && top > 0)
		st = admin_user_search(&f, stats_user, &s);
	if (st != DB_OK) {
		json_object_put(s.collections);
		json_object_put(s.largest);
		return db_fail(st, "computing statistics");
	}

	if (has_opt(a, OPT_JSON)) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "users", json_object_new_int64(users));
		json_object_object_add(o, "disabled_users", json_object_new_int64(disabled));
		json_object_object_add(o, "records", json_object_new_int64(s.records));
		json_object_object_add(o, "bytes", json_object_new_int64(s.bytes));
		json_object_object_add(o, "expired_records", json_object_new_int64(expired));
		json_object_object_add(o, "collections", s.collections);
		json_object_object_add(o, "largest_users", s.largest);
		json_print(o);
		return EXIT_OK;
	}
	char size[32];
	format_bytes(s.bytes, size, sizeof size);
	printf("accounts     %" PRId64 " (%" PRId64 " disabled)\n", users, disabled);
	printf("records      %" PRId64 " (%s), %" PRId64 " expired waiting for purge\n",
	       s.records, size, expired);
	printf("\n%-32s %8s %12s %10s\n", "COLLECTION", "USERS", "RECORDS", "SIZE");
	size_t n = json_object_array_length(s.collections);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(s.collections, i);
		format_bytes(member_int(o, "bytes"), size, sizeof size);
		printf("%-32s %8" PRId64 " %12" PRId64 " %10s\n", member_str(o, "collection"),
		       member_int(o, "users"), member_int(o, "records"), size);
	}
	n = json_object_array_length(s.largest);
	if (n > 0)
		printf("\n%-32s %12s %10s  %s\n", "LARGEST ACCOUNTS", "RECORDS", "SIZE",
		       "LAST WRITE");
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(s.largest, i);
		struct json_object *last = NULL;
		char when[64] = "never";
		json_object_object_get_ex(o, "last_write", &last);
		if (last != NULL && json_object_get_double(last) > 0)
			format_utc((int64_t)json_object_get_double(last), when, sizeof when);
		format_bytes(member_int(o, "bytes"), size, sizeof size);
		printf("%-32s %12" PRId64 " %10s  %s\n", member_str(o, "username"),
		       member_int(o, "records"), size, when);
	}
	json_object_put(s.collections);
	json_object_put(s.largest);
	return EXIT_OK;
}

/* ---- export ---------------------------------------------------------------------- */

/*
 * One record as one line. Keys in a fixed order, strings escaped as the
 * server escapes them, integers for modified and expires: the same rows
 * always give the same bytes.
 */
int record_line_keys(struct buf *out, const struct db_record *r)
{
	int rc = buf_puts(out, "\"collection\":");
	if (rc == 0)
		rc = wbo_json_escape(out, r->collection, r->collection_len);
	if (rc == 0)
		rc = buf_puts(out, ",\"id\":");
	if (rc == 0)
		rc = wbo_json_escape(out, r->row.id, r->row.id_len);
	if (rc == 0)
		rc = buf_puts(out, ",\"parentid\":");
	if (rc == 0)
		rc = r->row.parentid ? wbo_json_escape(out, r->row.parentid, r->row.parentid_len)
				 : buf_puts(out, "null");
	if (rc == 0)
		rc = buf_puts(out, ",\"predecessorid\":");
	if (rc == 0)
		rc = r->row.predecessorid
			     ? wbo_json_escape(out, r->row.predecessorid, r->row.predecessorid_len)
			     : buf_puts(out, "null");
	if (rc == 0 && r->row.has_sortindex)
		rc = buf_printf(out, ",\"sortindex\":%" PRId64, r->row.sortindex);
	else if (rc == 0)
		rc = buf_puts(out, ",\"sortindex\":null");
	if (rc == 0)
		rc = buf_printf(out, ",\"modified\":%" PRId64, r->row.modified);
	if (rc == 0 && r->expires != DB_RECORD_NEVER)
		rc = buf_printf(out, ",\"expires\":%" PRId64, r->expires);
	else if (rc == 0)
		rc = buf_puts(out, ",\"expires\":null");
	if (rc == 0)
		rc = buf_puts(out, ",\"payload\":");
	if (rc == 0)
		rc = r->row.payload ? wbo_json_escape(out, r->row.payload, r->row.payload_len)
				: buf_puts(out, "null");
	return rc;
}

int record_line(struct buf *out, const struct db_record *r)
{
	int rc = buf_putc(out, '{');
	if (rc == 0)
		rc = record_line_keys(out, r);
	return rc == 0 ? buf_puts(out, "}\n") : rc;
}

struct export_ctx {
	FILE *out;
	struct buf line;
	struct progress progress;
	int64_t count;
	bool failed;
	int write_errno; /* of the failed write, 0 when none failed */
};

static int export_record(void *ctx, const struct db_record *r)
{
	struct export_ctx *e = ctx;
	buf_reset(&e->line);
	if (record_line(&e->line, r) < 0) {
		e->failed = true;
		return 1;
	}
	if (fwrite(e->line.data, 1, e->line.len, e->out) != e->line.len) {
		e->write_errno = errno;
		e->failed = true;
		return 1;
	}
	e->count++;
	progress_update(&e->progress, e->count);
	return 0;
}

/* A temporary file beside `file`, to be renamed over it once whole: never
 * a half file. Returns its name (free it) or NULL after saying why. */
static char *open_beside(const char *file, FILE **out)
{
	size_t len = strlen(file) + 8;
	char *tmp = xmalloc(len);
	snprintf(tmp, len, "%s.XXXXXX", file);
	int fd = mkstemp(tmp);
	if (fd >= 0 && (*out = fdopen(fd, "w")) != NULL)
		return tmp;
	fail(EXIT_FAILED, "cannot create %s: %s", tmp, strerror(errno));
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	free(tmp);
	return NULL;
}

/* Flush and close the export's output; true when everything was written. */
static bool finish_output(struct export_ctx *e, bool to_stdout)
{
	bool write_error = e->failed || fflush(e->out) != 0 || ferror(e->out);
	if (write_error && e->write_errno == 0)
		e->write_errno = errno;
	if (to_stdout && write_error && e->write_errno == EPIPE) {
		/* The reader had enough (export | head): end as cat does, quietly
		 * by SIGPIPE, which the database library set to be ignored. */
		signal(SIGPIPE, SIG_DFL);
		raise(SIGPIPE);
	}
	if (!to_stdout) {
		write_error |= fsync(fileno(e->out)) != 0;
		write_error |= fclose(e->out) != 0;
	}
	return !write_error;
}

int cmd_export(const struct args *a)
{
	const char *file = a->npos == 2 ? a->pos[1] : "-";
	bool to_stdout = strcmp(file, "-") == 0;
	char *tmp = NULL;
	struct user u;
	int64_t total = 0;

	struct stat st_file;
	if (!to_stdout && !has_opt(a, OPT_FORCE) && stat(file, &st_file) == 0)
		return fail(EXIT_FAILED, "%s exists: give --force to replace it", file);
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	db_use(records_place(&u)); /* reads only */
	enum db_status st = db_admin_count_records(u.id, &total);
	struct export_ctx e = { .out = stdout };
	if (st != DB_OK)
		rc = db_fail(st, "counting the records");
	else if (!to_stdout && (tmp = open_beside(file, &e.out)) == NULL)
		rc = EXIT_FAILED;
	if (rc != EXIT_OK) {
		user_free(&u);
		return rc;
	}
	buf_init(&e.line, LINE_MAX_BYTES);
	progress_start(&e.progress, "export", "records", total);
	st = db_admin_export(u.id, export_record, &e);
	progress_end(&e.progress);
	buf_free(&e.line);

	bool written = finish_output(&e, to_stdout);
	if (st != DB_OK)
		rc = db_fail(st, "reading the records");
	else if (!written)
		rc = fail(EXIT_FAILED, "cannot write %s: %s",
			  to_stdout ? "standard output" : file,
			  strerror(e.write_errno ? e.write_errno : errno));
	else if (!to_stdout && rename(tmp, file) != 0)
		rc = fail(EXIT_FAILED, "cannot rename %s to %s: %s", tmp, file,
			  strerror(errno));
	if (rc != EXIT_OK && tmp != NULL)
		unlink(tmp);
	if (rc == EXIT_OK && !has_opt(a, OPT_QUIET)) {
		/* With the data on stdout, the summary is for a person only. */
		if (!to_stdout)
			printf("exported %" PRId64 " records of %s to %s\n", e.count,
			       u.username, file);
		else if (isatty(STDERR_FILENO))
			fprintf(stderr, "exported %" PRId64 " records of %s\n", e.count,
				u.username);
	}
	free(tmp);
	user_free(&u);
	return rc;
}

/* ---- import ------------------------------------------------------------------------ */

struct import_ctx {
	const char *file;
	size_t line_no;
	struct json_object *held[DB_INSERT_CHUNK];
	struct db_record rows[DB_INSERT_CHUNK];
	size_t n;
	int64_t count, max_modified;
};

/* Reasons a line is refused; NULL when it is fine. */
static const char *optional_string(struct json_object *o, const char *key,
				   size_t max, const char **s, size_t *len)
{
	struct json_object *v = NULL;
	*s = NULL;
	*len = 0;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return NULL;
	if (!json_object_is_type(v, json_type_string))
		return "must be a string or null";
	*s = json_object_get_string(v);
	*len = (size_t)json_object_get_string_len(v);
	if (*len > max)
		return "is too long";
	return NULL;
}

static bool key_known(const char *k, const char *const *list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i++)
		if (strcmp(k, list[i]) == 0)
			return true;
	return false;
}

int64_t modified_limit(void)
{
	return now_centiseconds() + MODIFIED_SKEW_SECONDS * 100;
}

const char *stamp_refusal(int64_t centiseconds)
{
	if (centiseconds <= modified_limit())
		return NULL;
	return "is ahead of this server's clock by more than "
	       STRINGIFY(MODIFIED_SKEW_SECONDS) " s (every later write would be "
	       "stamped after it)";
}

static const char *optional_int(struct json_object *o, const char *key, int64_t min,
				int64_t max, bool *present, int64_t *out)
{
	struct json_object *v = NULL;
	*present = false;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return NULL;
	if (!json_object_is_type(v, json_type_int))
		return "must be an integer or null";
	errno = 0;
	*out = json_object_get_int64(v);
	if (errno != 0 || *out < min || *out > max)
		return "is out of range";
	*present = true;
	return NULL;
}

/* Check one parsed line and fill *r (pointing into o). */
int record_parse(const char *file, size_t line_no, struct json_object *o,
		 const char *const *extra, struct db_record *r)
{
	static const char *const known[] = { "collection", "id", "parentid",
					     "predecessorid", "sortindex", "modified",
					     "expires", "payload", NULL };
	const char *why = NULL, *key = NULL;
	bool present;
	int64_t v;

	memset(r, 0, sizeof *r);
	if (!json_object_is_type(o, json_type_object))
		return fail(EXIT_FAILED, "%s:%zu: not a JSON object", file, line_no);
	json_object_object_foreach(o, k, val)
	{
		(void)val;
		if (!key_known(k, known) && !key_known(k, extra))
			return fail(EXIT_FAILED, "%s:%zu: unknown key \"%s\"", file,
				    line_no, k);
	}
	if ((why = optional_string(o, key = "collection", COLLECTION_MAX, &r->collection,
				   &r->collection_len)) == NULL &&
	    (r->collection == NULL || !validate_collection(r->collection, r->collection_len)))
		why = "must be a collection name ([A-Za-z0-9._-]{1,32})";
	if (why == NULL &&
	    (why = optional_string(o, key = "id", WBO_ID_MAX, &r->row.id, &r->row.id_len)) == NULL &&
	    (r->row.id == NULL || !validate_wbo_id(r->row.id, r->row.id_len)))
		why = ID_RULE;
	if (why == NULL &&
	    (why = optional_string(o, key = "parentid", WBO_ID_MAX, &r->row.parentid,
				   &r->row.parentid_len)) == NULL &&
	    r->row.parentid != NULL && !validate_wbo_id(r->row.parentid, r->row.parentid_len))
		why = ID_RULE;
	if (why == NULL &&
	    (why = optional_string(o, key = "predecessorid", WBO_ID_MAX,
				   &r->row.predecessorid, &r->row.predecessorid_len)) == NULL &&
	    r->row.predecessorid != NULL &&
	    !validate_wbo_id(r->row.predecessorid, r->row.predecessorid_len))
		why = ID_RULE;
	if (why == NULL)
		why = optional_int(o, key = "sortindex", -SORTINDEX_LIMIT, SORTINDEX_LIMIT,
				   &r->row.has_sortindex, &r->row.sortindex);
	if (why == NULL &&
	    (why = optional_int(o, key = "modified", 0, INT64_MAX, &present,
				&r->row.modified)) == NULL &&
	    !present)
		why = "is missing (integer centiseconds)";
	if (why == NULL)
		why = stamp_refusal(r->row.modified);
	if (why == NULL &&
	    (why = optional_int(o, key = "expires", 1, INT64_MAX, &present, &v)) == NULL)
		r->expires = present ? v : DB_RECORD_NEVER;
	if (why == NULL)
		why = optional_string(o, key = "payload", PAYLOAD_MAX, &r->row.payload,
				      &r->row.payload_len);
	if (why != NULL)
		return fail(EXIT_FAILED, "%s:%zu: \"%s\" %s", file, line_no, key, why);
	return EXIT_OK;
}

static void release_held(struct import_ctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		json_object_put(c->held[i]);
	c->n = 0;
}

static enum db_status flush_rows(struct import_ctx *c, int64_t user_id)
{
	enum db_status st = c->n ? db_admin_insert_records(user_id, c->rows, c->n) : DB_OK;
	release_held(c);
	return st;
}

/* Read every line into the open transaction; an exit code. */
static int import_lines(FILE *in, struct import_ctx *c, int64_t user_id,
			struct progress *p)
{
	struct line_reader *lr = xmalloc(sizeof *lr);
	struct buf line;
	enum line_result lres;
	int rc = EXIT_OK;
	struct json_tokener *tok = json_tokener_new();

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	line_reader_init(lr, line_read_stdio, in);
	buf_init(&line, LINE_MAX_BYTES);
	while (rc == EXIT_OK && (lres = line_reader_next(lr, &line)) == LINE_OK) {
		c->line_no++;
		size_t len = line.len;
		while (len > 0 && line.data[len - 1] == '\r')
			len--;
		if (len == 0)
			continue;
		json_tokener_reset(tok);
		struct json_object *o = json_tokener_parse_ex(tok, line.data, (int)len);
		if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
		    json_tokener_get_parse_end(tok) != len) {
			json_object_put(o);
			rc = fail(EXIT_FAILED, "%s:%zu: not one JSON object per line (%s)",
				  c->file, c->line_no,
				  json_tokener_error_desc(json_tokener_get_error(tok)));
			break;
		}
		c->held[c->n] = o;
		rc = record_parse(c->file, c->line_no, o, NULL, &c->rows[c->n]);
		c->n++;
		if (rc != EXIT_OK)
			break;
		if (c->rows[c->n - 1].row.modified > c->max_modified)
			c->max_modified = c->rows[c->n - 1].row.modified;
		c->count++;
		if (c->n == DB_INSERT_CHUNK) {
			enum db_status st = flush_rows(c, user_id);
			if (st != DB_OK)
				rc = db_fail(st, "inserting records");
		}
		progress_update(p, p->total > 0 ? lr->consumed : c->count);
	}
	if (rc == EXIT_OK && lres == LINE_TOO_LONG)
		rc = fail(EXIT_FAILED, "%s:%zu: line too long (over %zu bytes): not an "
			  "export file", c->file, c->line_no + 1, (size_t)LINE_MAX_BYTES);
	else if (rc == EXIT_OK && lres == LINE_ERROR)
		rc = fail(EXIT_FAILED, "cannot read %s: %s", c->file, strerror(errno));
	if (rc == EXIT_OK) {
		enum db_status st = flush_rows(c, user_id);
		if (st != DB_OK)
			rc = db_fail(st, "inserting records");
	}
	release_held(c);
	json_tokener_free(tok);
	buf_free(&line);
	free(lr);
	return rc;
}

/*
 * One transaction, holding the account's row lock as a write request
 * does, so the server's writes for this user wait for the import; on a
 * storage node the records go in a transaction there (*place current),
 * committed first, as the server's writes do (storage_place.h). With
 * replace the account's records are deleted first. An exit code.
 */
static int import_begin(const struct user *u, bool replace, size_t *place)
{
	struct user locked;
	*place = DB_ACCOUNTS;
	enum db_status st = db_begin();
	if (st == DB_OK)
		st = db_user_get(u->username, USER_LOCK_EXCLUSIVE, &locked);
	bool moving = st == DB_OK && locked.status == USER_STATUS_MOVING;
	if (st == DB_OK) {
		*place = records_place(&locked);
		user_free(&locked);
	}
	if (st == DB_OK && !moving)
		st = records_begin(*place);
	if (st == DB_OK && !moving && replace)
		st = db_storage_delete_all(NULL, u->id);
	if (st == DB_OK && !moving)
		return EXIT_OK;
	records_rollback();
	if (moving)
		return fail(EXIT_FAILED, "%s is moving to another storage node: run the import "
					 "when 'weave-admin user move' is done", u->username);
	return st == DB_NOT_FOUND ? fail(EXIT_FAILED, "no such user: %s", u->username)
				  : db_fail(st, "starting the import");
}

int cmd_import(const struct args *a)
{
	const char *file = a->pos[1];
	bool from_stdin = strcmp(file, "-") == 0;
	struct import_ctx c = { .file = from_stdin ? "(stdin)" : file };
	struct user u;
	struct stat sb;

	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	FILE *in = from_stdin ? stdin : fopen(file, "r");
	if (in == NULL) {
		rc = fail(EXIT_FAILED, "cannot open %s: %s", file, strerror(errno));
		user_free(&u);
		return rc;
	}
	int64_t size = fstat(fileno(in), &sb) == 0 && S_ISREG(sb.st_mode) ? sb.st_size : 0;

	size_t place = DB_ACCOUNTS;
	enum db_status st;
	rc = import_begin(&u, has_opt(a, OPT_REPLACE), &place);
	if (rc != EXIT_OK)
		goto done;
	struct progress p;
	progress_start(&p, "import", size > 0 ? "bytes" : "records", size);
	rc = import_lines(in, &c, u.id, &p);
	progress_end(&p);
	if (rc == EXIT_OK && (st = records_commit(place)) != DB_OK)
		rc = db_fail(st, "committing the records");
	if (rc == EXIT_OK) {
		/* New writes must be stamped above every imported record, and
		 * the records changed (even when none came in, with --replace). */
		st = db_user_raise_last_write(u.id, c.max_modified);
		if (st != DB_OK)
			rc = db_fail(st, "updating the last write");
	}
	if (rc == EXIT_OK) {
		st = db_commit();
		if (st != DB_OK)
			rc = db_fail(st, "committing the import");
	} else {
		records_rollback();
		fprintf(stderr, "weave-admin: nothing was imported\n");
	}
	if (rc == EXIT_OK && !has_opt(a, OPT_QUIET))
		printf("imported %" PRId64 " records into %s%s\n", c.count, u.username,
		       has_opt(a, OPT_REPLACE) ? " (its earlier records were deleted)" : "");
done:
	if (!from_stdin)
		fclose(in);
	user_free(&u);
	return rc;
}
