/*
 * validate.h - pure validators for every field that arrives from a
 * client. Each returns true when the value is acceptable; none allocates.
 * Lengths are explicit so embedded NUL bytes are caught.
 */
#ifndef WEAVE_VALIDATE_H
#define WEAVE_VALIDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USERNAME_MAX 32
#define COLLECTION_MAX 32
#define WBO_ID_MAX 64
#define EMAIL_MAX 254
#define SORTINDEX_LIMIT 999999999
#define TTL_MAX 31536000
/* wbo.payload is a MEDIUMBLOB: a longer payload cannot be stored, whatever
 * max_payload_bytes allows (its bound is 16 MiB, one byte more). */
#define PAYLOAD_COLUMN_MAX 16777215

/*
 * [A-Za-z0-9._-]{1,32}, but not "." or ".." (dot segments):
 * docs/protocol.md, Limits.
 */
bool validate_username(const char *s, size_t len);

/* [A-Za-z0-9._-]{1,32}, but not "." or "..". */
bool validate_collection(const char *s, size_t len);

/*
 * 1-64 bytes of printable ASCII without '/' (never in a path segment)
 * and ',' (the ids= separator). Allows ! ( ) * - . _ ~ { } + and the
 * base64url alphabet of Sync 1.1 ids.
 */
bool validate_wbo_id(const char *s, size_t len);

/* -999 999 999 ... 999 999 999. */
bool validate_sortindex(int64_t v);

/* 0 ... 31 536 000 seconds. */
bool validate_ttl(int64_t v);

/*
 * A plausible e-mail address: local@domain, printable ASCII or UTF-8,
 * no blanks or control bytes, a dot in the domain, at most 254 bytes.
 */
bool validate_email(const char *s, size_t len);

/* The bytes are well-formed UTF-8 (no overlongs or surrogates). */
bool validate_utf8(const char *s, size_t len);

#endif
