/* db_schema.c - SQL for the schema's version (the weave_schema table). */
#include "db_schema.h"

enum schema_stmt { HAS_VERSION_TABLE, MAX_VERSION, SCHEMA_STMT__MAX };

static const char *const schema_sql[SCHEMA_STMT__MAX] = {
	[HAS_VERSION_TABLE] = "SELECT COUNT(*) FROM information_schema.tables "
			      "WHERE table_schema = DATABASE() AND table_name = 'weave_schema'",
	[MAX_VERSION] = "SELECT COALESCE(MAX(version), 0) FROM weave_schema",
};

static int int_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].is_null ? 0 : row[0].i;
	return 0;
}

enum db_status db_schema_version(int64_t *version)
{
	int64_t tables = 0;
	*version = 0;
	enum db_status st = db_run(schema_sql[HAS_VERSION_TABLE], NULL, 0, int_row, &tables, NULL);
	if (st != DB_OK || tables == 0)
		return st;
	return db_run(schema_sql[MAX_VERSION], NULL, 0, int_row, version, NULL);
}
