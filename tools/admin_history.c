/* admin_history.c - weave-admin user history and user restore: undo a stale device's writes. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "admin.h"
#include "change_board.h"
#include "db_history.h"
#include "db_storage.h"
#include "db_user.h"
#include "time_arg.h"
#include "util.h"

#define RESTORE_AGENT "weave-admin user restore"

/* --since / --as-of: a Weave timestamp or an ISO date-time. */
static int time_option(const struct args *a, enum admin_opt o, const char *name,
		       int64_t *out)
{
	if (time_arg_parse(a->opt[o], out) < 0)
		return usage_error("%s %s: give a Weave timestamp (1796367600.12) or an "
				   "ISO date-time (2026-12-04T07:00:00Z; no offset: UTC)",
				   name, a->opt[o]);
	return EXIT_OK;
}

static int collection_option(const struct args *a, const char **out)
{
	*out = a->opt[OPT_COLLECTION];
	if (*out != NULL && !validate_collection(*out, strlen(*out)))
		return usage_error("--collection %s: not a collection name", *out);
	return EXIT_OK;
}

/* A User-Agent is client bytes: printable ASCII only, on a terminal and
 * in JSON (which must be UTF-8). */
static void printable(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	for (; *in != '\0' && n + 1 < cap; in++)
		out[n++] = (*in >= 0x20 && *in < 0x7f) ? *in : '?';
	out[n] = '\0';
}

/* ---- user history --------------------------------------------------------- */

struct listing {
	bool json;
	struct json_object *writes;
	int64_t count;
};

static int print_entry(void *ctx, const struct history_entry *e)
{
	struct listing *l = ctx;
	char when[40], stamp[32], kept[32], agent[HISTORY_AGENT_MAX + 1];
	time_arg_format(e->stamp, when, sizeof when);
	format_timestamp(e->stamp, stamp, sizeof stamp);
	l->count++;
	if (l->json) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "timestamp", json_stamp(e->stamp));
		json_object_object_add(o, "time", json_object_new_string(when));
		json_object_object_add(o, "collection",
				       e->collection[0] ? json_object_new_string(e->collection)
							: NULL);
		json_object_object_add(o, "written", json_object_new_int64(e->written));
		json_object_object_add(o, "replaced", json_object_new_int64(e->replaced));
		json_object_object_add(o, "deleted", json_object_new_int64(e->deleted));
		json_object_object_add(o, "kept_bytes", json_object_new_int64(e->bytes));
		printable(e->agent, agent, sizeof agent);
		json_object_object_add(o, "client", json_object_new_string(agent));
		json_object_array_add(l->writes, o);
		return 0;
	}
	format_bytes(e->bytes, kept, sizeof kept);
	printable(e->agent, agent, sizeof agent);
	printf("%-24s %-14s %-12s %7" PRId64 " %8" PRId64 " %7" PRId64 " %9s  %s\n",
	       when, stamp, e->collection[0] ? e->collection : "(all)", e->written,
	       e->replaced, e->deleted, kept, agent[0] ? agent : "-");
	return 0;
}

int cmd_user_history(const struct args *a)
{
	const char *collection;
	int64_t after = 0, bytes = 0, since = 0;
	struct user u;
	int rc = collection_option(a, &collection);
	if (rc == EXIT_OK && has_opt(a, OPT_SINCE))
		rc = time_option(a, OPT_SINCE, "--since", &after);
	if (rc != EXIT_OK)
		return rc;
	rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	struct listing l = { has_opt(a, OPT_JSON), NULL, 0 };
	/* Reads only: on the database of the account's records. */
	db_use(records_place(&u));
	enum db_status st = db_history_usage(u.id, &bytes, &since);
	if (st != DB_OK) {
		user_free(&u);
		return db_fail(st, "reading the history");
	}
	char since_text[40] = "never", kept[32];
	if (since == 0)
		snprintf(since_text, sizeof since_text, "its first write");
	else if (since != INT64_MAX)
		time_arg_format(since, since_text, sizeof since_text);
	format_bytes(bytes, kept, sizeof kept);
	if (l.json) {
		l.writes = json_object_new_array();
	} else {
		printf("history of %s: %s kept; whole since %s (restore can go back "
		       "that far)%s\n", u.username, kept, since_text,
		       admin_cfg.history_days > 0 ? ""
						  : "; history_days is 0: nothing new is kept");
		printf("%-24s %-14s %-12s %7s %8s %7s %9s  %s\n", "time (UTC)",
		       "timestamp", "collection", "written", "replaced", "deleted", "kept",
		       "client");
	}
	st = db_history_entries(u.id, collection, after, print_entry, &l);
	if (st != DB_OK) {
		json_object_put(l.writes);
		user_free(&u);
		return db_fail(st, "reading the history");
	}
	if (l.json) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "user", json_object_new_string(u.username));
		json_object_object_add(o, "history_days",
				       json_object_new_int64(admin_cfg.history_days));
		json_object_object_add(o, "kept_bytes", json_object_new_int64(bytes));
		/* json_stamp() writes 0 as null: here 0 is a time (no write before). */
		json_object_object_add(o, "whole_since",
				       since == INT64_MAX ? NULL
				       : since == 0	  ? json_object_new_int(0)
							  : json_stamp(since));
		json_object_object_add(o, "writes", l.writes);
		json_print(o);
	} else if (l.count == 0) {
		printf("(no logged writes)\n");
	}
	user_free(&u);
	return EXIT_OK;
}

/* ---- user restore --------------------------------------------------------- */

/* A current row (replaced 0) or a kept version of one id. */
struct row {
	char *id;
	size_t id_len;
	int64_t replaced, modified, expires;
};

struct rows {
	struct row *v;
	size_t n, cap;
};

static int add_row(void *ctx, const struct history_version *h)
{
	struct rows *r = ctx;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->v = xrealloc(r->v, r->cap * sizeof *r->v);
	}
	r->v[r->n++] = (struct row){ xstrndup(h->id, h->id_len), h->id_len,
				     h->replaced, h->modified, h->expires };
	return 0;
}

static void rows_free(struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].id);
	free(r->v);
	memset(r, 0, sizeof *r);
}

/* Byte order, as MariaDB sorts VARBINARY. */
static int id_cmp(const struct row *x, const struct row *y)
{
	size_t n = x->id_len < y->id_len ? x->id_len : y->id_len;
	int c = memcmp(x->id, y->id, n);
	if (c != 0)
		return c;
	return x->id_len < y->id_len ? -1 : x->id_len > y->id_len;
}

/* What restoring one collection does. */
struct plan {
	char collection[33];
	struct rows current, versions;
	struct row **put_back; /* versions to make current again */
	struct row **remove;   /* current rows created after the time */
	size_t nput, nremove;
	int64_t came_back, reverted, newer_kept;
};

static void plan_free(struct plan *p)
{
	rows_free(&p->current);
	rows_free(&p->versions);
	free(p->put_back);
	free(p->remove);
}

/*
 * The state as of `as_of`, id by id: the first version an id had kept
 * after that time is what it was then (unless that version was itself
 * written later: then the id did not exist); an id with no version kept
 * since is as it was, if its current row is not newer.
 */
static enum db_status plan_collection(int64_t user_id, int64_t as_of, int64_t now,
				      bool keep_newer, struct plan *p)
{
	enum db_status st = db_history_current(user_id, p->collection, add_row,
					       &p->current);
	if (st == DB_OK)
		st = db_history_versions_after(user_id, p->collection, as_of, add_row,
					       &p->versions);
	if (st != DB_OK)
		return st;
	p->put_back = xcalloc(p->versions.n + 1, sizeof *p->put_back);
	p->remove = xcalloc(p->current.n + 1, sizeof *p->remove);
	size_t c = 0, v = 0;
	while (c < p->current.n || v < p->versions.n) {
		struct row *cur = NULL, *ver = NULL;
		int order = c == p->current.n	 ? 1
			    : v == p->versions.n ? -1
						 : id_cmp(&p->current.v[c], &p->versions.v[v]);
		if (order <= 0)
			cur = &p->current.v[c++];
		if (order >= 0) {
			ver = &p->versions.v[v++];
			while (v < p->versions.n && id_cmp(ver, &p->versions.v[v]) == 0)
				v++; /* later versions of the same id */
		}
		bool live = cur != NULL && cur->expires > now;
		if (ver != NULL) {
			if (ver->modified <= as_of && ver->expires > now) {
				p->put_back[p->nput++] = ver;
				if (live)
					p->reverted++;
				else
					p->came_back++;
				continue;
			}
		} else if (live && cur->modified <= as_of) {
			continue; /* unchanged since */
		}
		if (!live)
			continue;
		if (keep_newer)
			p->newer_kept++;
		else
			p->remove[p->nremove++] = cur;
	}
	return DB_OK;
}

struct plans {
	struct plan *v;
	size_t n, cap;
};

static int add_collection(void *ctx, const char *name, size_t len)
{
	struct plans *ps = ctx;
	if (len >= sizeof ps->v[0].collection)
		return 0;
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 16;
		ps->v = xrealloc(ps->v, ps->cap * sizeof *ps->v);
	}
	struct plan *p = &ps->v[ps->n++];
	memset(p, 0, sizeof *p);
	memcpy(p->collection, name, len);
	p->collection[len] = '\0';
	return 0;
}

static void plans_free(struct plans *ps)
{
	for (size_t i = 0; i < ps->n; i++)
		plan_free(&ps->v[i]);
	free(ps->v);
	memset(ps, 0, sizeof *ps);
}

/*
 * Can the history rebuild the state as of `as_of`? EXIT_OK, or a
 * message and EXIT_FAILED naming the earliest time it can.
 */
static int check_whole(const struct user *u, const char *collection,
		       int64_t as_of)
{
	int64_t bytes, since, unlogged;
	char when[40];
	enum db_status st = db_history_usage(u->id, &bytes, &since);
	if (st == DB_OK)
		st = db_history_unlogged_after(u->id, collection, as_of, &unlogged);
	if (st != DB_OK)
		return db_fail(st, "reading the history");
	if (since == INT64_MAX)
		return fail(EXIT_FAILED, "%s has no record history (history_days is %" PRId64
			    " in weave.conf): nothing to restore from", u->username,
			    admin_cfg.history_days);
	if (as_of < since) {
		time_arg_format(since, when, sizeof when);
		return fail(EXIT_FAILED, "the history of %s is whole only from %s on "
			    "(older versions expired, went over history_max_kb, or were "
			    "never kept): restore as of that time or later", u->username,
			    when);
	}
	if (unlogged > 0) {
		time_arg_format(unlogged, when, sizeof when);
		return fail(EXIT_FAILED, "records of %s were written at %s without "
			    "history (history_days was 0, or an import): restore as of "
			    "that time or later", u->username, when);
	}
	return EXIT_OK;
}

/* Plan every collection (or one), in the caller's transaction if any. */
static int make_plans(const struct user *u, const char *collection, int64_t as_of,
		      bool keep_newer, struct plans *ps)
{
	enum db_status st = DB_OK;
	if (collection != NULL)
		add_collection(ps, collection, strlen(collection));
	else
		st = db_history_collections(u->id, as_of, add_collection, ps);
	int64_t now = now_centiseconds();
	for (size_t i = 0; i < ps->n && st == DB_OK; i++)
		st = plan_collection(u->id, as_of, now, keep_newer, &ps->v[i]);
	return st == DB_OK ? EXIT_OK : db_fail(st, "reading the records and history");
}

static void print_plans(const struct plans *ps, bool done)
{
	bool any = false;
	for (size_t i = 0; i < ps->n; i++) {
		const struct plan *p = &ps->v[i];
		if (p->nput == 0 && p->nremove == 0 && p->newer_kept == 0)
			continue;
		any = true;
		printf("%s: %" PRId64 " replaced records %s, %" PRId64 " deleted records "
		       "%s, %zu newer records %s", p->collection, p->reverted,
		       done ? "put back" : "to put back", p->came_back,
		       done ? "brought back" : "to bring back", p->nremove,
		       done ? "deleted" : "to delete");
		if (p->newer_kept > 0)
			printf(", %" PRId64 " newer records kept", p->newer_kept);
		printf("\n");
	}
	if (!any)
		printf("nothing differs from that time\n");
}

static enum db_status apply_plan(const struct user *u, int64_t stamp,
				 int64_t previous, int64_t as_of, const struct plan *p)
{
	char agent[HISTORY_AGENT_MAX + 1], when[32];
	format_timestamp(as_of, when, sizeof when);
	snprintf(agent, sizeof agent, RESTORE_AGENT " --as-of %s", when);
	/* No cap inside a restore: it must not drop the versions it reads. */
	struct history_write w = { u->id, stamp, previous, p->collection, agent, 0, 0 };
	struct write_context wc;
	enum db_status st = DB_OK;
	if (p->nput == 0 && p->nremove == 0)
		return DB_OK;
	db_history_begin(&wc, &w);
	for (size_t i = 0; i < p->nput && st == DB_OK; i++)
		st = db_history_put_back(&wc, u->id, p->collection, p->put_back[i]->id,
					 p->put_back[i]->id_len, p->put_back[i]->replaced);
	for (size_t i = 0; i < p->nremove && st == DB_OK; i++)
		st = db_storage_delete_one(&wc, u->id, p->collection, p->remove[i]->id);
	if (st == DB_OK)
		st = db_history_finish(&wc);
	return st;
}

/* The account's row locked in a new transaction, and on a storage node
 * a transaction there too (*place current). An exit code. */
static int lock_for_restore(const struct user *u, struct user *locked, size_t *place)
{
	memset(locked, 0, sizeof *locked);
	enum db_status st = db_begin();
	if (st == DB_OK)
		st = db_user_get(u->username, USER_LOCK_EXCLUSIVE, locked);
	if (st == DB_OK && locked->status == USER_STATUS_MOVING) {
		db_rollback();
		user_free(locked);
		return fail(EXIT_FAILED, "%s is moving to another storage node: restore when "
					 "'weave-admin user move' is done", u->username);
	}
	if (st == DB_OK)
		*place = records_place(locked);
	if (st == DB_OK)
		st = records_begin(*place);
	if (st == DB_OK)
		return EXIT_OK;
	records_rollback();
	user_free(locked);
	return st == DB_NOT_FOUND ? fail(EXIT_FAILED, "no such user: %s", u->username)
				  : db_fail(st, "locking the account");
}

/* One transaction holding the account's row lock, as a write request does. */
static int restore(const struct user *u, const char *collection, int64_t as_of,
		   bool keep_newer)
{
	struct user locked;
	struct plans ps = { 0 };
	size_t place = DB_ACCOUNTS;
	int rc = lock_for_restore(u, &locked, &place);
	if (rc != EXIT_OK)
		return rc;
	/* As a write request does (route.c, write_begins): mark the account
	 * changed before taking the time, so that no read answers with a
	 * later X-Weave-Timestamp without seeing the restore. */
	change_board_bump(locked.id);
	int64_t now = now_centiseconds();
	int64_t stamp = (now > locked.last_write ? now : locked.last_write) + 1;
	enum db_status st;
	rc = check_whole(&locked, collection, as_of);
	if (rc == EXIT_OK)
		rc = make_plans(&locked, collection, as_of, keep_newer, &ps);
	for (size_t i = 0; i < ps.n && rc == EXIT_OK; i++) {
		st = apply_plan(&locked, stamp, locked.last_write, as_of, &ps.v[i]);
		if (st != DB_OK)
			rc = db_fail(st, "restoring the records");
	}
	if (rc == EXIT_OK && (st = records_commit(place)) != DB_OK)
		rc = db_fail(st, "committing the restored records");
	/* Every device sees the restored records as newer than its last sync;
	 * raising last_write also tells the server's kept rows and caches. */
	if (rc == EXIT_OK) {
		st = db_user_raise_last_write(locked.id, stamp);
		if (st == DB_OK)
			st = db_commit();
		if (st != DB_OK)
			rc = db_fail(st, "committing the restore");
	}
	if (rc != EXIT_OK) {
		records_rollback();
		fprintf(stderr, "weave-admin: nothing was restored\n");
	} else {
		char when[40], stamp_text[32], undo[32];
		time_arg_format(stamp, when, sizeof when);
		format_timestamp(stamp, stamp_text, sizeof stamp_text);
		format_timestamp(stamp - 1, undo, sizeof undo);
		print_plans(&ps, true);
		printf("restored %s; the restore is the write stamped %s (%s): "
		       "'user restore --as-of %s' undoes it\n",
		       locked.username, stamp_text, when, undo);
	}
	plans_free(&ps);
	user_free(&locked);
	return rc;
}

int cmd_user_restore(const struct args *a)
{
	const char *collection;
	int64_t as_of;
	struct user u;
	bool dry_run = has_opt(a, OPT_DRY_RUN), keep_newer = has_opt(a, OPT_KEEP_NEWER);
	int rc = collection_option(a, &collection);
	if (rc != EXIT_OK)
		return rc;
	if (!has_opt(a, OPT_AS_OF))
		return usage_error("say which time to go back to with --as-of TIME");
	rc = time_option(a, OPT_AS_OF, "--as-of", &as_of);
	if (rc != EXIT_OK)
		return rc;
	/* Write stamps may run a little ahead of the clock (each is above the
	 * last); a time far ahead is a mistake. */
	if (as_of > now_centiseconds() + 3600 * 100)
		return usage_error("--as-of %s is in the future", a->opt[OPT_AS_OF]);
	if (!dry_run && !has_opt(a, OPT_YES) && !isatty(STDIN_FILENO))
		return usage_error("not on a terminal, so add --yes (or --dry-run first)");
	rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	char when[40];
	time_arg_format(as_of, when, sizeof when);
	if (u.last_write <= as_of) {
		printf("nothing of %s was written after %s\n", u.username, when);
		user_free(&u);
		return EXIT_OK;
	}
	/* A plan without the row lock first: a person may take a while to
	 * answer. On the database of the account's records. */
	struct plans ps = { 0 };
	db_use(records_place(&u));
	rc = check_whole(&u, collection, as_of);
	if (rc == EXIT_OK && (dry_run || !has_opt(a, OPT_YES)))
		rc = make_plans(&u, collection, as_of, keep_newer, &ps);
	db_use(DB_ACCOUNTS);
	if (rc == EXIT_OK && (dry_run || !has_opt(a, OPT_YES))) {
		printf("restoring %s%s%s as of %s would do:\n", u.username,
		       collection ? " collection " : "", collection ? collection : "",
		       when);
		print_plans(&ps, false);
	}
	plans_free(&ps);
	if (rc == EXIT_OK && !dry_run && !has_opt(a, OPT_YES) &&
	    !confirm("Restore? Every device downloads the restored records at its "
		     "next sync. [y/N] "))
		rc = fail(EXIT_FAILED, "not restored");
	if (rc == EXIT_OK && !dry_run)
		rc = restore(&u, collection, as_of, keep_newer);
	user_free(&u);
	return rc;
}
