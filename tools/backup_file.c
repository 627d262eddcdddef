/* backup_file.c - the backup file: gzip'd JSON lines with a SHA-256 trailer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "backup_file.h"
#include "util.h"
#include "wbo.h"

/* Only out of memory makes OpenSSL's SHA-256 fail: fatal, as in util.h. */
static void sha_failed(void)
{
	fputs("weave-admin: SHA-256 failed (out of memory)\n", stderr);
	exit(1);
}

static void hex_digest(EVP_MD_CTX *md, char hex[65])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *copy = EVP_MD_CTX_new();
	if (copy == NULL || EVP_MD_CTX_copy_ex(copy, md) != 1 ||
	    EVP_DigestFinal_ex(copy, d, &n) != 1)
		sha_failed();
	EVP_MD_CTX_free(copy);
	for (unsigned int i = 0; i < n && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	hex[64] = '\0';
}

static EVP_MD_CTX *sha256_new(void)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		sha_failed();
	return md;
}

int backup_writer_open(struct backup_writer *w, int fd)
{
	memset(w, 0, sizeof *w);
	/* Level 6: gzip's default; the payloads are mostly ciphertext anyway. */
	/* Kept to fsync after gzclose() has closed fd: the file is renamed
	 * into place only once it is on disk. */
	w->sync_fd = dup(fd);
	w->gz = w->sync_fd >= 0 ? gzdopen(fd, "wb6") : NULL;
	if (w->gz == NULL) {
		if (w->sync_fd >= 0)
			close(w->sync_fd);
		snprintf(w->why, sizeof w->why, "cannot start compression");
		return -1;
	}
	w->md = sha256_new();
	return 0;
}

static int put(struct backup_writer *w, const char *data, size_t len)
{
	while (len > 0) {
		unsigned part = len > (1u << 30) ? 1u << 30 : (unsigned)len;
		int n = gzwrite(w->gz, data, part);
		if (n <= 0) {
			int err = 0;
			const char *msg = gzerror(w->gz, &err);
			snprintf(w->why, sizeof w->why, "%s",
				 err == Z_ERRNO ? strerror(errno) : msg);
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

int backup_writer_line(struct backup_writer *w, const struct buf *line)
{
	EVP_DigestUpdate(w->md, line->data, line->len);
	return put(w, line->data, line->len);
}

int backup_writer_end(struct backup_writer *w, struct buf *trailer)
{
	char hex[65];
	hex_digest(w->md, hex);
	int rc = bk_cstr(trailer, "sha256", hex) == 0 && bk_close(trailer) == 0 ? 0 : -1;
	if (rc == 0)
		rc = put(w, trailer->data, trailer->len);
	EVP_MD_CTX_free(w->md);
	w->md = NULL;
	int zrc = gzclose(w->gz);
	w->gz = NULL;
	if (rc == 0 && zrc != Z_OK) {
		snprintf(w->why, sizeof w->why, "%s",
			 zrc == Z_ERRNO ? strerror(errno) : "compression failed");
		rc = -1;
	}
	if (rc == 0 && fsync(w->sync_fd) != 0) {
		snprintf(w->why, sizeof w->why, "%s", strerror(errno));
		rc = -1;
	}
	close(w->sync_fd);
	return rc;
}

void backup_writer_abort(struct backup_writer *w)
{
	if (w->gz != NULL) {
		gzclose(w->gz);
		close(w->sync_fd);
	}
	EVP_MD_CTX_free(w->md);
	w->gz = NULL;
	w->md = NULL;
}

/* ---- reading ---------------------------------------------------------------- */

static ssize_t gz_read(void *src, char *out, size_t cap)
{
	struct backup_reader *r = src;
	int n = gzread(r->gz, out, (unsigned)cap);
	int err = Z_OK;
	const char *msg = gzerror(r->gz, &err);
	if (n < 0) {
		snprintf(r->why, sizeof r->why, "%s",
			 err == Z_ERRNO ? strerror(errno) : msg);
		return -1;
	}
	/* zlib's end of file in the middle of a gzip stream. */
	if (n == 0 && err == Z_BUF_ERROR) {
		snprintf(r->why, sizeof r->why, "the file ends inside its compressed data");
		return -1;
	}
	return n;
}

int backup_reader_open(struct backup_reader *r, const char *path)
{
	memset(r, 0, sizeof *r);
	r->gz = gzopen(path, "rb");
	if (r->gz == NULL) {
		snprintf(r->why, sizeof r->why, "%s", errno ? strerror(errno) : "cannot open");
		return -1;
	}
	r->md = sha256_new();
	r->lines = xmalloc(sizeof *r->lines);
	line_reader_init(r->lines, gz_read, r);
	buf_init(&r->line, BACKUP_LINE_MAX);
	return 0;
}

enum line_result backup_reader_next(struct backup_reader *r)
{
	enum line_result res = line_reader_next(r->lines, &r->line);
	if (res == LINE_OK)
		r->line_no++;
	return res;
}

void backup_reader_hash(struct backup_reader *r)
{
	EVP_DigestUpdate(r->md, r->line.data, r->line.len);
	EVP_DigestUpdate(r->md, "\n", 1);
}

void backup_reader_digest(struct backup_reader *r, char hex[65])
{
	hex_digest(r->md, hex);
}

void backup_reader_close(struct backup_reader *r)
{
	if (r->gz != NULL)
		gzclose(r->gz);
	EVP_MD_CTX_free(r->md);
	free(r->lines);
	buf_free(&r->line);
	memset(r, 0, sizeof *r);
}

/* ---- line members --------------------------------------------------------------- */

int bk_open(struct buf *b, const char *type)
{
	buf_reset(b);
	return buf_printf(b, "{\"t\":\"%s\"", type);
}

int bk_int(struct buf *b, const char *key, int64_t v)
{
	return buf_printf(b, ",\"%s\":%" PRId64, key, v);
}

int bk_str(struct buf *b, const char *key, const char *s, size_t len)
{
	int rc = buf_printf(b, ",\"%s\":", key);
	if (rc == 0)
		rc = s != NULL ? wbo_json_escape(b, s, len) : buf_puts(b, "null");
	return rc;
}

int bk_cstr(struct buf *b, const char *key, const char *s)
{
	return bk_str(b, key, s, s != NULL ? strlen(s) : 0);
}

int bk_close(struct buf *b)
{
	return buf_puts(b, "}\n");
}
