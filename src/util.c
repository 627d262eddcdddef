/* util.c - allocation wrappers, bounded number parsing, the clock. */
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "log.h"

static void out_of_memory(size_t size)
{
	log_error("out of memory allocating %zu bytes; exiting", size);
	exit(70);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (p == NULL)
		out_of_memory(size);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (p == NULL)
		out_of_memory(count * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);
	if (p == NULL)
		out_of_memory(size);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	const char *p = s;
	bool negative = false;
	uint64_t value = 0;

	if (s == NULL || *s == '\0')
		return -1;
	if (*p == '-') {
		negative = true;
		p++;
	}
	if (*p == '\0')
		return -1;
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (value > (UINT64_MAX - 9) / 10)
			return -1;
		value = value * 10 + (uint64_t)(*p - '0');
		if (value > (uint64_t)INT64_MAX + 1)
			return -1;
	}
	int64_t result;
	if (negative) {
		if (value == (uint64_t)INT64_MAX + 1)
			result = INT64_MIN;
		else
			result = -(int64_t)value;
	} else {
		if (value > (uint64_t)INT64_MAX)
			return -1;
		result = (int64_t)value;
	}
	if (result < min || result > max)
		return -1;
	*out = result;
	return 0;
}

int parse_timestamp(const char *s, int64_t *centiseconds)
{
	int64_t seconds = 0, fraction = 0;
	int int_digits = 0, frac_digits = 0;
	bool round_up = false;
	const char *p = s;

	if (s == NULL)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (++int_digits > 12)
			return -1;
		seconds = seconds * 10 + (*p - '0');
	}
	if (int_digits == 0)
		return -1;
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (frac_digits < 2)
				fraction = fraction * 10 + (*p - '0');
			else if (frac_digits == 2)
				round_up = *p >= '5';
			if (++frac_digits > 32)
				return -1;
		}
		if (frac_digits == 0)
			return -1;
	}
	if (*p != '\0')
		return -1;
	if (frac_digits == 1)
		fraction *= 10;
	*centiseconds = seconds * 100 + fraction + (round_up ? 1 : 0);
	return 0;
}

/* Every answer carries one or more timestamps: written by hand, as
 * snprintf's format machinery cost some 1 300 instructions each. */
void format_timestamp(int64_t centiseconds, char *out, size_t outlen)
{
	char text[24]; /* up to 17 digits of seconds, ".", 2 digits, NUL */
	uint64_t v = centiseconds < 0 ? 0 : (uint64_t)centiseconds;
	size_t at = sizeof text - 1;
	text[at] = '\0';
	text[--at] = (char)('0' + v % 10);
	text[--at] = (char)('0' + v / 10 % 10);
	text[--at] = '.';
	v /= 100;
	do
		text[--at] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	copy_string(out, outlen, text + at);
}

size_t copy_string(char *out, size_t cap, const char *s)
{
	if (cap == 0)
		return 0;
	size_t len = strnlen(s, cap - 1);
	memcpy(out, s, len);
	out[len] = '\0';
	return len;
}

/* A clock's reading in units of 1/per_second s (per_second <= 10^9). */
static int64_t clock_in(clockid_t clock, int64_t per_second)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * per_second + ts.tv_nsec / (1000000000 / per_second);
}

int64_t now_centiseconds(void)
{
	return clock_in(CLOCK_REALTIME, 100);
}

int64_t now_seconds(void)
{
	return now_centiseconds() / 100;
}

int64_t monotonic_micros(void)
{
	return clock_in(CLOCK_MONOTONIC, 1000000);
}

int64_t monotonic_ms(void)
{
	return clock_in(CLOCK_MONOTONIC, 1000);
}

void sleep_micros(int64_t micros)
{
	struct timespec ts = { (time_t)(micros / 1000000), (long)(micros % 1000000) * 1000 };
	while (micros > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void ascii_lower(char *s)
{
	for (; *s != '\0'; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

bool bytes_equal_const_time(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

const char *url_host(const char *url, bool with_port, size_t *len)
{
	const char *host = strstr(url, "://");
	host = host != NULL ? host + 3 : url;
	size_t n = strcspn(host, "/?#");
	if (!with_port) {
		const char *end = host[0] == '[' ? memchr(host, ']', n) : NULL;
		const char *colon = memchr(host, ':', n);
		if (end != NULL)
			n = (size_t)(end - host) + 1;
		else if (host[0] != '[' && colon != NULL)
			n = (size_t)(colon - host);
	}
	*len = n;
	return host;
}
