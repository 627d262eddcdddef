/*
 * util.h - allocation wrappers that never return NULL, bounded number
 * parsing, the clock in centiseconds and the monotonic clock.
 *
 * Out of memory is fatal: the x* wrappers log and exit, writes are
 * transactional and mod_fcgid starts a fresh process.
 */
#ifndef WEAVE_UTIL_H
#define WEAVE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/*
 * Parse a whole decimal integer (optional leading '-') in [min, max].
 * Rejects empty strings, leading '+' or spaces, trailing bytes and
 * overflow. Returns 0 and sets *out, or -1.
 */
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);

/*
 * Parse a Weave timestamp ("1265402837.12", "1265402837", "1265402837.1",
 * or more decimals, which are rounded half up to centiseconds) into
 * centiseconds without going through a binary double. Negative values
 * and more than 12 integer digits are refused. Returns 0 or -1.
 */
int parse_timestamp(const char *s, int64_t *centiseconds);

/* Write centiseconds as "<seconds>.<2 digits>" into out (>= 24 bytes). */
void format_timestamp(int64_t centiseconds, char *out, size_t outlen);

/* snprintf(out, cap, "%s", s) without the format machinery: copies what
 * fits, always ends out with a NUL when cap > 0, returns what it copied. */
size_t copy_string(char *out, size_t cap, const char *s);

/* Wall-clock time now, in centiseconds since the epoch. */
int64_t now_centiseconds(void);

/*
 * Wall-clock time now, in whole seconds, from the same clock as
 * now_centiseconds(). Not time(NULL): glibc reads that from the coarse
 * clock, which can still be in the last second when the precise one has
 * turned, so a lock set with one and read with the other lasts a second
 * longer than it should.
 */
int64_t now_seconds(void);

/*
 * Microseconds and milliseconds on the host's monotonic clock, for
 * durations and deadlines (every process of a host reads the same one;
 * the wall clock can step).
 */
int64_t monotonic_micros(void);
int64_t monotonic_ms(void);

/* Sleep `micros` (>= 0) microseconds; a signal does not cut it short. */
void sleep_micros(int64_t micros);

/* Lower-case ASCII letters in place. */
void ascii_lower(char *s);

/* Compare two byte strings in time independent of their contents. */
bool bytes_equal_const_time(const void *a, const void *b, size_t len);

/*
 * The host of an absolute URL, as a pointer into url and its length in
 * *len: "https://sync.example.org:8443/weave/" gives "sync.example.org:8443"
 * with with_port, "sync.example.org" without ("[::1]" stays whole). A
 * text without "://" is read as if it started after one.
 */
const char *url_host(const char *url, bool with_port, size_t *len);

#endif
