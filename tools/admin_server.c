/*
 * admin_server.c - weave-admin db (schema) and operator settings (backoff, maintenance, status).
 * Just over 600 lines: the schema steps and the settings both read and
 * write the database's own state, not accounts or records.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "admin.h"
#include "db_admin.h"
#include "db_settings.h"
#include "settings.h"
#include "util.h"

/* The versions are listed in db_admin.h. */
#define SCHEMA_VERSION DB_SCHEMA_VERSION

extern const char weave_schema_sql[];

/*
 * Call fn for each statement of the embedded schema: statements end with
 * ';' at the end of a line; lines starting with "--" are comments.
 */
static enum db_status schema_statements(enum db_status (*fn)(const char *stmt, void *ctx),
					void *ctx)
{
	struct buf stmt;
	enum db_status st = DB_OK;
	const char *p = weave_schema_sql;

	buf_init(&stmt, 1024 * 1024);
	while (*p != '\0' && st == DB_OK) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *start = p;
		p += len + (nl ? 1 : 0);
		while (len > 0 && (*start == ' ' || *start == '\t')) {
			start++;
			len--;
		}
		if (len == 0 || (len >= 2 && start[0] == '-' && start[1] == '-'))
			continue;
		buf_append(&stmt, start, len);
		buf_putc(&stmt, '\n');
		if (start[len - 1] == ';') {
			st = fn(stmt.data, ctx);
			buf_reset(&stmt);
		}
	}
	buf_free(&stmt);
	return st;
}

static enum db_status exec_statement(const char *stmt, void *ctx)
{
	(void)ctx;
	return db_exec_text(stmt);
}

static enum db_status recreate_missing_indexes(void);

/* The database name of the current place, for messages. */
static const char *place_db_name(void)
{
	size_t place = db_current();
	return place == DB_ACCOUNTS ? admin_cfg.db_name : admin_cfg.nodes[place - 1].db_name;
}

/* db init (or upgrade) of the current place's database. */
static int init_place(void)
{
	int64_t version;
	char why[300];
	if (!db_server_supported(why, sizeof why))
		return fail(EXIT_DATABASE, "%s", why);
	enum db_status st = db_schema_version(&version);
	if (st != DB_OK)
		return db_fail(st, "reading the schema version");
	if (version > SCHEMA_VERSION)
		return fail(EXIT_FAILED,
			    "database schema version %" PRId64 " is newer than this "
			    "weave-admin understands (%d): upgrade weave-server",
			    version, SCHEMA_VERSION);
	if (version > 0 && version < SCHEMA_VERSION)
		printf("upgrading schema version %" PRId64 " to %d in database %s; until this "
		       "finishes, weave.fcgi answers writes 503 with Retry-After %d (reads go "
		       "on)\n", version, SCHEMA_VERSION, place_db_name(),
		       SETTINGS_UPGRADE_RETRY_AFTER);
	st = schema_statements(exec_statement, NULL);
	if (st != DB_OK && strstr(db_last_error(), "log_bin_trust_function_creators"))
		return fail(EXIT_DATABASE,
			    "the database keeps a binary log (replication or Galera), so "
			    "only an account with the SUPER privilege may create the "
			    "schema's triggers: set log_bin_trust_function_creators = 1 "
			    "in the server's [mariadb] section (or SET GLOBAL it), or run "
			    "this command once with such an account "
			    "(weave-admin --config FILE naming it)");
	if (st == DB_OK && version > 0)
		st = recreate_missing_indexes();
	if (st != DB_OK)
		return db_fail(st, "installing the schema");
	if (version == SCHEMA_VERSION) {
		printf("schema version %d is installed and up to date\n", SCHEMA_VERSION);
		return EXIT_OK;
	}
	/* Versions only add tables so far; steps that alter one go here, in order. */
	st = db_admin_schema_record(SCHEMA_VERSION, (int64_t)time(NULL));
	if (st != DB_OK)
		return db_fail(st, "recording the schema version");
	if (version == 0)
		printf("installed schema version %d in database %s\n", SCHEMA_VERSION,
		       place_db_name());
	else
		printf("upgraded schema from version %" PRId64 " to %d in database %s\n",
		       version, SCHEMA_VERSION, place_db_name());
	return EXIT_OK;
}

/* Every database: the account database, then each storage node's
 * (which hold the same schema; only their record tables fill). */
int cmd_db_init(const struct args *a)
{
	(void)a;
	int rc = EXIT_OK;
	for (size_t place = 0; place < db_places(); place++) {
		db_use(place);
		if (place != DB_ACCOUNTS)
			printf("storage node %s:\n", db_place_name(place));
		int r = init_place();
		if (r != EXIT_OK)
			rc = r;
	}
	db_use(DB_ACCOUNTS);
	return rc;
}

/* ---- db check ------------------------------------------------------------------ */

#define SCHEMA_NAMES_MAX 128
#define NAME_MAX_LEN 64

/* Tables and "table.index" names: expected (from the schema) and present. */
struct name_set {
	char names[SCHEMA_NAMES_MAX][NAME_MAX_LEN * 2 + 2];
	bool seen[SCHEMA_NAMES_MAX];
	size_t n;
};

static void set_add(struct name_set *s, const char *table, const char *index)
{
	if (s->n == SCHEMA_NAMES_MAX)
		return;
	if (index != NULL)
		snprintf(s->names[s->n], sizeof s->names[0], "%.64s.%.64s", table, index);
	else
		snprintf(s->names[s->n], sizeof s->names[0], "%.64s", table);
	s->seen[s->n] = false;
	s->n++;
}

static bool set_mark(struct name_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0) {
			s->seen[i] = true;
			return true;
		}
	return false;
}

/* Copy an identifier at *p (backquotes allowed) into out; advance *p. */
static bool take_word(const char **p, char out[NAME_MAX_LEN + 1])
{
	size_t n = 0;
	while (isspace((unsigned char)**p))
		(*p)++;
	bool quoted = **p == '`';
	if (quoted)
		(*p)++;
	while (**p != '\0' && n < NAME_MAX_LEN &&
	       (isalnum((unsigned char)**p) || **p == '_' || **p == '$')) {
		out[n++] = **p;
		(*p)++;
	}
	if (quoted && **p == '`')
		(*p)++;
	out[n] = '\0';
	return n > 0;
}

static bool starts_with_word(const char *p, const char *word)
{
	size_t len = strlen(word);
	return strncasecmp(p, word, len) == 0 && !isalnum((unsigned char)p[len]) &&
	       p[len] != '_';
}

static const char *skip_words(const char *p, const char *const *words)
{
	for (; *words != NULL; words++) {
		while (isspace((unsigned char)*p))
			p++;
		if (!starts_with_word(p, *words))
			return NULL;
		p += strlen(*words);
	}
	return p;
}

struct expected {
	struct name_set tables, indexes;
	/* The key definition of each index ("KEY by_x (a, b)"), for db upgrade. */
	char defs[SCHEMA_NAMES_MAX][512];
};

/* One item of a CREATE TABLE body: a key definition adds an index. */
static void schema_item(struct expected *e, const char *table, const char *item)
{
	char name[NAME_MAX_LEN + 1];
	while (isspace((unsigned char)*item))
		item++;
	const char *def = item;
	if (starts_with_word(item, "PRIMARY")) {
		snprintf(e->defs[e->indexes.n < SCHEMA_NAMES_MAX ? e->indexes.n : 0],
			 sizeof e->defs[0], "%s", def);
		set_add(&e->indexes, table, "PRIMARY");
		return;
	}
	if (starts_with_word(item, "UNIQUE"))
		item += 6;
	while (isspace((unsigned char)*item))
		item++;
	if (starts_with_word(item, "KEY") || starts_with_word(item, "INDEX")) {
		item += starts_with_word(item, "KEY") ? 3 : 5;
		if (take_word(&item, name)) {
			snprintf(e->defs[e->indexes.n < SCHEMA_NAMES_MAX ? e->indexes.n : 0],
				 sizeof e->defs[0], "%s", def);
			set_add(&e->indexes, table, name);
		}
	}
}

/* Expected tables and indexes from one schema statement. */
static enum db_status schema_expect(const char *stmt, void *ctx)
{
	static const char *const create_table[] = { "CREATE", "TABLE", "IF", "NOT",
						    "EXISTS", NULL };
	static const char *const create_index[] = { "CREATE", "INDEX", NULL };
	static const char *const create_unique[] = { "CREATE", "UNIQUE", "INDEX", NULL };
	static const char *const if_not_exists[] = { "IF", "NOT", "EXISTS", NULL };
	struct expected *e = ctx;
	char table[NAME_MAX_LEN + 1], index[NAME_MAX_LEN + 1];
	const char *p;

	if ((p = skip_words(stmt, create_table)) != NULL) {
		if (!take_word(&p, table))
			return DB_OK;
		set_add(&e->tables, table, NULL);
		p = strchr(p, '(');
		if (p == NULL)
			return DB_OK;
		/* Split the body on top-level commas, skipping quoted text. */
		int depth = 0;
		const char *item = ++p;
		char quote = 0;
		for (; *p != '\0'; p++) {
			if (quote) {
				if (*p == quote)
					quote = 0;
				continue;
			}
			if (*p == '\'' || *p == '"' || *p == '`') {
				quote = *p;
			} else if (*p == '(') {
				depth++;
			} else if ((*p == ',' && depth == 0) || (*p == ')' && depth == 0)) {
				char buf[512];
				size_t len = (size_t)(p - item);
				if (len >= sizeof buf)
					len = sizeof buf - 1;
				memcpy(buf, item, len);
				buf[len] = '\0';
				schema_item(e, table, buf);
				if (*p == ')')
					break;
				item = p + 1;
			} else if (*p == ')') {
				depth--;
			}
		}
		return DB_OK;
	}
	if ((p = skip_words(stmt, create_index)) != NULL ||
	    (p = skip_words(stmt, create_unique)) != NULL) {
		const char *q = skip_words(p, if_not_exists);
		if (q != NULL)
			p = q;
		if (!take_word(&p, index))
			return DB_OK;
		while (isspace((unsigned char)*p))
			p++;
		if (!starts_with_word(p, "ON"))
			return DB_OK;
		p += 2;
		if (take_word(&p, table))
			set_add(&e->indexes, table, index);
	}
	return DB_OK;
}

static int mark_present(void *ctx, const char *table, const char *index)
{
	struct name_set *s = ctx;
	char name[NAME_MAX_LEN * 2 + 2];
	if (index != NULL)
		snprintf(name, sizeof name, "%.64s.%.64s", table, index);
	else
		snprintf(name, sizeof name, "%.64s", table);
	set_mark(s, name);
	return 0;
}

/* Print what is missing; an index of a missing table is not counted again. */
static size_t report_missing(const struct name_set *s, const char *what,
			     const struct name_set *tables)
{
	size_t missing = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->seen[i])
			continue;
		if (tables != NULL) {
			const char *dot = strchr(s->names[i], '.');
			bool table_missing = false;
			for (size_t t = 0; dot != NULL && t < tables->n; t++)
				if (!tables->seen[t] &&
				    strlen(tables->names[t]) == (size_t)(dot - s->names[i]) &&
				    strncmp(tables->names[t], s->names[i],
					    (size_t)(dot - s->names[i])) == 0)
					table_missing = true;
			if (table_missing)
				continue;
		}
		printf("missing %s %s\n", what, s->names[i]);
		missing++;
	}
	return missing;
}

/* Read the expected schema and mark what information_schema has. */
static enum db_status schema_compare(struct expected *e)
{
	schema_statements(schema_expect, e);
	enum db_status st = db_admin_schema_tables(mark_present, &e->tables);
	if (st == DB_OK)
		st = db_admin_schema_indexes(mark_present, &e->indexes);
	return st;
}

static bool table_present(const struct expected *e, const char *table, size_t len)
{
	for (size_t t = 0; t < e->tables.n; t++)
		if (e->tables.seen[t] && strlen(e->tables.names[t]) == len &&
		    strncmp(e->tables.names[t], table, len) == 0)
			return true;
	return false;
}

/*
 * Indexes defined inside a CREATE TABLE are not added by CREATE TABLE IF
 * NOT EXISTS when the table exists without them (dropped by hand, say):
 * add each missing one to its table.
 */
static enum db_status recreate_missing_indexes(void)
{
	struct expected *e = xcalloc(1, sizeof *e);
	enum db_status st = schema_compare(e);
	for (size_t i = 0; st == DB_OK && i < e->indexes.n; i++) {
		const char *name = e->indexes.names[i];
		const char *dot = strchr(name, '.');
		if (e->indexes.seen[i] || dot == NULL || e->defs[i][0] == '\0' ||
		    !table_present(e, name, (size_t)(dot - name)))
			continue;
		char sql[700];
		snprintf(sql, sizeof sql, "ALTER TABLE `%.*s` ADD %s", (int)(dot - name), name,
			 e->defs[i]);
		st = db_exec_text(sql);
		if (st == DB_OK)
			printf("recreated index %s\n", name);
	}
	free(e);
	return st;
}

enum db_status schema_inspect(int64_t *version, size_t *missing, char *first, size_t cap)
{
	*missing = 0;
	first[0] = '\0';
	enum db_status st = db_schema_version(version);
	if (st != DB_OK || *version == 0)
		return st;
	struct expected *e = xcalloc(1, sizeof *e);
	st = schema_compare(e);
	const struct name_set *sets[] = { &e->tables, &e->indexes };
	for (size_t k = 0; st == DB_OK && k < 2; k++)
		for (size_t i = 0; i < sets[k]->n; i++)
			if (!sets[k]->seen[i]) {
				if (*missing == 0)
					snprintf(first, cap, "%s %s", k == 0 ? "table" : "index",
						 sets[k]->names[i]);
				(*missing)++;
			}
	free(e);
	return st;
}

/* db check of the current place; with json, *jo gets the findings. */
static int check_place(bool json, struct json_object **jo)
{
	int64_t version;
	enum db_status st = db_schema_version(&version);
	if (st != DB_OK)
		return db_fail(st, "reading the schema version");
	if (version == 0)
		return fail(EXIT_FAILED, "no weave schema in database %s: run "
					 "'weave-admin db init'", place_db_name());

	struct expected *e = xcalloc(1, sizeof *e);
	st = schema_compare(e);
	if (st != DB_OK) {
		free(e);
		return db_fail(st, "reading information_schema");
	}
	if (json) {
		struct json_object *o = json_object_new_object();
		struct json_object *missing_list = json_object_new_array();
		const struct name_set *sets[] = { &e->tables, &e->indexes };
		for (size_t k = 0; k < 2; k++)
			for (size_t i = 0; i < sets[k]->n; i++)
				if (!sets[k]->seen[i])
					json_object_array_add(missing_list,
							      json_object_new_string(sets[k]->names[i]));
		size_t n_missing = json_object_array_length(missing_list);
		json_object_object_add(o, "version", json_object_new_int64(version));
		json_object_object_add(o, "current_version", json_object_new_int(SCHEMA_VERSION));
		json_object_object_add(o, "tables_expected", json_object_new_int64((int64_t)e->tables.n));
		json_object_object_add(o, "indexes_expected",
				       json_object_new_int64((int64_t)e->indexes.n));
		json_object_object_add(o, "missing", missing_list);
		*jo = o;
		free(e);
		return n_missing == 0 && version == SCHEMA_VERSION ? EXIT_OK : EXIT_FAILED;
	}
	printf("schema version %" PRId64 " (this weave-admin: %d)%s\n", version,
	       SCHEMA_VERSION,
	       version == SCHEMA_VERSION ? ", up to date"
	       : version < SCHEMA_VERSION ? ", needs 'weave-admin db upgrade'"
					  : ", newer than this weave-admin");
	size_t tables = report_missing(&e->tables, "table", NULL);
	size_t missing = tables + report_missing(&e->indexes, "index", &e->tables);
	printf("%zu tables and %zu indexes expected, %zu missing\n", e->tables.n,
	       e->indexes.n, missing);
	if (tables > 0)
		fprintf(stderr, "weave-admin: the schema is incomplete: "
				"'weave-admin db upgrade' adds the missing tables\n");
	if (missing > tables)
		fprintf(stderr, "weave-admin: indexes of existing tables are missing: "
				"'weave-admin db upgrade' recreates them\n");
	free(e);
	return missing == 0 && version == SCHEMA_VERSION ? EXIT_OK : EXIT_FAILED;
}

/* Every database: the account database, then each storage node's. */
int cmd_db_check(const struct args *a)
{
	bool json = has_opt(a, OPT_JSON);
	struct json_object *top = NULL, *nodes = NULL;
	int rc = EXIT_OK;
	for (size_t place = 0; place < db_places(); place++) {
		struct json_object *o = NULL;
		db_use(place);
		if (place != DB_ACCOUNTS && !json)
			printf("storage node %s:\n", db_place_name(place));
		int r = check_place(json, &o);
		if (r != EXIT_OK)
			rc = r;
		if (o == NULL)
			continue;
		if (place == DB_ACCOUNTS) {
			top = o;
			continue;
		}
		if (nodes == NULL)
			nodes = json_object_new_object();
		json_object_object_add(nodes, db_place_name(place), o);
	}
	db_use(DB_ACCOUNTS);
	if (top != NULL && nodes != NULL)
		json_object_object_add(top, "nodes", nodes);
	else
		json_object_put(nodes);
	if (top != NULL)
		json_print(top);
	return rc;
}

/* ---- operator settings --------------------------------------------------------------- */

#define SETTING_SECONDS_MAX 86400

static int store(const char *name, const char *value)
{
	enum db_status st = db_settings_store(name, value);
	if (st != DB_OK)
		return db_fail(st, "storing the setting");
	return EXIT_OK;
}

int cmd_backoff(const struct args *a)
{
	const char *v = a->pos[0];
	int64_t seconds;
	int rc;
	if (strcmp(v, "default") == 0) {
		rc = store("backoff", NULL);
		if (rc == EXIT_OK)
			printf("backoff follows weave.conf again (%" PRId64 ")\n",
			       admin_cfg.backoff);
		return rc;
	}
	if (strcmp(v, "off") == 0)
		seconds = 0;
	else if ((rc = parse_number_arg(v, 0, SETTING_SECONDS_MAX, "the backoff seconds",
					&seconds)) != EXIT_OK)
		return rc;
	char text[24];
	snprintf(text, sizeof text, "%" PRId64, seconds);
	rc = store("backoff", text);
	if (rc == EXIT_OK && seconds == 0)
		printf("backoff off (every process within %d seconds)\n", SETTINGS_REFRESH);
	else if (rc == EXIT_OK)
		printf("every response carries X-Weave-Backoff: %" PRId64
		       " (every process within %d seconds)\n", seconds, SETTINGS_REFRESH);
	return rc;
}

int cmd_maintenance(const struct args *a)
{
	const char *v = a->pos[0];
	int64_t retry = 0;
	int rc;
	if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0 && strcmp(v, "default") != 0)
		return usage_error("maintenance takes on, off or default, not '%s'", v);
	if (has_opt(a, OPT_RETRY_AFTER) &&
	    (rc = parse_number_arg(a->opt[OPT_RETRY_AFTER], 1, SETTING_SECONDS_MAX,
				   "--retry-after", &retry)) != EXIT_OK)
		return rc;
	if (retry > 0 && strcmp(v, "on") != 0)
		return usage_error("--retry-after goes with 'maintenance on'");
	if (retry > 0) {
		char text[24];
		snprintf(text, sizeof text, "%" PRId64, retry);
		if ((rc = store("retry_after", text)) != EXIT_OK)
			return rc;
	} else if (strcmp(v, "on") != 0 && (rc = store("retry_after", NULL)) != EXIT_OK) {
		/* The Retry-After of a maintenance ends with it: weave.conf's again. */
		return rc;
	}
	rc = store("maintenance", strcmp(v, "default") == 0 ? NULL : v);
	if (rc != EXIT_OK)
		return rc;
	if (strcmp(v, "on") == 0)
		printf("maintenance on: every request gets 503 (within %d seconds)\n",
		       SETTINGS_REFRESH);
	else if (strcmp(v, "off") == 0)
		printf("maintenance off: serving again (within %d seconds)\n",
		       SETTINGS_REFRESH);
	else
		printf("maintenance follows weave.conf again (%s)\n",
		       admin_cfg.maintenance ? "on" : "off");
	if (retry > 0)
		printf("Retry-After: %" PRId64 "\n", retry);
	return EXIT_OK;
}

/* The settings in force; with into (JSON only) they become its "settings". */
static int show_settings(const struct args *a, struct json_object *into)
{
	char backoff[64], maintenance[64], retry_after[64];
	enum db_status st = settings_load(backoff, maintenance, retry_after, sizeof backoff);
	if (st != DB_OK)
		return db_fail(st, "reading the settings");
	/* The values in force, as settings_current() computes them. */
	struct operator_settings now;
	settings_current(&admin_cfg, (int64_t)time(NULL), &now);
	const char *src_backoff = backoff[0] ? "database" : "weave.conf";
	const char *src_maintenance = maintenance[0] ? "database" : "weave.conf";
	const char *src_retry = retry_after[0] ? "database" : "weave.conf";

	if (has_opt(a, OPT_JSON)) {
		struct json_object *o = json_object_new_object();
		struct json_object *src = json_object_new_object();
		json_object_object_add(o, "backoff", json_object_new_int64(now.backoff));
		json_object_object_add(o, "maintenance",
				       json_object_new_boolean(now.maintenance));
		json_object_object_add(o, "retry_after", json_object_new_int64(now.retry_after));
		json_object_object_add(src, "backoff", json_object_new_string(src_backoff));
		json_object_object_add(src, "maintenance",
				       json_object_new_string(src_maintenance));
		json_object_object_add(src, "retry_after", json_object_new_string(src_retry));
		json_object_object_add(o, "source", src);
		if (into != NULL) {
			/* status: the settings' keys beside the server's */
			json_object_object_foreach(o, key, value)
				json_object_object_add(into, key, json_object_get(value));
			json_object_put(o);
			return EXIT_OK;
		}
		json_print(o);
		return EXIT_OK;
	}
	printf("backoff      %-8" PRId64 " %-28s from %s\n", now.backoff,
	       now.backoff > 0 ? "(X-Weave-Backoff on every response)" : "(off)",
	       src_backoff);
	printf("maintenance  %-8s %-28s from %s\n", now.maintenance ? "on" : "off",
	       now.maintenance ? "(every request gets 503)" : "", src_maintenance);
	printf("retry_after  %-8" PRId64 " %-28s from %s\n", now.retry_after,
	       "(Retry-After on 503)", src_retry);
	return EXIT_OK;
}

int cmd_settings(const struct args *a)
{
	return show_settings(a, NULL);
}

/* status --json: the same facts; with the database down, what is known
 * without it and "database_state": "unreachable" with the reason. */
static void status_json(const struct args *a, const char *state, const char *why,
			int64_t version, int64_t users, int64_t disabled)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(o, "config", json_object_new_string(admin_config_path));
	json_object_object_add(o, "public_url", json_string_or_null(admin_cfg.public_url));
	json_object_object_add(o, "registration", json_object_new_boolean(admin_cfg.registration));
	json_object_object_add(o, "database", json_object_new_string(admin_cfg.db_name));
	json_object_object_add(o, "database_state", json_object_new_string(state));
	json_object_object_add(o, "database_error", json_string_or_null(why));
	json_object_object_add(o, "schema_current", json_object_new_int(SCHEMA_VERSION));
	if (why == NULL) {
		json_object_object_add(o, "schema_version", json_object_new_int64(version));
		json_object_object_add(o, "accounts", json_object_new_int64(users));
		json_object_object_add(o, "accounts_disabled", json_object_new_int64(disabled));
		if (version > 0 && show_settings(a, o) != EXIT_OK)
			json_object_object_add(o, "settings_error",
					       json_object_new_string(db_last_error()));
	}
	json_print(o);
}

/*
 * status: what an operator asks first. The database (reachable, schema),
 * the accounts, the public URL and sign-up, then the settings in force.
 * With the database down, --json still prints (exit 4).
 */
int cmd_status(const struct args *a)
{
	int64_t version = 0, users = 0, disabled = 0;
	enum db_status st = db_schema_version(&version);
	if (st == DB_OK && version > 0)
		st = db_admin_count_users(&users, &disabled);
	const char *state = st == DB_UNAVAILABLE       ? "unreachable"
			    : st != DB_OK              ? "error"
			    : version == 0             ? "no_schema"
			    : version < SCHEMA_VERSION ? "upgrade_needed"
						       : "ok";
	const char *where = admin_cfg.db_socket ? admin_cfg.db_socket : admin_cfg.db_host;
	if (has_opt(a, OPT_JSON)) {
		char why[512];
		snprintf(why, sizeof why, "%s", st == DB_OK ? "" : db_last_error());
		status_json(a, state, st == DB_OK ? NULL : why, version, users, disabled);
		return st == DB_OK ? EXIT_OK : EXIT_DATABASE;
	}
	if (st != DB_OK)
		return db_fail(st, "reading the server's state");
	printf("weave-server %s, configuration %s\n", PACKAGE_VERSION, admin_config_path);
	printf("public_url   %s\n", admin_cfg.public_url ? admin_cfg.public_url
						     : "(built from each request)");
	printf("sign-up      %s\n", admin_cfg.registration ? "open" : "closed");
	printf("database     %s at %s, schema version %" PRId64 "%s\n", admin_cfg.db_name,
	       where, version,
	       version == 0 ? " (none: run 'weave-admin db init')"
	       : version < SCHEMA_VERSION ? " (old: run 'weave-admin db upgrade')"
					  : "");
	printf("accounts     %" PRId64 " (%" PRId64 " disabled)\n", users, disabled);
	return version > 0 ? show_settings(a, NULL) : EXIT_OK;
}
