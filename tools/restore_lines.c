/* restore_lines.c - each kind of backup line, parsed and checked before restore writes it. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "admin.h"
#include "backup_file.h"
#include "password.h"
#include "records.h"
#include "restore_lines.h"

#define AGENT_MAX 255
#define HASH_MAX 255
#define ALERT_MAX 65535

static const char *const kind_names[BL__MAX] = {
	[BL_HEADER] = "header", [BL_NODE] = "node",	  [BL_ACCOUNT] = "account",
	[BL_RECORD] = "record", [BL_VERSION] = "version", [BL_WRITE] = "write",
	[BL_USAGE] = "usage",	[BL_END] = "end",
};

static const char *const count_names[BL__MAX] = {
	[BL_NODE] = "nodes",	   [BL_ACCOUNT] = "accounts", [BL_RECORD] = "records",
	[BL_VERSION] = "versions", [BL_WRITE] = "writes",     [BL_USAGE] = "usages",
};

const char *restore_count_name(enum backup_line k)
{
	return k < BL__MAX ? count_names[k] : NULL;
}

static int bad(const struct line_at *at, const char *key, const char *why)
{
	return fail(EXIT_FAILED, "%s:%zu: \"%s\" %s", at->file, at->line_no, key, why);
}

/* Every member of o is in keys (NULL-terminated). */
static int only_keys(const struct line_at *at, struct json_object *o,
		     const char *const *keys)
{
	json_object_object_foreach(o, k, val)
	{
		bool ok = false;
		(void)val;
		for (size_t i = 0; keys[i] != NULL && !ok; i++)
			ok = strcmp(k, keys[i]) == 0;
		if (!ok)
			return fail(EXIT_FAILED, "%s:%zu: unknown key \"%s\"", at->file,
				    at->line_no, k);
	}
	return EXIT_OK;
}

/* An integer in [min, max]; with nullable, null or absent gives *null_out. */
static int get_int(const struct line_at *at, struct json_object *o, const char *key,
		   int64_t min, int64_t max, bool nullable, int64_t null_value,
		   int64_t *out)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		if (!nullable)
			return bad(at, key, "is missing");
		*out = null_value;
		return EXIT_OK;
	}
	if (!json_object_is_type(v, json_type_int))
		return bad(at, key, "must be an integer");
	errno = 0;
	*out = json_object_get_int64(v);
	if (errno != 0 || *out < min || *out > max)
		return bad(at, key, "is out of range");
	return EXIT_OK;
}

/* A timestamp in centiseconds: from min up to our clock plus the skew. */
static int get_stamp(const struct line_at *at, struct json_object *o, const char *key,
		     int64_t min, int64_t *out)
{
	int rc = get_int(at, o, key, min, INT64_MAX, false, 0, out);
	const char *why = rc == EXIT_OK ? stamp_refusal(*out) : NULL;
	return why != NULL ? bad(at, key, why) : rc;
}

/* A string of at most max bytes without NUL; nullable: null or absent is NULL. */
static int get_str(const struct line_at *at, struct json_object *o, const char *key,
		   size_t max, bool nullable, const char **out)
{
	struct json_object *v = NULL;
	*out = NULL;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return nullable ? EXIT_OK : bad(at, key, "is missing");
	if (!json_object_is_type(v, json_type_string))
		return bad(at, key, "must be a string");
	size_t len = (size_t)json_object_get_string_len(v);
	const char *s = json_object_get_string(v);
	if (len > max)
		return bad(at, key, "is too long");
	if (memchr(s, '\0', len) != NULL)
		return bad(at, key, "holds a NUL byte");
	*out = s;
	return EXIT_OK;
}

enum backup_line restore_line_kind(const struct line_at *at, struct json_object *o)
{
	struct json_object *t = NULL;
	if (!json_object_is_type(o, json_type_object)) {
		fail(EXIT_FAILED, "%s:%zu: not a JSON object", at->file, at->line_no);
		return BL__MAX;
	}
	if (json_object_object_get_ex(o, "weave_backup", NULL))
		return BL_HEADER;
	if (json_object_object_get_ex(o, "t", &t) && json_object_is_type(t, json_type_string))
		for (int k = BL_NODE; k < BL__MAX; k++)
			if (strcmp(json_object_get_string(t), kind_names[k]) == 0)
				return (enum backup_line)k;
	fail(EXIT_FAILED, "%s:%zu: not a line of a weave-admin backup (no known \"t\")",
	     at->file, at->line_no);
	return BL__MAX;
}

int restore_parse_header(const struct line_at *at, struct json_object *o,
			 struct backup_header *h)
{
	static const char *const keys[] = { "weave_backup", "schema", "server", "created",
					    "created_utc", "database", "scope",
					    "accounts", NULL };
	memset(h, 0, sizeof *h);
	int rc = get_int(at, o, "weave_backup", 0, INT64_MAX, false, 0, &h->format);
	if (rc == EXIT_OK && h->format != BACKUP_FORMAT)
		return fail(EXIT_FAILED, "%s: backup format %lld is not one this weave-admin "
			    "reads (%d)", at->file, (long long)h->format, BACKUP_FORMAT);
	if (rc == EXIT_OK)
		rc = only_keys(at, o, keys);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "schema", 0, INT32_MAX, false, 0, &h->schema);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "created", 0, INT64_MAX, false, 0, &h->created);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "accounts", 0, INT64_MAX, false, 0, &h->accounts);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "server", 255, true, &h->server);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "scope", 16, false, &h->scope);
	return rc;
}

int restore_parse_node(const struct line_at *at, struct json_object *o,
		       struct backup_node *n)
{
	static const char *const keys[] = { "t", "url", "capacity", "created", NULL };
	char url[NODE_URL_MAX + 2];
	int rc = only_keys(at, o, keys);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "url", NODE_URL_MAX, false, &n->url);
	if (rc == EXIT_OK && (node_url_normalise(n->url, url, sizeof url) < 0 ||
			      strcmp(url, n->url) != 0))
		rc = bad(at, "url", "is not a node URL (http:// or https://, ending in /)");
	if (rc == EXIT_OK)
		rc = get_int(at, o, "capacity", 0, UINT32_MAX, true, -1, &n->capacity);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "created", 0, INT64_MAX, false, 0, &n->created);
	return rc;
}

static bool printable_ascii(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s <= ' ' || *s >= 0x7f)
			return false;
	return true;
}

static int check_account_strings(const struct line_at *at, struct backup_account *acc)
{
	size_t len = strlen(acc->username);
	char url[NODE_URL_MAX + 2];
	bool lower = true;
	for (size_t i = 0; i < len; i++)
		lower = lower && !(acc->username[i] >= 'A' && acc->username[i] <= 'Z');
	if (!validate_username(acc->username, len) || !lower)
		return bad(at, "username", "is not a stored account name ([a-z0-9._-]{1,32})");
	if (acc->password_hash[0] == '\0' || !printable_ascii(acc->password_hash))
		return bad(at, "password_hash", "must be printable ASCII");
	/* A $-scheme hash is one a login would run: over the KDF caps it would
	 * cost a login gigabytes or seconds (docs/security.md), so it is refused
	 * here as migrate refuses it. Other text is kept: no login can use it. */
	const char *problem = acc->password_hash[0] == '$'
				      ? password_hash_problem(acc->password_hash)
				      : NULL;
	if (problem != NULL)
		return bad(at, "password_hash", problem);
	if (acc->email != NULL && !validate_email(acc->email, strlen(acc->email)))
		return bad(at, "email", "is not an e-mail address");
	if (acc->node != NULL && (node_url_normalise(acc->node, url, sizeof url) < 0 ||
				  strcmp(url, acc->node) != 0))
		return bad(at, "node", "is not a node URL (http:// or https://, ending in /)");
	if (acc->alert != NULL && !validate_utf8(acc->alert, strlen(acc->alert)))
		return bad(at, "alert", "is not UTF-8");
	return EXIT_OK;
}

int restore_parse_account(const struct line_at *at, struct json_object *o,
			  struct backup_account *acc)
{
	static const char *const keys[] = { "t", "username", "password_hash", "email",
					    "status", "quota_kb", "node", "alert",
					    "last_write", "created", NULL };
	int64_t created_max = (int64_t)time(NULL) + MODIFIED_SKEW_SECONDS;
	memset(acc, 0, sizeof *acc);
	int rc = only_keys(at, o, keys);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "username", USERNAME_MAX, false, &acc->username);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "password_hash", HASH_MAX, false, &acc->password_hash);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "email", EMAIL_MAX, true, &acc->email);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "node", NODE_URL_MAX, true, &acc->node);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "alert", ALERT_MAX, true, &acc->alert);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "status", 0, 1, false, 0, &acc->status);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "quota_kb", 0, INT64_MAX / 1024, true, -1, &acc->quota_kb);
	if (rc == EXIT_OK)
		rc = get_stamp(at, o, "last_write", 0, &acc->last_write);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "created", 0, created_max, false, 0, &acc->created);
	if (rc == EXIT_OK)
		rc = check_account_strings(at, acc);
	return rc;
}

int restore_parse_record(const struct line_at *at, struct json_object *o,
			 struct db_record *r)
{
	static const char *const extra[] = { "t", NULL };
	return record_parse(at->file, at->line_no, o, extra, r);
}

int restore_parse_version(const struct line_at *at, struct json_object *o,
			  struct backup_version *v)
{
	static const char *const extra[] = { "t", "replaced", NULL };
	int rc = record_parse(at->file, at->line_no, o, extra, &v->rec);
	if (rc == EXIT_OK)
		rc = get_stamp(at, o, "replaced", 1, &v->replaced);
	return rc;
}

int restore_parse_write(const struct line_at *at, struct json_object *o,
			struct backup_write *w)
{
	static const char *const keys[] = { "t", "stamp", "collection", "previous",
					    "written", "replaced", "deleted", "bytes",
					    "agent", NULL };
	memset(w, 0, sizeof *w);
	int rc = only_keys(at, o, keys);
	if (rc == EXIT_OK)
		rc = get_stamp(at, o, "stamp", 0, &w->stamp);
	if (rc == EXIT_OK)
		rc = get_stamp(at, o, "previous", 0, &w->previous);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "written", 0, UINT32_MAX, false, 0, &w->written);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "replaced", 0, UINT32_MAX, false, 0, &w->replaced);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "deleted", 0, UINT32_MAX, false, 0, &w->deleted);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "bytes", 0, INT64_MAX, false, 0, &w->bytes);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "collection", COLLECTION_MAX, false, &w->collection);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "agent", AGENT_MAX, false, &w->agent);
	if (rc != EXIT_OK)
		return rc;
	w->collection_len = strlen(w->collection);
	w->agent_len = strlen(w->agent);
	if (w->collection_len > 0 && !validate_collection(w->collection, w->collection_len))
		return bad(at, "collection", "must be empty or a collection name");
	return EXIT_OK;
}

int restore_parse_usage(const struct line_at *at, struct json_object *o,
			struct backup_usage *u)
{
	static const char *const keys[] = { "t", "bytes", "since", NULL };
	int rc = only_keys(at, o, keys);
	if (rc == EXIT_OK)
		rc = get_int(at, o, "bytes", 0, INT64_MAX, false, 0, &u->bytes);
	if (rc == EXIT_OK)
		rc = get_stamp(at, o, "since", 0, &u->since);
	return rc;
}

int restore_parse_trailer(const struct line_at *at, struct json_object *o,
			  struct backup_trailer *t)
{
	static const char *const keys[] = { "t",	"accounts", "nodes",  "records",
					    "versions", "writes",   "usages", "sha256",
					    NULL };
	memset(t, 0, sizeof *t);
	int rc = only_keys(at, o, keys);
	for (int k = 0; k < BL__MAX && rc == EXIT_OK; k++)
		if (count_names[k] != NULL)
			rc = get_int(at, o, count_names[k], 0, INT64_MAX, false, 0,
				     &t->count[k]);
	if (rc == EXIT_OK)
		rc = get_str(at, o, "sha256", 64, false, &t->sha256);
	return rc;
}
