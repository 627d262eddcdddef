/*
 * backup_file.h - the file of weave-admin backup and restore (format 1,
 * docs/backup.md): gzip-compressed JSON lines. The first line is the
 * header ({"weave_backup":1,...}), the last the trailer ({"t":"end",...
 * "sha256":HEX}) whose SHA-256 covers every uncompressed byte before it,
 * so a truncated or altered file is told from a whole one.
 *
 * The writer hashes and compresses each line it is given; the reader
 * hands out lines of at most BACKUP_LINE_MAX bytes and hashes a line
 * only when the caller says it is not the trailer. Line helpers build
 * members in a fixed order, strings escaped as the server escapes them.
 * Errors: -1 with the reason in the struct's `why`.
 */
#ifndef WEAVE_BACKUP_FILE_H
#define WEAVE_BACKUP_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "buf.h"
#include "line_reader.h"

#define BACKUP_FORMAT 1
/* A record line: an escaped MEDIUMBLOB payload and its columns. */
#define BACKUP_LINE_MAX (8 * (size_t)16777215 + 65536)

struct evp_md_ctx_st;

struct backup_writer {
	gzFile gz;
	int sync_fd;
	struct evp_md_ctx_st *md;
	char why[256];
};

/* Over fd, which the writer then owns (closed by backup_writer_end). */
int backup_writer_open(struct backup_writer *w, int fd);
int backup_writer_line(struct backup_writer *w, const struct buf *line);
/* trailer holds '{"t":"end",' and its counts without the closing brace:
 * this adds the checksum, writes it and closes the file. */
int backup_writer_end(struct backup_writer *w, struct buf *trailer);
/* Close without a trailer (on failure). */
void backup_writer_abort(struct backup_writer *w);

struct backup_reader {
	gzFile gz;
	struct evp_md_ctx_st *md;
	struct line_reader *lines;
	struct buf line; /* the current line, without '\n' */
	size_t line_no;
	char why[256];
};

int backup_reader_open(struct backup_reader *r, const char *path);
/* LINE_OK with r->line filled, LINE_EOF, LINE_TOO_LONG or LINE_ERROR
 * (why says what gzip found). */
enum line_result backup_reader_next(struct backup_reader *r);
/* Count the current line into the checksum (every line but the trailer). */
void backup_reader_hash(struct backup_reader *r);
/* The checksum so far as 64 hex digits. */
void backup_reader_digest(struct backup_reader *r, char hex[65]);
void backup_reader_close(struct backup_reader *r);

/* ---- members of a line: ',"key":value' (bk_open writes '{"t":"TYPE"') ---- */

int bk_open(struct buf *b, const char *type);
int bk_int(struct buf *b, const char *key, int64_t v);
/* s NULL: null. */
int bk_str(struct buf *b, const char *key, const char *s, size_t len);
int bk_cstr(struct buf *b, const char *key, const char *s);
int bk_close(struct buf *b);

#endif
