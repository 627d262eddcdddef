/*
 * restore_lines.h - one line of a backup file (backup_file.h), parsed and
 * checked with the rules the API and weave-admin apply to the same
 * columns (validate.h, node URLs, records.h for records), before restore
 * writes anything.
 *
 * Each parse fills a struct whose strings point into the json_object;
 * it returns EXIT_OK, or EXIT_FAILED after printing "FILE:LINE: why".
 */
#ifndef WEAVE_RESTORE_LINES_H
#define WEAVE_RESTORE_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admin_backup_db.h"

struct json_object;

enum backup_line {
	BL_HEADER,
	BL_NODE,
	BL_ACCOUNT,
	BL_RECORD,
	BL_VERSION,
	BL_WRITE,
	BL_USAGE,
	BL_END,
	BL__MAX
};

/* Where a message points. */
struct line_at {
	const char *file;
	size_t line_no;
};

/* The kind of o ("weave_backup" makes a header; else its "t"), or
 * BL__MAX after a message. */
enum backup_line restore_line_kind(const struct line_at *at, struct json_object *o);

struct backup_header {
	int64_t format, schema, created, accounts;
	const char *server, *scope;
};

struct backup_node {
	const char *url;
	int64_t capacity; /* -1: unlimited */
	int64_t created;
};

struct backup_account {
	const char *username, *password_hash, *email, *node, *alert;
	int64_t status, quota_kb; /* quota_kb -1: the configured default */
	int64_t last_write, created;
};

struct backup_usage {
	int64_t bytes, since;
};

/* The trailer's counts (of every kind but header and end) and checksum. */
struct backup_trailer {
	int64_t count[BL__MAX];
	const char *sha256;
};

int restore_parse_header(const struct line_at *at, struct json_object *o,
			 struct backup_header *h);
int restore_parse_node(const struct line_at *at, struct json_object *o,
		       struct backup_node *n);
int restore_parse_account(const struct line_at *at, struct json_object *o,
			  struct backup_account *acc);
int restore_parse_record(const struct line_at *at, struct json_object *o,
			 struct db_record *r);
int restore_parse_version(const struct line_at *at, struct json_object *o,
			  struct backup_version *v);
int restore_parse_write(const struct line_at *at, struct json_object *o,
			struct backup_write *w);
int restore_parse_usage(const struct line_at *at, struct json_object *o,
			struct backup_usage *u);
int restore_parse_trailer(const struct line_at *at, struct json_object *o,
			  struct backup_trailer *t);

/* The trailer's name of each count ("records", ...), NULL for none. */
const char *restore_count_name(enum backup_line k);

#endif
