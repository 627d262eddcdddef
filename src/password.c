/* password.c - scrypt hashes, legacy hash verification, strength rule. */
#include "password.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <crypt.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "util.h"

#define SALT_LEN 16
#define KEY_LEN 32
#define SCRYPT_R 8
/*
 * Memory per verification is capped at 128 * r * 2^14 bytes (16 MiB):
 * a cost above 14 raises p instead of N, so that a server whose every
 * process verifies at once (a cold start) stays within its RAM. OWASP
 * counts N = 2^14, r = 8, p = 5 among its minimum scrypt settings; the
 * default cost 17 is N = 2^14, p = 8.
 */
#define SCRYPT_LOG2_N_MAX 14
#define SCRYPT_P_MAX 64
#define SCRYPT_COST_MAX (UINT64_C(1) << 30) /* 128 * r * N * p */
/* What a stored hash may ask for (scrypt_parse): twice our own memory. */
#define SCRYPT_MEMORY_MAX (UINT64_C(32) << 20) /* 128 * r * N */
#define BCRYPT_COST_MAX 14

static int scrypt_derive(const char *password, size_t len, const unsigned char *salt,
			 size_t salt_len, int log2_n, int r, int p,
			 unsigned char *key, size_t key_len)
{
	uint64_t n = UINT64_C(1) << log2_n;
	uint64_t maxmem = 2 * 128 * (uint64_t)r * n * (uint64_t)p + (1u << 20);
	if (EVP_PBE_scrypt(password, len, salt, salt_len, n, (uint64_t)r,
			   (uint64_t)p, maxmem, key, key_len) != 1)
		return -1;
	return 0;
}

int password_hash(const char *password, size_t len, int cost, char *out,
		  size_t outlen)
{
	int log2_n = cost < SCRYPT_LOG2_N_MAX ? cost : SCRYPT_LOG2_N_MAX;
	int p = 1 << (cost - log2_n);
	unsigned char salt[SALT_LEN], key[KEY_LEN];
	unsigned char salt64[32], key64[64];
	int rc = -1;

	if (RAND_bytes(salt, sizeof salt) != 1)
		goto done;
	if (scrypt_derive(password, len, salt, sizeof salt, log2_n, SCRYPT_R, p, key,
			  sizeof key) < 0)
		goto done;
	EVP_EncodeBlock(salt64, salt, sizeof salt);
	EVP_EncodeBlock(key64, key, sizeof key);
	if ((size_t)snprintf(out, outlen, "$scrypt$ln=%d,r=%d,p=%d$%s$%s", log2_n,
			     SCRYPT_R, p, salt64, key64) >= outlen)
		goto done;
	rc = 0;
done:
	OPENSSL_cleanse(key, sizeof key);
	return rc;
}

/* Strict base64 decode; returns decoded length or -1. */
static int base64_decode(const char *in, unsigned char *out, size_t outcap)
{
	size_t len = strlen(in);
	if (len == 0 || len % 4 != 0 || len / 4 * 3 > outcap)
		return -1;
	int n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len);
	if (n < 0)
		return -1;
	if (in[len - 1] == '=')
		n--;
	if (in[len - 2] == '=')
		n--;
	return n;
}

/* Read "<name>=<int>" followed by `stop`; advances *p past `stop`. */
static int read_param(const char **p, const char *name, char stop, int max,
		      int *out)
{
	size_t nlen = strlen(name);
	char digits[8];
	if (strncmp(*p, name, nlen) != 0 || (*p)[nlen] != '=')
		return -1;
	const char *v = *p + nlen + 1;
	const char *end = strchr(v, stop);
	if (end == NULL || end == v || (size_t)(end - v) >= sizeof digits)
		return -1;
	memcpy(digits, v, (size_t)(end - v));
	digits[end - v] = '\0';
	int64_t value;
	if (parse_int64(digits, 1, max, &value) < 0)
		return -1;
	*out = (int)value;
	*p = end + 1;
	return 0;
}

/* A stored scrypt hash, split and checked against the caps. */
struct scrypt_hash {
	int log2_n, r, p;
	unsigned char salt[64], key[96];
	int salt_len, key_len;
};

/* Parse "$scrypt$ln=..,r=..,p=..$salt$key": NULL, or why it is refused. */
static const char *scrypt_parse(const char *stored, struct scrypt_hash *h)
{
	char salt64[64], key64[128];
	const char *rest = stored + strlen("$scrypt$");

	if (read_param(&rest, "ln", ',', 22, &h->log2_n) < 0 ||
	    read_param(&rest, "r", ',', 32, &h->r) < 0 ||
	    read_param(&rest, "p", '$', SCRYPT_P_MAX, &h->p) < 0)
		return "its scrypt parameters are not ln=1-22,r=1-32,p=1-64";
	/* A hash from elsewhere must not make one login cost more than our
	 * dearest setting: memory 128 * r * N within SCRYPT_MEMORY_MAX (a
	 * few processes verifying at once stay within a small server's RAM),
	 * p within SCRYPT_P_MAX, and the work 128 * r * N * p within
	 * SCRYPT_COST_MAX (password_cost 20). */
	if ((UINT64_C(128) << h->log2_n) * (uint64_t)h->r > SCRYPT_MEMORY_MAX)
		return "its scrypt memory (128 * r * 2^ln) is over 32 MiB";
	if ((UINT64_C(128) << h->log2_n) * (uint64_t)h->r * (uint64_t)h->p > SCRYPT_COST_MAX)
		return "its scrypt work (128 * r * 2^ln * p) is over 1 GiB";
	const char *dollar = strchr(rest, '$');
	size_t key64_len = dollar ? strlen(dollar + 1) : 0;
	if (dollar == NULL || (size_t)(dollar - rest) >= sizeof salt64 ||
	    key64_len >= sizeof key64)
		return "its scrypt salt or key is malformed";
	memcpy(salt64, rest, (size_t)(dollar - rest));
	salt64[dollar - rest] = '\0';
	memcpy(key64, dollar + 1, key64_len + 1);
	h->salt_len = base64_decode(salt64, h->salt, sizeof h->salt);
	h->key_len = base64_decode(key64, h->key, sizeof h->key);
	if (h->salt_len <= 0 || h->key_len < 16)
		return "its scrypt salt or key is malformed";
	return NULL;
}

static enum password_verdict verify_scrypt(const char *password, size_t len,
					   const char *stored, int want_cost)
{
	struct scrypt_hash h;
	unsigned char derived[96];

	if (scrypt_parse(stored, &h) != NULL)
		return PASSWORD_BAD_HASH;
	if (scrypt_derive(password, len, h.salt, (size_t)h.salt_len, h.log2_n, h.r, h.p,
			  derived, (size_t)h.key_len) < 0)
		return PASSWORD_BAD_HASH;
	bool same = bytes_equal_const_time(derived, h.key, (size_t)h.key_len);
	OPENSSL_cleanse(derived, sizeof derived);
	if (!same)
		return PASSWORD_MISMATCH;
	/* Its cost as password_cost counts: log2 of the work N * p, less if
	 * its blocks are smaller than ours. */
	int cost = h.log2_n;
	for (int q = h.p; q > 1; q /= 2)
		cost++;
	for (int q = h.r; q < SCRYPT_R; q *= 2)
		cost--;
	return cost < want_cost ? PASSWORD_OK_REHASH : PASSWORD_OK;
}

/* bcrypt as PHP's crypt() and FSyncMS write it: $2a$/$2b$/$2y$, a
 * two-digit cost, 22 salt and 31 hash characters of bcrypt's base64.
 * NULL, or why it is refused. */
static const char *bcrypt_check(const char *stored)
{
	static const char alphabet[] =
		"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	if (strlen(stored) != 60 || stored[6] != '$' || !isdigit((unsigned char)stored[4]) ||
	    !isdigit((unsigned char)stored[5]) || strspn(stored + 7, alphabet) != 53)
		return "it is not a bcrypt hash of 60 characters";
	int cost = (stored[4] - '0') * 10 + (stored[5] - '0');
	/* Each step doubles the time: 12 (FSyncMS's default) took 0.25-0.5 s
	 * on this project's 2-core machines and 14 one to two seconds, the
	 * most a login may cost; 31 would take days. A bcrypt hash is
	 * replaced by scrypt at the first good login anyway. */
	if (cost < 4 || cost > BCRYPT_COST_MAX)
		return "its bcrypt cost is not 4-14";
	return NULL;
}

static bool is_bcrypt(const char *stored)
{
	return strncmp(stored, "$2a$", 4) == 0 || strncmp(stored, "$2b$", 4) == 0 ||
	       strncmp(stored, "$2y$", 4) == 0;
}

/* bcrypt through libxcrypt; always reported as needing a re-hash. */
static enum password_verdict verify_bcrypt(const char *password, size_t len,
					   const char *stored)
{
	if (bcrypt_check(stored) != NULL)
		return PASSWORD_BAD_HASH;
	if (memchr(password, '\0', len) != NULL) /* crypt_r takes a C string */
		return PASSWORD_MISMATCH;
	char *pw = xstrndup(password, len);
	struct crypt_data *data = xcalloc(1, sizeof *data);
	const char *out = crypt_r(pw, stored, data);
	enum password_verdict v = PASSWORD_BAD_HASH;
	if (out != NULL && out[0] != '*' && strlen(out) == 60)
		v = bytes_equal_const_time(out, stored, 60) ? PASSWORD_OK_REHASH
							    : PASSWORD_MISMATCH;
	OPENSSL_cleanse(data, sizeof *data);
	OPENSSL_cleanse(pw, len);
	free(data);
	free(pw);
	return v;
}

/* weave-minimal (Python) kept no hash: a user's SQLite file is named
 * NAME.HEX, HEX the first 16 hex digits of SHA-1(its fixed salt ||
 * password). Migrate stores that as "$weave-minimal$HEX". The salt is
 * the text of a Python raw string, backslashes included. */
#define WEAVE_MINIMAL_PREFIX "$weave-minimal$"
static const char weave_minimal_salt[] =
	"\\x14Q\\xd4JbDk\\x1bN\\x84J\\xd0\\x05\\x8a\\x1b\\x8b\\xa6&V"
	"\\x1b\\xc5\\x91\\x97\\xc4";

static bool is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

static enum password_verdict verify_weave_minimal(const char *password, size_t len,
						  const char *hex)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	char mine[17], theirs[17];
	if (!is_hex(hex, 16))
		return PASSWORD_BAD_HASH;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return PASSWORD_BAD_HASH;
	int ok = EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1 &&
		 EVP_DigestUpdate(ctx, weave_minimal_salt, sizeof weave_minimal_salt - 1) == 1 &&
		 EVP_DigestUpdate(ctx, password, len) == 1 &&
		 EVP_DigestFinal_ex(ctx, digest, &dlen) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return PASSWORD_BAD_HASH;
	for (unsigned i = 0; i < 8; i++)
		snprintf(mine + 2 * i, 3, "%02x", digest[i]);
	memcpy(theirs, hex, 17);
	ascii_lower(theirs);
	bool same = bytes_equal_const_time(mine, theirs, 16);
	/* The digest opens the account as well as the password does. */
	OPENSSL_cleanse(digest, sizeof digest);
	OPENSSL_cleanse(mine, sizeof mine);
	return same ? PASSWORD_OK_REHASH : PASSWORD_MISMATCH;
}

static bool is_hex_md5(const char *s)
{
	return is_hex(s, 32);
}

static enum password_verdict verify_md5(const char *password, size_t len,
					const char *stored)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	char hex[33];

	if (EVP_Digest(password, len, digest, &dlen, EVP_md5(), NULL) != 1)
		return PASSWORD_BAD_HASH;
	for (unsigned i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	char lower[33];
	memcpy(lower, stored, 33);
	ascii_lower(lower);
	bool same = bytes_equal_const_time(hex, lower, 32);
	OPENSSL_cleanse(digest, sizeof digest);
	OPENSSL_cleanse(hex, sizeof hex);
	return same ? PASSWORD_OK_REHASH : PASSWORD_MISMATCH;
}

/* {SSHA} / {SSHA-256}: base64(digest(password || salt) || salt).
 * NULL, or why verify_ssha() could not use it. */
static const char *ssha_check(const char *b64, const EVP_MD *md)
{
	unsigned char raw[512];
	int n = base64_decode(b64, raw, sizeof raw);
	OPENSSL_cleanse(raw, sizeof raw);
	if (n <= EVP_MD_get_size(md))
		return "it is not base64 of a digest and a salt";
	return NULL;
}

/* {SSHA} / {SSHA-256}: base64(digest(password || salt) || salt). */
static enum password_verdict verify_ssha(const char *password, size_t len,
					 const char *b64, const EVP_MD *md)
{
	unsigned char raw[512], digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	size_t mdlen = (size_t)EVP_MD_get_size(md);
	int n = base64_decode(b64, raw, sizeof raw);
	if (n <= (int)mdlen)
		return PASSWORD_BAD_HASH;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return PASSWORD_BAD_HASH;
	int ok = EVP_DigestInit_ex(ctx, md, NULL) == 1 &&
		 EVP_DigestUpdate(ctx, password, len) == 1 &&
		 EVP_DigestUpdate(ctx, raw + mdlen, (size_t)n - mdlen) == 1 &&
		 EVP_DigestFinal_ex(ctx, digest, &dlen) == 1;
	EVP_MD_CTX_free(ctx);
	bool same = ok && bytes_equal_const_time(digest, raw, mdlen);
	OPENSSL_cleanse(digest, sizeof digest);
	if (!ok)
		return PASSWORD_BAD_HASH;
	return same ? PASSWORD_OK_REHASH : PASSWORD_MISMATCH;
}

enum password_verdict password_verify(const char *password, size_t len,
				      const char *stored, int want_cost)
{
	if (stored == NULL)
		return PASSWORD_BAD_HASH;
	if (strncmp(stored, "$scrypt$", 8) == 0)
		return verify_scrypt(password, len, stored, want_cost);
	if (strncmp(stored, "{SSHA-256}", 10) == 0)
		return verify_ssha(password, len, stored + 10, EVP_sha256());
	if (strncmp(stored, "{SSHA}", 6) == 0)
		return verify_ssha(password, len, stored + 6, EVP_sha1());
	if (is_bcrypt(stored))
		return verify_bcrypt(password, len, stored);
	if (strncmp(stored, WEAVE_MINIMAL_PREFIX, strlen(WEAVE_MINIMAL_PREFIX)) == 0)
		return verify_weave_minimal(password, len, stored + strlen(WEAVE_MINIMAL_PREFIX));
	if (is_hex_md5(stored))
		return verify_md5(password, len, stored);
	return PASSWORD_BAD_HASH;
}

const char *password_hash_problem(const char *stored)
{
	struct scrypt_hash h;
	if (stored == NULL || stored[0] == '\0')
		return "there is no password hash";
	if (strlen(stored) >= PASSWORD_HASH_MAX)
		return "the password hash is longer than 255 bytes";
	if (strncmp(stored, "$scrypt$", 8) == 0)
		return scrypt_parse(stored, &h);
	if (is_bcrypt(stored))
		return bcrypt_check(stored);
	if (strncmp(stored, WEAVE_MINIMAL_PREFIX, strlen(WEAVE_MINIMAL_PREFIX)) == 0)
		return is_hex(stored + strlen(WEAVE_MINIMAL_PREFIX), 16)
			       ? NULL
			       : "it is not $weave-minimal$ and 16 hex digits";
	if (strncmp(stored, "{SSHA-256}", 10) == 0)
		return ssha_check(stored + 10, EVP_sha256());
	if (strncmp(stored, "{SSHA}", 6) == 0)
		return ssha_check(stored + 6, EVP_sha1());
	if (is_hex_md5(stored))
		return NULL;
	return "it is not MD5, {SSHA}, {SSHA-256}, bcrypt or scrypt";
}

static void trim(const char **s, size_t *len)
{
	while (*len > 0 && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' ||
			    (*s)[*len - 1] == '\n' || (*s)[*len - 1] == '\r'))
		(*len)--;
}

int password_is_strong(const char *password, size_t len, const char *username)
{
	if (len < 8)
		return 0;
	if (username == NULL)
		return 1;
	const char *p = password, *u = username;
	size_t plen = len, ulen = strlen(username);
	trim(&p, &plen);
	trim(&u, &ulen);
	if (plen != ulen)
		return 1;
	for (size_t i = 0; i < plen; i++) {
		char a = p[i], b = u[i];
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return 1;
	}
	return 0;
}

enum new_password_verdict password_check_new(const char *password, size_t len,
					     const char *username)
{
	if (len == 0)
		return NEW_PASSWORD_EMPTY;
	if (len > PASSWORD_NEW_MAX)
		return NEW_PASSWORD_TOO_LONG;
	if (memchr(password, '\0', len) != NULL)
		return NEW_PASSWORD_NUL;
	if (!password_is_strong(password, len, username))
		return NEW_PASSWORD_WEAK;
	return NEW_PASSWORD_OK;
}

const char *password_check_text(enum new_password_verdict v)
{
	switch (v) {
	case NEW_PASSWORD_OK:
		return "the password is fine";
	case NEW_PASSWORD_EMPTY:
		return "the password is empty";
	case NEW_PASSWORD_WEAK:
		return "that password is too weak: use at least 8 characters, "
		       "and not the user name";
	case NEW_PASSWORD_TOO_LONG:
		return "that password is too long: at most 1024 bytes";
	case NEW_PASSWORD_NUL:
		return "the password contains a NUL byte";
	}
	return "the password is not acceptable";
}
