/*
 * buf.h - a growable byte buffer with a hard maximum.
 *
 * Every response body and every string built at run time goes through a
 * struct buf. The data is always NUL-terminated (the NUL is not counted in
 * len), so buf.data can be used as a C string when the content has no NUL.
 *
 * Ownership: the buffer owns data until buf_free() or buf_detach(). A
 * zeroed struct after buf_init() holds no allocation.
 *
 * Errors: appends that would make len exceed max leave the buffer
 * unchanged and return -1; the caller decides (usually 413 or 500).
 * Out of memory exits (see util.h).
 */
#ifndef WEAVE_BUF_H
#define WEAVE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max;
};

void buf_init(struct buf *b, size_t max);
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
/* v in decimal, as "%lld" would print it, without printf's cost. */
int buf_put_int(struct buf *b, int64_t v);
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Empty the buffer but keep its allocation. */
void buf_reset(struct buf *b);
/* Wipe the bytes (for secrets), then free. */
void buf_free_secret(struct buf *b);
void buf_free(struct buf *b);
/* Hand the data to the caller (free() it); the buffer is left empty. */
char *buf_detach(struct buf *b, size_t *len);

#endif
