/* admin_usage.c - accounts with their records counted where they live (admin_usage.h). */
#include "admin_usage.h"

#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "db.h"
#include "db_admin.h"
#include "util.h"

/* One database's figures, by ascending account id (as the query returns them). */
struct usage {
	int64_t id, records, bytes;
};
struct place_usage {
	struct usage *at;
	size_t n, cap;
};

/* The accounts the filter chose, with their figures, to be sorted here. */
struct listed {
	struct user u;
	int64_t records, bytes;
};
struct listing {
	const struct place_usage *places;
	struct listed *at;
	size_t n, cap;
};

static int add_usage(void *ctx, int64_t id, int64_t records, int64_t bytes)
{
	struct place_usage *p = ctx;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		p->at = xrealloc(p->at, p->cap * sizeof *p->at);
	}
	p->at[p->n++] = (struct usage){ id, records, bytes };
	return 0;
}

static int by_id(const void *key, const void *elem)
{
	int64_t id = *(const int64_t *)key, other = ((const struct usage *)elem)->id;
	return (id > other) - (id < other);
}

/* Keep a copy of the row, with the figures of the database its records
 * are on: the search's own for the account database, a node's from l. */
static int keep_user(void *ctx, const struct user *u, int64_t records, int64_t bytes)
{
	struct listing *l = ctx;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->at = xrealloc(l->at, l->cap * sizeof *l->at);
	}
	struct listed *e = &l->at[l->n++];
	user_copy(&e->u, u);
	e->records = records;
	e->bytes = bytes;
	size_t place = records_place(u);
	if (place == DB_ACCOUNTS) /* the search's own join counted them */
		return 0;
	const struct place_usage *p = &l->places[place];
	const struct usage *found = bsearch(&u->id, p->at, p->n, sizeof *p->at, by_id);
	e->records = found ? found->records : 0;
	e->bytes = found ? found->bytes : 0;
	return 0;
}

/* The orders of db_user_search(), ties by name. */
static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->u.username,
		      ((const struct listed *)b)->u.username);
}

static int by_usage(const void *a, const void *b)
{
	int64_t x = ((const struct listed *)a)->bytes, y = ((const struct listed *)b)->bytes;
	return x != y ? (x < y) - (x > y) : by_name(a, b);
}

static int by_activity(const void *a, const void *b)
{
	int64_t x = ((const struct listed *)a)->u.last_write;
	int64_t y = ((const struct listed *)b)->u.last_write;
	return x != y ? (x < y) - (x > y) : by_name(a, b);
}

enum db_status admin_user_search(const struct user_filter *f, db_user_fn fn, void *ctx)
{
	size_t places = db_places();
	if (places <= 1)
		return db_user_search(f, fn, ctx);

	struct place_usage *usage = xcalloc(places, sizeof *usage);
	enum db_status st = DB_OK;
	/* The account database's figures come with the search itself. */
	for (size_t place = DB_ACCOUNTS + 1; place < places && st == DB_OK; place++) {
		db_use(place);
		st = db_admin_usage_by_user(f->now, add_usage, &usage[place]);
	}
	db_use(DB_ACCOUNTS);

	/* Every match, since the order and the limit depend on the figures. */
	struct listing l = { .places = usage };
	struct user_filter all = *f;
	all.limit = 0;
	all.sort = USER_SORT_NAME;
	if (st == DB_OK)
		st = db_user_search(&all, keep_user, &l);
	if (st == DB_OK) {
		int (*order)(const void *, const void *) =
			f->sort == USER_SORT_USAGE ? by_usage
			: f->sort == USER_SORT_ACTIVITY ? by_activity : by_name;
		qsort(l.at, l.n, sizeof *l.at, order);
		size_t shown = f->limit > 0 && (uint64_t)f->limit < l.n ? (size_t)f->limit : l.n;
		for (size_t i = 0; i < shown; i++)
			if (fn(ctx, &l.at[i].u, l.at[i].records, l.at[i].bytes) != 0)
				break;
	}
	for (size_t i = 0; i < l.n; i++)
		user_free(&l.at[i].u);
	free(l.at);
	for (size_t place = 0; place < places; place++)
		free(usage[place].at);
	free(usage);
	return st;
}
