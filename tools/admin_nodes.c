/* admin_nodes.c - weave-admin node ...: storage nodes that accounts are spread over. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "admin.h"
#include "db_admin.h"
#include "db_user.h"
#include "util.h"

#define CAPACITY_MAX 2000000000

/* The URL argument, normalised, or a usage error. */
static int node_arg(const char *arg, char url[NODE_URL_MAX + 1])
{
	if (node_url_normalise(arg, url, NODE_URL_MAX + 1) < 0)
		return usage_error("a node is an http:// or https:// URL of at most %d "
				   "printable characters, not '%s'", NODE_URL_MAX, arg);
	return EXIT_OK;
}

static int capacity_arg(const char *arg, int64_t *capacity)
{
	if (strcmp(arg, "unlimited") == 0 || strcmp(arg, "none") == 0) {
		*capacity = -1;
		return EXIT_OK;
	}
	return parse_number_arg(arg, 0, CAPACITY_MAX, "the capacity", capacity);
}

int choose_node(const struct args *a, char **node)
{
	char url[NODE_URL_MAX + 1];
	*node = NULL;
	if (has_opt(a, OPT_NODE)) {
		if (strcmp(a->opt[OPT_NODE], "default") == 0)
			return EXIT_OK;
		int rc = node_arg(a->opt[OPT_NODE], url);
		if (rc == EXIT_OK)
			*node = xstrdup(url);
		return rc;
	}
	enum db_status st = db_node_pick(node);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "every storage node is full: raise a capacity "
					 "('weave-admin node capacity') or add a node");
	if (st != DB_OK)
		return db_fail(st, "choosing a storage node");
	return EXIT_OK;
}

int cmd_node_add(const struct args *a)
{
	char url[NODE_URL_MAX + 1];
	int64_t capacity = -1;
	int rc = node_arg(a->pos[0], url);
	if (rc == EXIT_OK && has_opt(a, OPT_CAPACITY))
		rc = capacity_arg(a->opt[OPT_CAPACITY], &capacity);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = db_node_add(url, capacity, (int64_t)time(NULL));
	if (st == DB_CONFLICT)
		return fail(EXIT_FAILED, "node %s exists already (change its capacity "
					 "with 'weave-admin node capacity')", url);
	if (st != DB_OK)
		return db_fail(st, "adding the node");
	if (capacity >= 0)
		printf("added node %s for up to %" PRId64 " accounts\n", url, capacity);
	else
		printf("added node %s\n", url);
	return EXIT_OK;
}

int cmd_node_capacity(const struct args *a)
{
	char url[NODE_URL_MAX + 1];
	int64_t capacity;
	int rc = node_arg(a->pos[0], url);
	if (rc == EXIT_OK)
		rc = capacity_arg(a->pos[1], &capacity);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = db_node_set_capacity(url, capacity);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such node: %s", url);
	if (st != DB_OK)
		return db_fail(st, "changing the capacity");
	if (capacity >= 0)
		printf("node %s takes up to %" PRId64 " accounts\n", url, capacity);
	else
		printf("node %s takes any number of accounts\n", url);
	return EXIT_OK;
}

static struct json_object *node_json(const struct db_node *n)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "url", json_object_new_string(n->url));
	json_object_object_add(o, "capacity",
			       n->capacity >= 0 ? json_object_new_int64(n->capacity) : NULL);
	json_object_object_add(o, "users", json_object_new_int64(n->users));
	json_object_object_add(o, "full", json_object_new_boolean(
						  n->capacity >= 0 && n->users >= n->capacity));
	json_object_object_add(o, "created", json_object_new_int64(n->created));
	return o;
}

struct list_ctx {
	struct json_object *array;
	int64_t count;
};

static int list_node(void *ctx, const struct db_node *n)
{
	struct list_ctx *l = ctx;
	char cap[24], when[64];
	l->count++;
	if (l->array != NULL) {
		json_object_array_add(l->array, node_json(n));
		return 0;
	}
	if (l->count == 1) /* with the first row: a failure prints no header */
		printf("%-48s %10s %10s  %s\n", "NODE", "CAPACITY", "USERS", "ADDED");
	if (n->capacity >= 0)
		snprintf(cap, sizeof cap, "%" PRId64, n->capacity);
	else
		snprintf(cap, sizeof cap, "unlimited");
	format_utc(n->created, when, sizeof when);
	printf("%-48s %10s %10" PRId64 "  %s%s\n", n->url, cap, n->users, when,
	       n->capacity >= 0 && n->users >= n->capacity ? "  (full)" : "");
	return 0;
}

int cmd_node_list(const struct args *a)
{
	struct list_ctx l = { NULL, 0 };
	if (has_opt(a, OPT_JSON))
		l.array = json_object_new_array();
	enum db_status st = db_node_list(list_node, &l);
	if (st != DB_OK) {
		json_object_put(l.array);
		return db_fail(st, "listing nodes");
	}
	if (l.array != NULL)
		json_print(l.array);
	else if (l.count == 0)
		printf("(no nodes: every account lives on this server, %s)\n",
		       admin_cfg.public_url ? admin_cfg.public_url : "its public URL");
	return EXIT_OK;
}

static int copy_users(void *ctx, const struct db_node *n)
{
	*(int64_t *)ctx = n->users;
	return 0;
}

int cmd_node_remove(const struct args *a)
{
	char url[NODE_URL_MAX + 1];
	int64_t users = 0;
	int rc = node_arg(a->pos[0], url);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = db_node_get(url, copy_users, &users);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such node: %s", url);
	if (st != DB_OK)
		return db_fail(st, "reading the node");
	if (users > 0)
		return fail(EXIT_FAILED, "node %s still has %" PRId64 " accounts: move them "
					 "first ('weave-admin user list --node %s', then "
					 "'weave-admin node assign NAME [URL]')",
			    url, users, url);
	st = db_node_remove(url);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such node: %s", url);
	if (st != DB_OK)
		return db_fail(st, "removing the node");
	printf("removed node %s\n", url);
	return EXIT_OK;
}

struct node_state {
	int64_t capacity, users;
};

static int copy_node(void *ctx, const struct db_node *n)
{
	struct node_state *s = ctx;
	s->capacity = n->capacity;
	s->users = n->users;
	return 0;
}

int cmd_node_assign(const struct args *a)
{
	char url[NODE_URL_MAX + 1];
	char *picked = NULL;
	const char *node;
	struct user u;
	enum db_status st;

	if (a->npos == 2) {
		int rc = node_arg(a->pos[1], url);
		if (rc != EXIT_OK)
			return rc;
	}
	int rc = find_user(a->pos[0], &u);
	if (rc != EXIT_OK)
		return rc;
	if (a->npos == 2) {
		struct node_state s = { -1, 0 };
		st = db_node_get(url, copy_node, &s);
		if (st == DB_NOT_FOUND) {
			user_free(&u);
			return fail(EXIT_FAILED, "no such node: %s (add it with 'weave-admin "
						 "node add', or use 'weave-admin user node')", url);
		}
		if (st != DB_OK) {
			user_free(&u);
			return db_fail(st, "reading the node");
		}
		if (s.capacity >= 0 && s.users >= s.capacity &&
		    (u.node == NULL || strcmp(u.node, url) != 0))
			fprintf(stderr, "weave-admin: warning: node %s is full (%" PRId64
					" of %" PRId64 " accounts); assigning anyway\n",
				url, s.users, s.capacity);
		node = url;
	} else {
		st = db_node_pick(&picked);
		if (st == DB_NOT_FOUND) {
			user_free(&u);
			return fail(EXIT_FAILED, "every storage node is full");
		}
		if (st != DB_OK) {
			user_free(&u);
			return db_fail(st, "choosing a storage node");
		}
		node = picked;
	}
	rc = node_change_allowed(&u, node);
	st = rc == EXIT_OK ? db_user_set_node(u.id, node) : DB_OK;
	if (rc != EXIT_OK)
		; /* said */
	else if (st == DB_NOT_FOUND)
		rc = fail(EXIT_FAILED, "no such user: %s", u.username);
	else if (st != DB_OK)
		rc = db_fail(st, "assigning the node");
	else if (node != NULL)
		printf("%s assigned to node %s\n", u.username, node);
	else
		printf("%s assigned to this server (no nodes are configured)\n", u.username);
	free(picked);
	user_free(&u);
	return rc;
}
