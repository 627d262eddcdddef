/*
 * records.h - the line format of a record that export writes and import
 * reads (admin_data.c), shared with backup and restore (admin_backup.c):
 * one JSON object per record, keys in a fixed order, every column.
 */
#ifndef WEAVE_RECORDS_H
#define WEAVE_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "db_admin.h"

struct json_object;

/* A record's modified (or a history row's replaced) may be at most this
 * far ahead of our clock: another server's clock a little ahead is fine,
 * a timestamp years ahead would stamp every later write after it. */
#define MODIFIED_SKEW_SECONDS 300

/* Now plus the skew, in centiseconds. */
int64_t modified_limit(void);
/* NULL when a timestamp (centiseconds) is at most modified_limit(), else
 * why it is refused (for "KEY" WHY messages). */
const char *stamp_refusal(int64_t centiseconds);

/* The record's members, "collection":...,"payload":..., without the
 * braces (a backup line puts its own key first). 0, or -1 when out
 * grows past its max. */
int record_line_keys(struct buf *out, const struct db_record *r);
/* The whole line: '{', record_line_keys(), "}\n". */
int record_line(struct buf *out, const struct db_record *r);

/*
 * Check one parsed line with the API's rules (validate.h: collection,
 * ids, sortindex; modified not past modified_limit()) and fill *r,
 * which points into o. Keys besides the record's must be in extra
 * (NULL-terminated, may be NULL). EXIT_OK, or EXIT_FAILED after a
 * message "FILE:LINE: ...".
 */
int record_parse(const char *file, size_t line_no, struct json_object *o,
		 const char *const *extra, struct db_record *r);

#endif
