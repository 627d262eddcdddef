/* line_reader.c - lines of a file, each read only up to a hard cap. */
#include <stdio.h>
#include <string.h>

#include "line_reader.h"

void line_reader_init(struct line_reader *r, line_read_fn read, void *src)
{
	memset(r, 0, sizeof *r);
	r->read = read;
	r->src = src;
}

static int refill(struct line_reader *r)
{
	ssize_t n = r->read(r->src, r->block, sizeof r->block);
	if (n < 0)
		return -1;
	r->pos = 0;
	r->end = (size_t)n;
	r->eof = n == 0;
	return 0;
}

enum line_result line_reader_next(struct line_reader *r, struct buf *line)
{
	size_t got = 0;
	buf_reset(line);
	for (;;) {
		if (r->pos == r->end) {
			if (r->eof || refill(r) < 0)
				return r->eof ? (got > 0 ? LINE_OK : LINE_EOF) : LINE_ERROR;
			if (r->eof)
				return got > 0 ? LINE_OK : LINE_EOF;
		}
		const char *start = r->block + r->pos;
		size_t avail = r->end - r->pos;
		const char *nl = memchr(start, '\n', avail);
		size_t take = nl ? (size_t)(nl - start) : avail;
		/* buf_append refuses past the cap: stop there, read no more. */
		if (buf_append(line, start, take) < 0)
			return LINE_TOO_LONG;
		got += take + (nl != NULL);
		r->pos += take + (nl != NULL);
		r->consumed += (int64_t)(take + (nl != NULL));
		if (nl != NULL)
			return LINE_OK;
	}
}

ssize_t line_read_stdio(void *file, char *out, size_t cap)
{
	FILE *f = file;
	size_t n = fread(out, 1, cap, f);
	if (n == 0 && ferror(f))
		return -1;
	return (ssize_t)n;
}
