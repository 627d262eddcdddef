/*
 * wbo.h - the Weave Basic Object: parse and validate one record from
 * client JSON, and serialise stored records (docs/protocol.md, Records).
 *
 * A field is "present" only when its key is in the JSON object with a
 * non-null value: an absent payload makes a metadata-only update, and
 * an empty string payload is a stored tombstone.
 *
 * Ownership: struct wbo points into the json_object it was parsed from
 * (strings) and must not outlive it; wbo_json_escape() appends to a buf.
 */
#ifndef WEAVE_WBO_H
#define WEAVE_WBO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct json_object;

enum wbo_field {
	WBO_FIELD_PARENTID = 1 << 0,
	WBO_FIELD_PREDECESSORID = 1 << 1,
	WBO_FIELD_SORTINDEX = 1 << 2,
	WBO_FIELD_PAYLOAD = 1 << 3,
	WBO_FIELD_TTL = 1 << 4,
};

struct wbo {
	const char *id;
	size_t id_len;
	unsigned fields; /* enum wbo_field bits that are present */
	const char *parentid;
	size_t parentid_len;
	const char *predecessorid;
	size_t predecessorid_len;
	int64_t sortindex;
	const char *payload;
	size_t payload_len;
	int64_t ttl;
};

enum wbo_error {
	WBO_OK,
	WBO_NOT_OBJECT,
	WBO_INVALID_ID,
	WBO_INVALID_PARENTID,
	WBO_INVALID_PREDECESSORID,
	WBO_INVALID_SORTINDEX,
	WBO_PAYLOAD_NOT_STRING,
	WBO_PAYLOAD_TOO_LARGE,
	WBO_INVALID_TTL,
	WBO_ERROR__MAX
};

/* The reason string used in a POST response's "failed" lists. */
const char *wbo_error_text(enum wbo_error e);

/*
 * Read and validate one record. The id is required unless default_id is
 * given (PUT takes the URL id; a different body id is WBO_INVALID_ID).
 * id, parentid and predecessorid may be JSON integers: obj is changed to
 * hold their decimal text instead. sortindex may be a number or a decimal
 * string; a fraction is cut off.
 * The parsed id is set even when a later field fails, so POST can key
 * its failure.
 */
enum wbo_error wbo_parse(struct json_object *obj, const char *default_id,
			 size_t max_payload, struct wbo *out);

/*
 * The records of a POST body: a JSON array. Each record is validated on
 * its own: the valid ones go to items[0..nvalid), a repeated id keeping
 * the last one (as sequential writes would); each invalid one adds its
 * reason under its id, exactly as sent, to failed, {"<id>": ["<reason>",
 * ...]}. Valid records at index max_records or later get "retry wbo",
 * and once the payloads kept add up to more than max_bytes, every later
 * valid record gets "retry bytes". The items point into the body, which
 * must outlive the batch (a numeric id is turned into text inside it);
 * failed belongs to the batch until the caller takes it (and sets the
 * member to NULL).
 */
struct wbo_batch {
	size_t count; /* records in the body */
	struct wbo *items;
	size_t nvalid;
	struct json_object *failed;
};

enum wbo_batch_status {
	WBO_BATCH_OK,
	WBO_BATCH_NOT_LIST, /* not an array: 400 8 */
	WBO_BATCH__MAX
};

/* Parse body into *out; release it with wbo_batch_free() whatever the status. */
enum wbo_batch_status wbo_batch_parse(struct json_object *body,
				      size_t max_records, size_t max_bytes,
				      size_t max_payload, struct wbo_batch *out);
void wbo_batch_free(struct wbo_batch *b);

/* Append s as a JSON string literal (quotes included). */
int wbo_json_escape(struct buf *out, const char *s, size_t len);

/* A stored record as the server returns it; NULL pointers are omitted. */
struct wbo_row {
	const char *id;
	size_t id_len;
	const char *parentid;
	size_t parentid_len;
	const char *predecessorid;
	size_t predecessorid_len;
	bool has_sortindex;
	int64_t sortindex;
	int64_t modified;
	const char *payload;
	size_t payload_len;
};

/* Append the record as one JSON object without a trailing newline. */
int wbo_row_to_json(struct buf *out, const struct wbo_row *row);

#endif
