/*
 * admin_restore.c - weave-admin restore: a backup file (backup_file.h)
 * read twice. The first pass checks every line, the counts and the
 * checksum, and which accounts exist already, and writes nothing; the
 * second writes each account in a transaction of its own through
 * db_user.c, so every change reaches the servers' caches (change board
 * and change log) as any other account change does.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "admin_backup_db.h"
#include "backup_file.h"
#include "backup_names.h"
#include "change_board.h"
#include "db_admin.h"
#include "restore_lines.h"
#include "storage_place.h"

#define CONFLICTS_SHOWN 5

struct restore {
	const char *file;
	bool apply, replace;
	struct backup_names only; /* --user / --users-file; empty: all */
	struct backup_reader r;
	struct line_at at;
	struct json_tokener *tok;
	int64_t count[BL__MAX]; /* lines of each kind in the file */
	int64_t schema;
	/* the account the lines now belong to */
	bool in_account, selected;
	char username[USERNAME_MAX + 1];
	int64_t user_id, last_write, newest; /* newest: of its records' modified */
	size_t place; /* of its records (db.h): its own transaction there too */
	/* pass 1: accounts chosen, and those that exist already */
	int64_t selected_accounts, conflicts;
	struct buf conflict_names;
	/* pass 2 */
	struct json_object *held[DB_INSERT_CHUNK];
	struct db_record rows[DB_INSERT_CHUNK];
	size_t nrows;
	int64_t done[BL__MAX]; /* rows written */
	int64_t nodes_kept;    /* nodes already there */
	struct progress progress;
};

static void release_rows(struct restore *s)
{
	for (size_t i = 0; i < s->nrows; i++)
		json_object_put(s->held[i]);
	s->nrows = 0;
}

static enum db_status flush_rows(struct restore *s)
{
	size_t was = db_use(s->place);
	enum db_status st =
		s->nrows ? db_admin_insert_records(s->user_id, s->rows, s->nrows) : DB_OK;
	db_use(was);
	release_rows(s);
	return st;
}

/* The records' transaction on a storage node commits first, as the
 * server's writes do (storage_place.h). */
static enum db_status commit_records(struct restore *s)
{
	if (s->place == DB_ACCOUNTS)
		return DB_OK;
	size_t was = db_use(s->place);
	enum db_status st = db_commit();
	db_use(was);
	return st;
}

/* The account's records go to its node's database (config_node_place). */
static enum db_status open_records(struct restore *s, const char *node)
{
	s->place = config_node_place(&admin_cfg, node);
	if (s->place == DB_ACCOUNTS)
		return DB_OK;
	size_t was = db_use(s->place);
	enum db_status st = db_begin();
	db_use(was);
	return st;
}

/* The account's transaction is over: commit it. An exit code. */
static int finish_account(struct restore *s)
{
	if (!s->apply || !s->in_account || !s->selected)
		return EXIT_OK;
	enum db_status st = flush_rows(s);
	if (st == DB_OK)
		st = commit_records(s);
	/* After the records, as the server's writes do. A backup's clock is
	 * never below its records; a file that says otherwise gets the newest
	 * record's, so new writes are still stamped above every record. */
	if (st == DB_OK)
		st = db_user_set_last_write(s->user_id, s->last_write > s->newest
								? s->last_write
								: s->newest);
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback();
	s->in_account = false;
	if (st != DB_OK)
		return db_fail(st, "restoring an account");
	s->done[BL_ACCOUNT]++;
	return EXIT_OK;
}

/* Pass 1: does the account exist? Collect the names for the refusal. */
static int note_existing(struct restore *s, const char *name)
{
	int exists = 0;
	enum db_status st = db_user_exists(name, &exists);
	if (st != DB_OK)
		return db_fail(st, "looking up the accounts");
	if (exists && s->conflicts++ < CONFLICTS_SHOWN)
		buf_printf(&s->conflict_names, "%s%s", s->conflicts > 1 ? ", " : "", name);
	return EXIT_OK;
}

/* Pass 2: the account's row, replacing an existing one when allowed. */
static enum db_status create_account(struct restore *s, const struct backup_account *acc)
{
	struct user old;
	enum db_status st = db_user_get(acc->username, USER_LOCK_EXCLUSIVE, &old);
	if (st == DB_OK) {
		/* Without --replace, pass 1 found none: this one signed up since. */
		st = s->replace ? storage_place_forget_records(&admin_cfg, old.id, old.node)
				: DB_CONFLICT;
		if (st == DB_OK)
			st = db_user_delete(old.id);
		user_free(&old);
	} else if (st == DB_NOT_FOUND) {
		st = DB_OK;
	}
	if (st == DB_OK)
		st = db_user_create(acc->username, acc->password_hash, acc->email, acc->node,
				    &s->user_id);
	if (st == DB_OK)
		st = open_records(s, acc->node);
	if (st == DB_OK && acc->status != 1)
		st = db_user_set_status(s->user_id, (int)acc->status);
	if (st == DB_OK && acc->quota_kb >= 0)
		st = db_user_set_quota(s->user_id, acc->quota_kb);
	if (st == DB_OK && acc->alert != NULL)
		st = db_user_set_alert(s->user_id, acc->alert);
	if (st == DB_OK)
		st = backup_db_set_created(s->user_id, acc->created);
	if (st == DB_OK)
		change_board_bump(s->user_id);
	return st;
}

/* The account name of a line, before the line is checked. */
static const char *line_username(struct json_object *o)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, "username", &v) ||
	    !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

/* An account line: the rows after it are its own. Accounts not chosen
 * (--user) are passed over with their rows, unchecked but counted. */
static int on_account(struct restore *s, struct json_object *o)
{
	struct backup_account acc;
	int rc = finish_account(s);
	if (rc != EXIT_OK)
		return rc;
	long i = backup_names_find(&s->only, line_username(o));
	s->in_account = true;
	s->selected = s->only.count == 0 || i >= 0;
	if (!s->selected)
		return EXIT_OK;
	rc = restore_parse_account(&s->at, o, &acc);
	if (rc != EXIT_OK)
		return rc;
	snprintf(s->username, sizeof s->username, "%s", acc.username);
	s->last_write = acc.last_write;
	s->newest = 0;
	if (i >= 0)
		s->only.at[i].seen = true;
	s->selected_accounts++;
	if (!s->apply)
		return note_existing(s, acc.username);
	enum db_status st = db_begin();
	if (st == DB_OK)
		st = create_account(s, &acc);
	if (st != DB_OK) {
		db_rollback();
		s->in_account = false;
		if (st == DB_CONFLICT)
			return fail(EXIT_FAILED, "account %s was created while restore ran; "
				    "it is kept, the backup's is not restored", acc.username);
		return db_fail(st, "creating the account");
	}
	return EXIT_OK;
}

static int on_node(struct restore *s, struct json_object *o)
{
	struct backup_node n;
	int rc = restore_parse_node(&s->at, o, &n);
	if (rc != EXIT_OK || !s->apply)
		return rc;
	if (s->in_account)
		return fail(EXIT_FAILED, "%s:%zu: a node after the accounts", s->file,
			    s->at.line_no);
	enum db_status st = db_node_add(n.url, n.capacity, n.created);
	if (st == DB_CONFLICT) {
		s->nodes_kept++; /* the node is there: its capacity stays */
		return EXIT_OK;
	}
	if (st == DB_OK)
		s->done[BL_NODE]++;
	return st == DB_OK ? EXIT_OK : db_fail(st, "adding a node");
}

/* A record; in pass 2 it waits in rows[] (o held) for one INSERT of many. */
static int on_record(struct restore *s, struct json_object *o)
{
	int rc = restore_parse_record(&s->at, o, &s->rows[s->nrows]);
	if (rc != EXIT_OK || !s->apply)
		return rc;
	if (s->rows[s->nrows].row.modified > s->newest)
		s->newest = s->rows[s->nrows].row.modified;
	s->held[s->nrows++] = json_object_get(o);
	s->done[BL_RECORD]++;
	if (s->nrows < DB_INSERT_CHUNK)
		return EXIT_OK;
	enum db_status st = flush_rows(s);
	return st == DB_OK ? EXIT_OK : db_fail(st, "inserting records");
}

/* Kept versions, logged writes and history usage: one row each. */
static int on_history(struct restore *s, enum backup_line kind, struct json_object *o)
{
	struct backup_version v;
	struct backup_write w;
	struct backup_usage u;
	int rc = kind == BL_VERSION ? restore_parse_version(&s->at, o, &v)
		 : kind == BL_WRITE ? restore_parse_write(&s->at, o, &w)
				    : restore_parse_usage(&s->at, o, &u);
	if (rc != EXIT_OK || !s->apply)
		return rc;
	size_t was = db_use(s->place);
	enum db_status st = kind == BL_VERSION ? backup_db_put_version(s->user_id, &v)
			    : kind == BL_WRITE ? backup_db_put_write(s->user_id, &w)
					       : backup_db_put_usage(s->user_id, u.bytes, u.since);
	db_use(was);
	if (st == DB_OK)
		s->done[kind]++;
	return st == DB_OK ? EXIT_OK : db_fail(st, "inserting record history");
}

static int on_header(struct restore *s, struct json_object *o)
{
	struct backup_header h;
	int64_t installed = 0;
	int rc = restore_parse_header(&s->at, o, &h);
	if (rc != EXIT_OK || s->apply)
		return rc;
	enum db_status st = db_schema_version(&installed);
	if (st != DB_OK)
		return db_fail(st, "reading the schema version");
	if (h.schema > installed)
		return fail(EXIT_FAILED, "%s was made with schema version %" PRId64 ", this "
			    "database has %" PRId64 ": run 'weave-admin db upgrade' first",
			    s->file, h.schema, installed);
	return EXIT_OK;
}

/* Every count of the trailer matches the lines read, and the checksum. */
static int check_trailer(struct restore *s, struct json_object *o)
{
	struct backup_trailer t;
	char hex[65];
	int rc = restore_parse_trailer(&s->at, o, &t);
	if (rc != EXIT_OK)
		return rc;
	backup_reader_digest(&s->r, hex);
	if (strcmp(hex, t.sha256) != 0)
		return fail(EXIT_FAILED, "%s: the checksum does not match: the file was "
			    "changed or damaged after it was written", s->file);
	for (int k = 0; k < BL__MAX; k++)
		if (restore_count_name(k) != NULL && t.count[k] != s->count[k])
			return fail(EXIT_FAILED, "%s: the trailer counts %" PRId64 " %s, the "
				    "file holds %" PRId64, s->file, t.count[k],
				    restore_count_name(k), s->count[k]);
	return EXIT_OK;
}

static int on_line(struct restore *s, enum backup_line kind, struct json_object *o)
{
	if (kind == BL_HEADER)
		return s->at.line_no == 1 ? on_header(s, o)
					  : fail(EXIT_FAILED, "%s:%zu: a second header",
						 s->file, s->at.line_no);
	if (s->at.line_no == 1)
		return fail(EXIT_FAILED, "%s: not a weave-admin backup (no header line)",
			    s->file);
	if (kind == BL_NODE)
		return on_node(s, o);
	if (kind == BL_ACCOUNT)
		return on_account(s, o);
	if (!s->in_account)
		return fail(EXIT_FAILED, "%s:%zu: a %s line before any account", s->file,
			    s->at.line_no, kind == BL_RECORD ? "record" : "history");
	if (!s->selected)
		return EXIT_OK;
	if (kind == BL_RECORD)
		return on_record(s, o);
	return on_history(s, kind, o);
}

static struct json_object *parse_json(struct restore *s)
{
	struct buf *line = &s->r.line;
	json_tokener_reset(s->tok);
	struct json_object *o = json_tokener_parse_ex(s->tok, line->data, (int)line->len);
	if (o == NULL || json_tokener_get_error(s->tok) != json_tokener_success ||
	    json_tokener_get_parse_end(s->tok) != line->len) {
		json_object_put(o);
		if (s->at.line_no == 1)
			fail(EXIT_FAILED, "%s: not a weave-admin backup (its first line is "
			     "no JSON object)", s->file);
		else
			fail(EXIT_FAILED, "%s:%zu: not one JSON object per line: the file "
			     "is damaged", s->file, s->at.line_no);
		return NULL;
	}
	return o;
}

/* The next line's kind and object, or an exit code (EXIT_OK with
 * *o NULL at the end of the file). */
static int next_line(struct restore *s, enum backup_line *kind, struct json_object **o)
{
	*o = NULL;
	enum line_result res = backup_reader_next(&s->r);
	s->at.line_no = s->r.line_no;
	if (res == LINE_EOF)
		return EXIT_OK;
	if (res == LINE_TOO_LONG)
		return fail(EXIT_FAILED, "%s:%zu: line over %zu bytes: not a weave-admin "
			    "backup", s->file, s->r.line_no + 1, (size_t)BACKUP_LINE_MAX);
	if (res == LINE_ERROR)
		return fail(EXIT_FAILED, "%s: damaged or truncated after line %zu (%s)",
			    s->file, s->r.line_no, s->r.why);
	if ((*o = parse_json(s)) == NULL)
		return EXIT_FAILED;
	*kind = restore_line_kind(&s->at, *o);
	if (*kind == BL__MAX) {
		json_object_put(*o);
		*o = NULL;
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

/* One pass over the file. An exit code. */
static int read_pass(struct restore *s)
{
	bool ended = false;
	int rc = EXIT_OK;
	if (backup_reader_open(&s->r, s->file) < 0)
		return fail(EXIT_FAILED, "cannot open %s: %s", s->file, s->r.why);
	s->tok = json_tokener_new();
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT);
	memset(s->count, 0, sizeof s->count);
	s->in_account = false;
	for (;;) {
		enum backup_line kind = BL__MAX;
		struct json_object *o = NULL;
		rc = next_line(s, &kind, &o);
		if (rc != EXIT_OK || o == NULL)
			break;
		if (ended) {
			rc = fail(EXIT_FAILED, "%s:%zu: data after the trailer", s->file,
				  s->at.line_no);
		} else if (kind == BL_END) {
			rc = check_trailer(s, o);
			ended = true;
		} else {
			backup_reader_hash(&s->r);
			s->count[kind]++;
			rc = on_line(s, kind, o);
		}
		json_object_put(o); /* a record waiting in rows[] holds its own */
		if (rc != EXIT_OK)
			break;
		if (s->apply)
			progress_update(&s->progress, (int64_t)s->at.line_no);
	}
	if (rc == EXIT_OK && !ended)
		rc = fail(EXIT_FAILED, "%s: truncated: it ends after line %zu without its "
			  "trailer", s->file, s->at.line_no);
	if (rc == EXIT_OK)
		rc = finish_account(s);
	if (rc != EXIT_OK && s->apply && db_in_transaction()) {
		db_rollback();
		fprintf(stderr, "weave-admin: account %s was not restored\n", s->username);
	}
	release_rows(s);
	json_tokener_free(s->tok);
	backup_reader_close(&s->r);
	return rc;
}

/* After pass 1: what stops the restore before it writes. An exit code. */
static int refusals(struct restore *s)
{
	for (size_t i = 0; i < s->only.count; i++)
		if (!s->only.at[i].seen)
			return fail(EXIT_FAILED, "%s holds no account %s; nothing was written",
				    s->file, s->only.at[i].name);
	if (s->conflicts > 0 && !s->replace)
		return fail(EXIT_FAILED, "%" PRId64 " of the accounts exist already (%s%s): "
			    "give --replace to overwrite them; nothing was written",
			    s->conflicts, s->conflict_names.data,
			    s->conflicts > CONFLICTS_SHOWN ? ", ..." : "");
	return EXIT_OK;
}

static void print_summary(const struct args *a, const struct restore *s, double took)
{
	bool dry = has_opt(a, OPT_DRY_RUN);
	if (has_opt(a, OPT_JSON)) {
		struct json_object *o = json_object_new_object();
		const int64_t *n = dry ? s->count : s->done;
		json_object_object_add(o, "dry_run", json_object_new_boolean(dry));
		json_object_object_add(o, "accounts", json_object_new_int64(
			dry ? s->selected_accounts : n[BL_ACCOUNT]));
		json_object_object_add(o, "replaced", json_object_new_int64(s->conflicts));
		for (int k = BL_NODE; k < BL__MAX; k++)
			if (k != BL_ACCOUNT && restore_count_name(k) != NULL)
				json_object_object_add(o, restore_count_name(k),
						       json_object_new_int64(n[k]));
		json_object_object_add(o, "seconds", json_object_new_double(took));
		json_print(o);
	} else if (dry && !has_opt(a, OPT_QUIET)) {
		printf("%s is whole (checksum and counts match): %" PRId64 " accounts to "
		       "restore, %" PRId64 " of them exist already\n", s->file,
		       s->selected_accounts, s->conflicts);
	} else if (!has_opt(a, OPT_QUIET)) {
		printf("restored %" PRId64 " accounts (%" PRId64 " replaced), %" PRId64
		       " records, %" PRId64 " kept versions, %" PRId64 " nodes added "
		       "in %.1f s\n", s->done[BL_ACCOUNT], s->conflicts, s->done[BL_RECORD],
		       s->done[BL_VERSION], s->done[BL_NODE], took);
	}
}

int cmd_restore(const struct args *a)
{
	struct restore s = { .file = a->pos[0], .replace = has_opt(a, OPT_REPLACE),
			     .at = { .file = a->pos[0] } };
	double started = monotonic_seconds();
	if (strcmp(s.file, "-") == 0)
		return usage_error("restore reads a FILE twice (it checks it whole before "
				   "writing): standard input will not do");
	int rc = backup_names_get(a, &s.only);
	if (rc != EXIT_OK)
		return rc;
	buf_init(&s.conflict_names, 4096);
	rc = read_pass(&s);
	if (rc == EXIT_OK)
		rc = refusals(&s);
	else
		fprintf(stderr, "weave-admin: nothing was written\n");
	if (rc == EXIT_OK && !has_opt(a, OPT_DRY_RUN)) {
		int64_t lines = 0;
		for (int k = 0; k < BL__MAX; k++)
			lines += s.count[k];
		s.apply = true;
		progress_start(&s.progress, "restore", "lines", lines + 1);
		rc = read_pass(&s);
		progress_end(&s.progress);
		if (rc != EXIT_OK)
			fprintf(stderr, "weave-admin: %" PRId64 " accounts were restored "
				"before the failure; run restore again with --replace\n",
				s.done[BL_ACCOUNT]);
	}
	if (rc == EXIT_OK)
		print_summary(a, &s, monotonic_seconds() - started);
	buf_free(&s.conflict_names);
	backup_names_free(&s.only);
	return rc;
}
