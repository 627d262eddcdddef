/*
 * admin_migrate_minimal.c - migrate from FSyncMS (SQLite or MySQL; both
 * forks), the PHP "Weave Minimal" server's schema: users by name
 * (username, md5 holding hex MD5 or bcrypt), wbo rows naming their user
 * and collection, modified in seconds as a REAL. (weave-minimal, the
 * Python server, is another layout: admin_migrate_files.c.)
 */
#include "migrate.h"
#include "util.h"

const char *migrate_collection_by_name(const char *user_key, const struct src_value *v,
				      const char **name, size_t *len)
{
	(void)user_key;
	if (v->is_null)
		return "the collection is NULL";
	*name = v->s;
	*len = v->len;
	return NULL;
}

const char *migrate_modified_in_seconds(const char *text, int64_t *out)
{
	/* Decimal text ("1265402837.12") is rounded exactly, without a double. */
	if (parse_timestamp(text, out) == 0 && *out <= MODIFIED_MAX)
		return NULL;
	if (src_number_by_double(text, 100.0, MODIFIED_MAX, out) && *out >= 0)
		return NULL;
	return "modified is not a timestamp in seconds";
}

const struct migrate_format migrate_fsyncms = {
	.name = "fsyncms",
	.user_key_column = "username",
	.collection = migrate_collection_by_name,
	.modified = migrate_modified_in_seconds,
};
