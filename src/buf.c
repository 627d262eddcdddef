/* buf.c - growable, NUL-terminated byte buffer with a hard maximum. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "util.h"

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

/* Make room for `extra` more bytes plus the terminating NUL. */
static int buf_reserve(struct buf *b, size_t extra)
{
	if (extra > b->max || b->len > b->max - extra)
		return -1;
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (cap > b->max + 1) /* never hold more than the maximum allows */
		cap = b->max + 1;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
	if (buf_reserve(b, len) < 0)
		return -1;
	if (len > 0)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, char c)
{
	return buf_append(b, &c, 1);
}

/* Printed straight into the room the buffer has: most prints fit, and
 * then one pass of vsnprintf() is enough; only a longer one is measured
 * first. On failure the text is as before. */
int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	if (b->data == NULL && buf_reserve(b, b->max < 63 ? b->max : 63) < 0)
		return -1;
	size_t room = b->cap - b->len;
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(b->data + b->len, room, fmt, copy);
	va_end(copy);
	if (n >= 0 && (size_t)n < room) {
		b->len += (size_t)n;
		return 0;
	}
	b->data[b->len] = '\0';
	if (n < 0 || buf_reserve(b, (size_t)n) < 0)
		return -1;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_put_int(struct buf *b, int64_t v)
{
	char digits[24];
	size_t at = sizeof digits;
	/* Counted in the negative range, which holds INT64_MIN too. */
	int64_t n = v < 0 ? v : -v;
	do {
		digits[--at] = (char)('0' - n % 10);
		n /= 10;
	} while (n != 0);
	if (v < 0)
		digits[--at] = '-';
	return buf_append(b, digits + at, sizeof digits - at);
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void buf_free_secret(struct buf *b)
{
	if (b->data != NULL)
		OPENSSL_cleanse(b->data, b->cap);
	buf_free(b);
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *data = b->data;
	if (data == NULL)
		data = xstrdup("");
	if (len != NULL)
		*len = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return data;
}
