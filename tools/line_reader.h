/*
 * line_reader.h - lines of a file with a hard cap on their length, for
 * import and restore: a line over the cap is refused after reading at
 * most cap bytes of it, so a hostile file of one 2 GB line costs a
 * bounded amount of memory and time (no getline()).
 *
 * The source is a read function (fread on a FILE, gzread on a gzFile),
 * so the same reader serves plain and compressed files. Lines may hold
 * NUL bytes; their length is explicit. The reader owns its block; the
 * caller owns the struct buf the line is put in.
 */
#ifndef WEAVE_LINE_READER_H
#define WEAVE_LINE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"

/* Up to cap bytes into out: the count, 0 at end of file, -1 on error. */
typedef ssize_t (*line_read_fn)(void *src, char *out, size_t cap);

#define LINE_READER_BLOCK 65536

struct line_reader {
	line_read_fn read;
	void *src;
	char block[LINE_READER_BLOCK];
	size_t pos, end;
	int64_t consumed; /* bytes handed out so far, newlines included */
	int eof;
};

enum line_result {
	LINE_OK,       /* *line holds the line without its '\n' */
	LINE_EOF,      /* no more lines */
	LINE_TOO_LONG, /* over the cap; the reader stops there */
	LINE_ERROR,    /* the read function failed */
};

void line_reader_init(struct line_reader *r, line_read_fn read, void *src);
/* The next line into line (reset first); its max is the cap. A last line
 * without '\n' is a line too. */
enum line_result line_reader_next(struct line_reader *r, struct buf *line);

/* A line_read_fn over a FILE *. */
ssize_t line_read_stdio(void *file, char *out, size_t cap);

#endif
