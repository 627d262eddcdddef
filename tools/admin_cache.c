/* admin_cache.c - weave-admin cache: what the host-wide caches did. */
#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>

#include "admin.h"
#include "change_board.h"
#include "util.h"

static const struct {
	enum board_counter counter;
	const char *key;  /* in --json */
	const char *text; /* on a terminal */
} counters[] = {
	{ BOARD_VERIFICATIONS, "verifications", "password verifications (KDF runs)" },
	{ BOARD_CREDENTIAL_HITS, "credential_hits", "logins vouched for by the cache" },
	{ BOARD_CREDENTIAL_WAITS, "credential_waits",
	  "logins that waited for another process's KDF" },
	{ BOARD_ROW_HITS, "row_hits", "reads answered from a kept row" },
	{ BOARD_ROW_MISSES, "row_misses", "reads that read the row" },
	{ BOARD_STAMP_HITS, "collections_hits", "info/collections from a kept answer" },
	{ BOARD_STAMP_MISSES, "collections_misses", "info/collections computed" },
	{ BOARD_KDF_BUSY, "kdf_busy", "logins answered 503: too many KDFs at once" },
	{ BOARD_SHARED_HITS, "shared_hits",
	  "logins vouched for by a verification stored in the database" },
	{ BOARD_RESTAMPS, "restamps",
	  "uploads locked late that moved their stamp (late_write_lock)" },
	{ BOARD_TURN_TIMEOUTS, "turn_timeouts",
	  "uploads locked late that stopped waiting for the one before" },
};

static const struct {
	enum board_table table;
	const char *key;
	const char *text;
} tables[] = {
	{ BOARD_ACCOUNTS, "accounts", "accounts (row, credential, info/collections)" },
	{ BOARD_CLAIMS, "kdf_claims", "passwords being verified" },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

int cmd_cache(const struct args *a)
{
	char path[4096];
	if (change_board_path(&admin_cfg, path, sizeof path) < 0 || !change_board_ready()) {
		fprintf(stderr,
			"weave-admin: no account cache file to read at %s (no server "
			"has run on this host with this configuration, or it is not "
			"readable by this user)\n",
			path);
		return EXIT_FAILED;
	}
	int64_t now = now_seconds();
	if (has_opt(a, OPT_JSON)) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "file", json_object_new_string(path));
		for (size_t i = 0; i < COUNT(counters); i++)
			json_object_object_add(o, counters[i].key,
					       json_object_new_int64((int64_t)change_board_counter(
						       counters[i].counter)));
		struct json_object *used = json_object_new_object();
		for (size_t i = 0; i < COUNT(tables); i++) {
			const struct shared_table *t = change_board_table(tables[i].table);
			struct json_object *u = json_object_new_object();
			json_object_object_add(
				u, "used", json_object_new_int64((int64_t)shared_table_count(t, now)));
			json_object_object_add(
				u, "capacity", json_object_new_int64((int64_t)t->sets * t->ways));
			json_object_object_add(used, tables[i].key, u);
		}
		json_object_object_add(o, "entries", used);
		json_print(o);
		return EXIT_OK;
	}
	printf("file  %s\n\nsince the file was made:\n", path);
	for (size_t i = 0; i < COUNT(counters); i++)
		printf("  %12" PRIu64 "  %s\n", change_board_counter(counters[i].counter),
		       counters[i].text);
	printf("\nentries in use now:\n");
	for (size_t i = 0; i < COUNT(tables); i++) {
		const struct shared_table *t = change_board_table(tables[i].table);
		printf("  %6" PRIu64 " of %-6" PRIu32 " %s\n", shared_table_count(t, now),
		       t->sets * t->ways, tables[i].text);
	}
	return EXIT_OK;
}
