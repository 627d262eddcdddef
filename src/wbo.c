/* wbo.c - Weave Basic Object parsing, validation and serialisation. */
#include "wbo.h"

#include <json-c/json.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "validate.h"

const char *wbo_error_text(enum wbo_error e)
{
	static const char *const text[WBO_ERROR__MAX] = {
		[WBO_OK] = "ok",
		[WBO_NOT_OBJECT] = "invalid wbo",
		[WBO_INVALID_ID] = "invalid id",
		[WBO_INVALID_PARENTID] = "invalid parentid",
		[WBO_INVALID_PREDECESSORID] = "invalid predecessorid",
		[WBO_INVALID_SORTINDEX] = "invalid sortindex",
		[WBO_PAYLOAD_NOT_STRING] = "payload needs to be json-encoded",
		[WBO_PAYLOAD_TOO_LARGE] = "payload too large",
		[WBO_INVALID_TTL] = "invalid ttl",
	};
	return e < WBO_ERROR__MAX ? text[e] : "invalid wbo";
}

/* A member's value, or NULL when absent or JSON null. */
static struct json_object *member(struct json_object *obj, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

/*
 * An id-like field: a string of 1..64 bytes of the id alphabet. A JSON
 * integer is taken as its decimal text ({"id": 12} is record "12"), as
 * both Mozilla servers did; obj then holds that text in place of the
 * number, so *s points into obj like any other string.
 */
static bool read_id_field(struct json_object *obj, const char *key,
			  struct json_object *v, const char **s, size_t *len)
{
	if (json_object_is_type(v, json_type_int)) {
		v = json_object_new_string(json_object_get_string(v));
		json_object_object_add(obj, key, v); /* releases the number */
	}
	if (!json_object_is_type(v, json_type_string))
		return false;
	*s = json_object_get_string(v);
	*len = (size_t)json_object_get_string_len(v);
	return validate_wbo_id(*s, *len);
}

/*
 * A decimal string: "5" is 5, and "5.5" or "-2.9" are cut to 5 and -2,
 * as server-storage's int(float(value)) did. No exponent, no spaces.
 */
static bool read_decimal_text(const char *s, size_t len, int64_t *out)
{
	const char *dot = memchr(s, '.', len);
	char whole[24];
	if (strlen(s) != len)
		return false; /* an embedded NUL */
	if (dot == NULL)
		return parse_int64(s, INT64_MIN, INT64_MAX, out) == 0;
	size_t n = (size_t)(dot - s);
	if (n == 0 || n >= sizeof whole)
		return false;
	for (const char *p = dot + 1; p < s + len; p++)
		if (*p < '0' || *p > '9')
			return false;
	memcpy(whole, s, n);
	whole[n] = '\0';
	return parse_int64(whole, INT64_MIN, INT64_MAX, out) == 0;
}

/* Integers, doubles and decimal strings, cut to an integer (as PY did). */
static bool read_integer(struct json_object *v, int64_t *out)
{
	switch (json_object_get_type(v)) {
	case json_type_int:
		errno = 0;
		*out = json_object_get_int64(v);
		return errno == 0;
	case json_type_double: {
		double d = json_object_get_double(v);
		if (!isfinite(d) || d < -1e15 || d > 1e15)
			return false;
		*out = (int64_t)d;
		return true;
	}
	case json_type_string:
		return read_decimal_text(json_object_get_string(v),
					 (size_t)json_object_get_string_len(v), out);
	default:
		return false;
	}
}

enum wbo_error wbo_parse(struct json_object *obj, const char *default_id,
			 size_t max_payload, struct wbo *out)
{
	struct json_object *v;

	memset(out, 0, sizeof *out);
	if (!json_object_is_type(obj, json_type_object))
		return WBO_NOT_OBJECT;

	v = member(obj, "id");
	if (v != NULL) {
		if (!read_id_field(obj, "id", v, &out->id, &out->id_len)) {
			v = member(obj, "id"); /* a number became text */
			if (json_object_is_type(v, json_type_string)) {
				out->id = json_object_get_string(v);
				out->id_len = (size_t)json_object_get_string_len(v);
			}
			return WBO_INVALID_ID;
		}
		if (default_id != NULL && (strlen(default_id) != out->id_len ||
					   memcmp(default_id, out->id, out->id_len) != 0))
			return WBO_INVALID_ID;
	} else if (default_id != NULL) {
		out->id = default_id;
		out->id_len = strlen(default_id);
	} else {
		return WBO_INVALID_ID;
	}

	v = member(obj, "parentid");
	if (v != NULL) {
		if (!read_id_field(obj, "parentid", v, &out->parentid,
				   &out->parentid_len))
			return WBO_INVALID_PARENTID;
		out->fields |= WBO_FIELD_PARENTID;
	}
	v = member(obj, "predecessorid");
	if (v != NULL) {
		if (!read_id_field(obj, "predecessorid", v, &out->predecessorid,
				   &out->predecessorid_len))
			return WBO_INVALID_PREDECESSORID;
		out->fields |= WBO_FIELD_PREDECESSORID;
	}
	v = member(obj, "sortindex");
	if (v != NULL) {
		if (!read_integer(v, &out->sortindex) ||
		    !validate_sortindex(out->sortindex))
			return WBO_INVALID_SORTINDEX;
		out->fields |= WBO_FIELD_SORTINDEX;
	}
	v = member(obj, "payload");
	if (v != NULL) {
		if (!json_object_is_type(v, json_type_string))
			return WBO_PAYLOAD_NOT_STRING;
		out->payload = json_object_get_string(v);
		out->payload_len = (size_t)json_object_get_string_len(v);
		if (out->payload_len > max_payload ||
		    out->payload_len > PAYLOAD_COLUMN_MAX)
			return WBO_PAYLOAD_TOO_LARGE;
		out->fields |= WBO_FIELD_PAYLOAD;
	}
	v = member(obj, "ttl");
	if (v != NULL) {
		if (!json_object_is_type(v, json_type_int) ||
		    !read_integer(v, &out->ttl) || !validate_ttl(out->ttl))
			return WBO_INVALID_TTL;
		out->fields |= WBO_FIELD_TTL;
	}
	return WBO_OK;
}

/*
 * Add `reason` under `id` to a POST answer's failed object. The key is
 * the id exactly as sent, however long, so that the client can match it
 * to its record; the body bounds its length.
 */
static void add_failure(struct json_object *failed, const char *id, size_t id_len,
			const char *reason)
{
	char *key = xstrndup(id ? id : "", id ? id_len : 0);
	struct json_object *reasons;
	if (!json_object_object_get_ex(failed, key, &reasons)) {
		reasons = json_object_new_array();
		json_object_object_add(failed, key, reasons);
	}
	json_object_array_add(reasons, json_object_new_string(reason));
	free(key);
}

enum wbo_batch_status wbo_batch_parse(struct json_object *body,
				      size_t max_records, size_t max_bytes,
				      size_t max_payload, struct wbo_batch *out)
{
	memset(out, 0, sizeof *out);
	if (!json_object_is_type(body, json_type_array))
		return WBO_BATCH_NOT_LIST;
	size_t n = json_object_array_length(body);
	size_t bytes = 0;
	out->count = n;
	out->items = xcalloc(n ? n : 1, sizeof *out->items);
	out->failed = json_object_new_object();
	for (size_t i = 0; i < n; i++) {
		struct wbo w;
		enum wbo_error e = wbo_parse(json_object_array_get_idx(body, i), NULL,
					     max_payload, &w);
		if (e != WBO_OK) {
			add_failure(out->failed, w.id, w.id_len, wbo_error_text(e));
			continue;
		}
		/* Past a limit a record is not refused but deferred: the client
		 * sends it again in its next POST (server-storage's answer). The
		 * byte budget, once spent, stays spent for the rest of the list,
		 * so what is stored is always a prefix of the valid records. The
		 * first valid record is always within it: a payload that passed
		 * max_payload but not max_bytes (max_post_bytes set below
		 * max_payload_bytes) would otherwise be deferred forever. */
		if (i >= max_records) {
			add_failure(out->failed, w.id, w.id_len, "retry wbo");
			continue;
		}
		bytes += w.payload_len;
		if (bytes > max_bytes && (out->nvalid > 0 || bytes > w.payload_len)) {
			add_failure(out->failed, w.id, w.id_len, "retry bytes");
			continue;
		}
		/* A repeated id: the last one wins, as with sequential writes. */
		size_t k;
		for (k = 0; k < out->nvalid; k++)
			if (out->items[k].id_len == w.id_len &&
			    memcmp(out->items[k].id, w.id, w.id_len) == 0)
				break;
		out->items[k] = w;
		if (k == out->nvalid)
			out->nvalid++;
	}
	return WBO_BATCH_OK;
}

void wbo_batch_free(struct wbo_batch *b)
{
	free(b->items);
	json_object_put(b->failed);
	memset(b, 0, sizeof *b);
}

/* Bytes a JSON string must escape: '"', '\\', control characters and
 * DEL. A table, so that the common case (base64 text) costs one load per
 * byte: a full download is mostly this loop. */
static bool escape_table[256];

static void escape_table_init(void)
{
	for (int c = 0; c < 0x20; c++)
		escape_table[c] = true;
	escape_table['"'] = true;
	escape_table['\\'] = true;
	escape_table[0x7f] = true;
}

/* Appends the escape sequence for one byte that needs it. */
static int put_escape(struct buf *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char u[7];
	switch (c) {
	case '"':
		return buf_append(out, "\\\"", 2);
	case '\\':
		return buf_append(out, "\\\\", 2);
	case '\n':
		return buf_append(out, "\\n", 2);
	case '\r':
		return buf_append(out, "\\r", 2);
	case '\t':
		return buf_append(out, "\\t", 2);
	default:
		u[0] = '\\';
		u[1] = 'u';
		u[2] = '0';
		u[3] = '0';
		u[4] = hex[c >> 4];
		u[5] = hex[c & 15];
		return buf_append(out, u, 6);
	}
}

int wbo_json_escape(struct buf *out, const char *s, size_t len)
{
	if (!escape_table['"'])
		escape_table_init();
	int rc = buf_putc(out, '"');
	size_t i = 0;
	while (i < len && rc == 0) {
		/* The longest run that needs no escaping, copied at once. */
		size_t start = i;
		while (i < len && !escape_table[(unsigned char)s[i]])
			i++;
		rc = buf_append(out, s + start, i - start);
		if (i < len && rc == 0)
			rc = put_escape(out, (unsigned char)s[i++]);
	}
	if (rc == 0)
		rc = buf_putc(out, '"');
	return rc;
}

int wbo_row_to_json(struct buf *out, const struct wbo_row *row)
{
	char stamp[32];
	int rc = buf_puts(out, "{\"id\":");
	if (rc == 0)
		rc = wbo_json_escape(out, row->id, row->id_len);
	if (rc == 0 && row->parentid != NULL) {
		rc = buf_puts(out, ",\"parentid\":");
		if (rc == 0)
			rc = wbo_json_escape(out, row->parentid, row->parentid_len);
	}
	if (rc == 0 && row->predecessorid != NULL) {
		rc = buf_puts(out, ",\"predecessorid\":");
		if (rc == 0)
			rc = wbo_json_escape(out, row->predecessorid,
					     row->predecessorid_len);
	}
	/* Formatted once into a local buffer: buf_printf() formats twice. */
	format_timestamp(row->modified, stamp, sizeof stamp);
	if (rc == 0)
		rc = buf_puts(out, ",\"modified\":");
	if (rc == 0)
		rc = buf_puts(out, stamp);
	if (rc == 0 && row->has_sortindex) {
		char number[32];
		snprintf(number, sizeof number, ",\"sortindex\":%lld",
			 (long long)row->sortindex);
		rc = buf_puts(out, number);
	}
	if (rc == 0 && row->payload != NULL) {
		rc = buf_puts(out, ",\"payload\":");
		if (rc == 0)
			rc = wbo_json_escape(out, row->payload, row->payload_len);
	}
	if (rc == 0)
		rc = buf_putc(out, '}');
	return rc;
}
