/*
 * admin_migrate_php.c - migrate from the original PHP server: its MySQL
 * schema (users(id, username, ...), wbo rows naming their user by id and
 * their collection by number, 1-10 fixed, others in the collections
 * table) and its SQLite engine (users by name in _users, one wbo table
 * per user naming collections); modified in centiseconds in both.
 */
#include <stdlib.h>
#include <string.h>

#include "migrate.h"
#include "util.h"
#include "validate.h"

#define USERID_MAX 32 /* digits of a users.id */

/* The PHP server's fixed collection ids (WEAVE_COLLECTION_KEYS). */
static const char *const php_collections[11] = {
	NULL, "clients", "crypto", "forms", "history", "keys",
	"meta", "bookmarks", "prefs", "tabs", "passwords",
};

/* The collections table, read once per run (a command runs once). */
static struct php_collection {
	char *userid;
	int64_t id;
	char *name;
} *colls;
static size_t ncolls, colls_cap;

static int load_collection(void *ctx, const struct src_value *row, size_t ncols)
{
	int64_t id;
	char num[32];
	(void)ctx;
	/* userid is an int(11) and name a varchar(32): longer values are no
	 * user's, and a name is kept just long enough to fail the name rule. */
	if (ncols < 3 || row[0].is_null || row[1].is_null || row[2].is_null ||
	    row[1].len >= sizeof num || row[0].len > USERID_MAX)
		return 0;
	memcpy(num, row[1].s, row[1].len);
	num[row[1].len] = '\0';
	if (parse_int64(num, 0, INT32_MAX, &id) < 0)
		return 0;
	if (ncolls == colls_cap) {
		colls_cap = colls_cap ? colls_cap * 2 : 64;
		colls = xrealloc(colls, colls_cap * sizeof *colls);
	}
	struct php_collection *c = &colls[ncolls++];
	c->userid = xstrndup(row[0].s, row[0].len);
	c->id = id;
	c->name = xstrndup(row[2].s, row[2].len <= COLLECTION_MAX ? row[2].len : COLLECTION_MAX + 1);
	return 0;
}

static int collection_order(const void *a, const void *b)
{
	const struct php_collection *x = a, *y = b;
	int c = strcmp(x->userid, y->userid);
	return c != 0 ? c : (x->id > y->id) - (x->id < y->id);
}

static int load_collections(struct source *s, const struct layout *l)
{
	if (!list_has(&l->tables, "collections"))
		return EXIT_OK;
	if (src_query(s, "SELECT userid, collectionid, name FROM collections", 3,
		      load_collection, NULL) < 0)
		return fail(EXIT_FAILED, "cannot read the collections of %s: %s", s->name,
			    s->error);
	/* Looked up per record: sorted once, searched in log time. */
	if (ncolls > 0)
		qsort(colls, ncolls, sizeof *colls, collection_order);
	return EXIT_OK;
}

static void free_collections(void)
{
	for (size_t i = 0; i < ncolls; i++) {
		free(colls[i].userid);
		free(colls[i].name);
	}
	free(colls);
	colls = NULL;
	ncolls = colls_cap = 0;
}

/* The name of PHP collection id for the user, or NULL. */
static const char *php_collection_name(const char *userid, int64_t id)
{
	struct php_collection probe = { .userid = (char *)userid, .id = id };
	if (id >= 1 && id <= 10)
		return php_collections[id];
	if (ncolls == 0)
		return NULL;
	const struct php_collection *c =
		bsearch(&probe, colls, ncolls, sizeof *colls, collection_order);
	return c != NULL ? c->name : NULL;
}

static const char *collection_by_id(const char *user_key, const struct src_value *v,
				    const char **name, size_t *len)
{
	char num[32];
	int64_t cid;
	if (!src_number_text(v, num, sizeof num) || parse_int64(num, 0, INT32_MAX, &cid) < 0)
		return "the collection id is not a number";
	*name = php_collection_name(user_key, cid);
	if (*name == NULL)
		return "a collection id has no name in the collections table";
	*len = strlen(*name);
	return NULL;
}

static const char *modified_in_centiseconds(const char *text, int64_t *out)
{
	if (parse_int64(text, 0, MODIFIED_MAX, out) == 0 ||
	    (src_number_by_double(text, 1.0, MODIFIED_MAX, out) && *out >= 0))
		return NULL;
	return "modified is not a centisecond timestamp";
}

const struct migrate_format migrate_php = {
	.name = "php",
	.user_key_column = "id",
	.prepare = load_collections,
	.collection = collection_by_id,
	.modified = modified_in_centiseconds,
	.release = free_collections,
};

const struct migrate_format migrate_php_sqlite = {
	.name = "php",
	.user_key_column = "username",
	.collection = migrate_collection_by_name,
	.modified = modified_in_centiseconds,
};
