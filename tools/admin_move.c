/*
 * admin_move.c - weave-admin user move and node drain: an account's
 * records from one storage node's database to another's, online.
 *
 * A move is a row of the moves table and three phases (db_move.h), each
 * safe to run again, so that a move stopped anywhere (a crash, kill -9)
 * is finished by running the same command again:
 *   copying   every row copied while the account syncs on;
 *   frozen    the account's status is "moving": its storage requests
 *             answer 503 + Retry-After while the rows changed since are
 *             copied (a write in flight holds the users row lock, which
 *             the freeze waits for);
 *   switched  users.node is the target; after a few seconds (every web
 *             server has seen the change: change_log.h) the source's rows
 *             are deleted and the moves row with them.
 * docs/shards.md tells the whole story.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "change_board.h"
#include "db_admin.h"
#include "db_move.h"
#include "db_user.h"
#include "util.h"

/* How long web servers may still use a cached users.node (change_log.h:
 * about a second; five leave room). */
#define MOVE_SETTLE_SECONDS 5

static const char *node_text(const char *node)
{
	return node == NULL ? "default (public_url)" : node;
}

/*
 * NODE as given to --to: "default" (NULL: public_url), the name of a node
 * of weave.conf, or a URL. A URL with no database of its own in weave.conf
 * keeps its records in the account database.
 */
static int target_arg(const char *arg, char **url)
{
	*url = NULL;
	if (strcmp(arg, "default") == 0)
		return EXIT_OK;
	for (size_t i = 0; i < admin_cfg.nnodes; i++) {
		if (strcmp(admin_cfg.nodes[i].name, arg) == 0) {
			*url = xstrdup(admin_cfg.nodes[i].url);
			return EXIT_OK;
		}
	}
	char normal[NODE_URL_MAX + 1];
	if (node_url_normalise(arg, normal, sizeof normal) < 0)
		return usage_error("--to takes 'default', a node name of weave.conf or a "
				   "node URL, not '%s'", arg);
	*url = xstrdup(normal);
	return EXIT_OK;
}

/* The account row locked in a new transaction (the caller commits). */
static enum db_status lock_account(const char *name, struct user *u)
{
	enum db_status st = db_begin();
	if (st == DB_OK)
		st = db_user_get(name, USER_LOCK_EXCLUSIVE, u);
	return st;
}

static enum db_status commit_or_rollback(enum db_status st)
{
	if (st == DB_OK)
		return db_commit();
	db_rollback();
	return st;
}

/* The account and its move, for the steps below (db_move_retry()). */
struct account_move {
	const char *name;
	struct move *m;
};

/* The account's status "moving" (storage answers 503), with the phase:
 * a step of db_move_retry(). */
static enum db_status freeze_once(void *ctx)
{
	const char *name = ((struct account_move *)ctx)->name;
	struct move *m = ((struct account_move *)ctx)->m;
	struct user u = { 0 };
	enum db_status st = lock_account(name, &u);
	int before = u.status == USER_STATUS_MOVING ? m->status_before : u.status;
	if (st == DB_OK && u.status == USER_STATUS_ENABLED)
		st = db_user_set_status(u.id, USER_STATUS_MOVING);
	if (st == DB_OK)
		st = db_move_set_phase(m->user_id, MOVE_FROZEN, before);
	st = commit_or_rollback(st);
	user_free(&u);
	if (st == DB_OK) {
		m->phase = MOVE_FROZEN;
		m->status_before = before;
	}
	return st;
}

/* Phase 1 to 2: everything copied; then storage requests stop. */
static int copy_and_freeze(const char *name, struct move *m, size_t from, size_t to,
			   int64_t pause)
{
	struct move_counts c = { 0 };
	double t0 = monotonic_seconds();
	enum db_status st = db_move_clear(to, m->user_id);
	if (st == DB_OK)
		st = db_move_copy(from, to, m->user_id, &c);
	if (st != DB_OK)
		return db_fail(st, "copying the records");
	printf("%s: copied %" PRId64 " records and %" PRId64 " history rows in %.1f s\n",
	       name, c.records, c.history, monotonic_seconds() - t0);
	sleep_micros(pause * 1000);
	st = db_move_retry(freeze_once, &(struct account_move){ name, m });
	if (st != DB_OK)
		return db_fail(st, "freezing the account");
	change_board_bump(m->user_id);
	return EXIT_OK;
}

/* users.node becomes the target and the status what it was, in one
 * transaction with the phase: a step of db_move_retry(). */
static enum db_status switch_once(void *ctx)
{
	const char *name = ((struct account_move *)ctx)->name;
	struct move *m = ((struct account_move *)ctx)->m;
	struct user u = { 0 };
	enum db_status st = lock_account(name, &u);
	if (st == DB_OK)
		st = db_user_set_node(u.id, m->target);
	if (st == DB_OK && u.status == USER_STATUS_MOVING)
		st = db_user_set_status(u.id, m->status_before);
	if (st == DB_OK)
		st = db_move_set_phase(m->user_id, MOVE_SWITCHED, m->status_before);
	st = commit_or_rollback(st);
	user_free(&u);
	if (st == DB_OK)
		m->phase = MOVE_SWITCHED;
	return st;
}

static int switch_node(const char *name, struct move *m)
{
	enum db_status st = db_move_retry(switch_once, &(struct account_move){ name, m });
	if (st != DB_OK)
		return db_fail(st, "switching the account's node");
	change_board_bump(m->user_id);
	return EXIT_OK;
}

/* Phase 2 to 3: the last changes copied, then users.node switched. */
static int finish_copy_and_switch(const char *name, struct move *m, size_t from, size_t to,
				  int64_t pause)
{
	struct move_counts c = { 0 };
	double t0 = monotonic_seconds();
	sleep_micros(pause * 1000);
	enum db_status st = db_move_reconcile(from, to, m->user_id, &c);
	if (st != DB_OK)
		return db_fail(st, "copying the last changes");
	int rc = switch_node(name, m);
	if (rc == EXIT_OK)
		printf("%s: switched to %s after %" PRId64 " changed and %" PRId64
		       " deleted records (storage answered 503 for %.2f s)\n",
		       name, node_text(m->target), c.records, c.removed, monotonic_seconds() - t0);
	return rc;
}

/* Source and target share a database: only users.node changes. */
static int switch_only(const char *name, struct move *m)
{
	int rc = switch_node(name, m);
	if (rc == EXIT_OK)
		printf("%s: switched to %s (its records stay where they are: the same "
		       "database)\n", name, node_text(m->target));
	return rc;
}

/* Phase 3: the source's rows go, and the moves row. */
static int clean_source(const char *name, const struct move *m, size_t from, size_t to)
{
	sleep_micros(MOVE_SETTLE_SECONDS * 1000000);
	enum db_status st = from == to ? DB_OK : db_move_clear(from, m->user_id);
	if (st == DB_OK)
		st = db_move_finish(m->user_id);
	if (st != DB_OK)
		return db_fail(st, "deleting the records left on the source");
	printf("%s: moved from %s to %s\n", name, node_text(m->source), node_text(m->target));
	return EXIT_OK;
}

/* The account's unfinished move, or a new one to target (*fresh). */
static int open_move(const struct user *u, const char *target, struct move *m, bool *fresh)
{
	*fresh = false;
	enum db_status st = db_move_get(u->id, m);
	if (st == DB_OK) {
		if (!user_node_equal(m->target, target))
			return fail(EXIT_FAILED,
				    "%s has an unfinished move to %s: run 'weave-admin user "
				    "move %s --to %s' to finish it first",
				    u->username, node_text(m->target), u->username,
				    m->target ? m->target : "default");
		printf("%s: going on with the move to %s\n", u->username, node_text(target));
		return EXIT_OK;
	}
	if (st != DB_NOT_FOUND)
		return db_fail(st, "reading the moves table");
	*m = (struct move){ .user_id = u->id, .phase = MOVE_COPYING,
			    .status_before = u->status, .started = (int64_t)time(NULL) };
	m->source = u->node ? xstrdup(u->node) : NULL;
	m->target = target ? xstrdup(target) : NULL;
	st = db_move_start(m);
	if (st != DB_OK)
		return db_fail(st, "recording the move");
	*fresh = true;
	return EXIT_OK;
}

/* Move (or finish moving) the account name to target. */
static int move_account(const char *name, const char *target, int64_t pause)
{
	struct user u;
	int rc = find_user(name, &u);
	if (rc != EXIT_OK)
		return rc;
	struct move m = { 0 };
	bool fresh = false;
	if (user_node_equal(u.node, target) && db_move_get(u.id, &m) == DB_NOT_FOUND) {
		printf("%s: on %s already\n", u.username, node_text(target));
		user_free(&u);
		return EXIT_OK;
	}
	move_free(&m);
	rc = open_move(&u, target, &m, &fresh);
	size_t from = config_node_place(&admin_cfg, m.source);
	size_t to = config_node_place(&admin_cfg, m.target);
	if (rc == EXIT_OK && fresh)
		printf("%s: moving from %s (%s) to %s (%s)\n", u.username, node_text(m.source),
		       db_place_name(from), node_text(m.target), db_place_name(to));
	/* Both nodes keep their records in one database: nothing to copy
	 * (and clearing the target would clear the records themselves). */
	if (rc == EXIT_OK && from == to && m.phase != MOVE_SWITCHED)
		rc = switch_only(u.username, &m);
	if (rc == EXIT_OK && m.phase == MOVE_COPYING)
		rc = copy_and_freeze(u.username, &m, from, to, pause);
	if (rc == EXIT_OK && m.phase == MOVE_FROZEN)
		rc = finish_copy_and_switch(u.username, &m, from, to, pause);
	if (rc == EXIT_OK && m.phase == MOVE_SWITCHED)
		rc = clean_source(u.username, &m, from, to);
	move_free(&m);
	user_free(&u);
	return rc;
}

int node_change_allowed(const struct user *u, const char *node)
{
	size_t from = records_place(u), to = config_node_place(&admin_cfg, node);
	int64_t records = 0;
	if (from == to)
		return EXIT_OK;
	size_t was = db_use(from);
	enum db_status st = db_admin_count_records(u->id, &records);
	db_use(was);
	if (st != DB_OK)
		return db_fail(st, "counting the account's records");
	if (records == 0)
		return EXIT_OK;
	return fail(EXIT_FAILED,
		    "%s has %" PRId64 " records on %s, which would be left behind: "
		    "'weave-admin user move %s --to %s' moves them with the account",
		    u->username, records, db_place_name(from), u->username,
		    node ? node : "default");
}

static int pause_arg(const struct args *a, int64_t *pause)
{
	*pause = 0;
	if (!has_opt(a, OPT_PAUSE))
		return EXIT_OK;
	return parse_number_arg(a->opt[OPT_PAUSE], 0, 600000, "--pause", pause);
}

int cmd_user_move(const struct args *a)
{
	char *target = NULL;
	int64_t pause;
	if (!has_opt(a, OPT_TO))
		return usage_error("user move needs --to NODE");
	int rc = pause_arg(a, &pause);
	if (rc == EXIT_OK)
		rc = target_arg(a->opt[OPT_TO], &target);
	if (rc == EXIT_OK)
		rc = move_account(a->pos[0], target, pause);
	free(target);
	return rc;
}

/* ---- node drain ----------------------------------------------------------------- */

struct names {
	char (*name)[USERNAME_MAX + 1];
	size_t n, cap;
};

static int add_name(void *ctx, const struct user *u, int64_t records, int64_t bytes)
{
	(void)records;
	(void)bytes;
	struct names *s = ctx;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->name = xrealloc(s->name, s->cap * sizeof *s->name);
	}
	snprintf(s->name[s->n++], sizeof s->name[0], "%s", u->username);
	return 0;
}

/* The accounts of node (users.node), by name. */
static enum db_status accounts_on(const char *node, struct names *s)
{
	struct user_filter f = { .status = USER_ANY, .sort = USER_SORT_NAME,
				 .node = node ? node : "" };
	return db_user_search(&f, add_name, s);
}

int cmd_node_drain(const struct args *a)
{
	char *node = NULL, *fixed = NULL;
	int64_t pause;
	int rc = pause_arg(a, &pause);
	if (rc == EXIT_OK)
		rc = target_arg(a->pos[0], &node);
	if (rc == EXIT_OK && has_opt(a, OPT_TO))
		rc = target_arg(a->opt[OPT_TO], &fixed);
	if (rc == EXIT_OK && has_opt(a, OPT_TO) && user_node_equal(node, fixed))
		rc = usage_error("--to names the node being drained");
	/* No new accounts there meanwhile (a node of the node list). */
	if (rc == EXIT_OK && node != NULL && db_node_set_capacity(node, 0) == DB_OK)
		printf("node %s: capacity 0, so no new account goes there\n", node);
	struct names s = { 0 };
	enum db_status st = rc == EXIT_OK ? accounts_on(node, &s) : DB_OK;
	if (st != DB_OK)
		rc = db_fail(st, "listing the node's accounts");
	if (rc == EXIT_OK)
		printf("node %s: %zu accounts to move\n", node_text(node), s.n);
	for (size_t i = 0; i < s.n && rc == EXIT_OK; i++) {
		char *target = fixed ? xstrdup(fixed) : NULL;
		if (fixed == NULL) {
			st = db_node_pick(&target);
			if (st == DB_OK && user_node_equal(target, node))
				st = DB_NOT_FOUND;
			if (st != DB_OK) {
				rc = st == DB_NOT_FOUND
					     ? fail(EXIT_FAILED, "no other node has room: add one "
								 "('node add') or give --to")
					     : db_fail(st, "choosing a node");
				break;
			}
		}
		rc = move_account(s.name[i], target, pause);
		free(target);
	}
	if (rc == EXIT_OK)
		printf("node %s: drained\n", node_text(node));
	free(s.name);
	free(node);
	free(fixed);
	return rc;
}
