/* auth.c - Basic credential parsing, e-mail names, Latin-1 passwords. */
#include "auth.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "password.h"
#include "request.h"
#include "util.h"
#include "validate.h"

/* A new password must be one a login can send. */
_Static_assert(AUTH_PASSWORD_MAX == PASSWORD_NEW_MAX, "password limits differ");

const char *auth_find_header(const struct request *req, const char **source)
{
	static const char *const names[] = {
		"HTTP_AUTHORIZATION", "Authorization", "AUTHORIZATION",
		"REDIRECT_HTTP_AUTHORIZATION",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const char *v = request_env(req, names[i]);
		if (v != NULL && *v != '\0') {
			if (source != NULL)
				*source = names[i];
			return v;
		}
	}
	return NULL;
}

const char *auth_parse_status_text(enum auth_parse_status st)
{
	static const char *const text[AUTH_PARSE__MAX] = {
		[AUTH_PARSE_OK] = "ok",
		[AUTH_PARSE_MISSING] = "no Authorization header",
		[AUTH_PARSE_NOT_BASIC] = "Authorization is not Basic",
		[AUTH_PARSE_MALFORMED] = "malformed Basic credentials",
		[AUTH_PARSE_TOO_LONG] = "Authorization header too long",
	};
	return st < AUTH_PARSE__MAX ? text[st] : "?";
}

size_t auth_password_to_utf8(const char *in, size_t len, char *out)
{
	if (validate_utf8(in, len)) {
		memcpy(out, in, len);
		out[len] = '\0';
		return len;
	}
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c < 0x80) {
			out[o++] = (char)c;
		} else {
			out[o++] = (char)(0xc0 | (c >> 6));
			out[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	out[o] = '\0';
	return o;
}

void auth_email_to_username(const char *email, size_t len, char out[33])
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
	unsigned char lower[AUTH_USER_MAX + 1];
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;

	if (len > AUTH_USER_MAX)
		len = AUTH_USER_MAX;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)email[i];
		lower[i] = (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
	}
	EVP_Digest(lower, len, digest, &dlen, EVP_sha1(), NULL);
	/* 20 bytes = 160 bits = exactly 32 base32 digits, no padding. */
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (unsigned i = 0; i < 20; i++) {
		acc = (acc << 8) | digest[i];
		bits += 8;
		while (bits >= 5) {
			out[o++] = alphabet[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	out[o] = '\0';
}

/*
 * The base64 of a Basic header, strictly checked, into decoded (at least
 * AUTH_HEADER_MAX bytes): AUTH_PARSE_OK with *dlen, or why not. *written:
 * the bytes of decoded written, whatever the outcome (for the wipe).
 */
static enum auth_parse_status decode_basic(const char *header, unsigned char *decoded,
					   size_t *dlen, size_t *written)
{
	if (header == NULL || *header == '\0')
		return AUTH_PARSE_MISSING;
	if (strncasecmp(header, "Basic", 5) != 0 ||
	    (header[5] != ' ' && header[5] != '\t'))
		return AUTH_PARSE_NOT_BASIC;
	const char *b64 = header + 6;
	while (*b64 == ' ' || *b64 == '\t')
		b64++;
	size_t len = strlen(b64);
	while (len > 0 && (b64[len - 1] == ' ' || b64[len - 1] == '\t'))
		len--;
	if (len > AUTH_HEADER_MAX - 8)
		return AUTH_PARSE_TOO_LONG;
	if (len == 0 || len % 4 != 0)
		return AUTH_PARSE_MALFORMED;
	for (size_t i = 0; i < len; i++) {
		char c = b64[i];
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			  (c >= '0' && c <= '9') || c == '+' || c == '/' ||
			  (c == '=' && i >= len - 2);
		if (!ok || (i == len - 2 && c == '=' && b64[len - 1] != '='))
			return AUTH_PARSE_MALFORMED;
	}
	*written = len / 4 * 3; /* all EVP_DecodeBlock writes, padding included */
	int n = EVP_DecodeBlock(decoded, (const unsigned char *)b64, (int)len);
	if (n < 0)
		return AUTH_PARSE_MALFORMED;
	n -= (b64[len - 1] == '=') + (b64[len - 2] == '=');
	*dlen = (size_t)n;
	return AUTH_PARSE_OK;
}

enum auth_parse_status auth_parse_basic(const char *header,
					struct credentials *out)
{
	unsigned char decoded[AUTH_HEADER_MAX];
	size_t dlen = 0, written = 0;

	memset(out, 0, sizeof *out);
	enum auth_parse_status st = decode_basic(header, decoded, &dlen, &written);
	if (st != AUTH_PARSE_OK)
		goto done;
	st = AUTH_PARSE_MALFORMED;
	if (memchr(decoded, '\0', dlen) != NULL)
		goto done;
	unsigned char *colon = memchr(decoded, ':', dlen);
	if (colon == NULL || colon == decoded)
		goto done;
	size_t ulen = (size_t)(colon - decoded);
	size_t plen = dlen - ulen - 1;
	if (ulen > AUTH_USER_MAX || plen > AUTH_PASSWORD_MAX) {
		st = AUTH_PARSE_TOO_LONG;
		goto done;
	}
	/* account_name.h's rule: an e-mail login maps to its hashed name
	 * (auth_email_to_username, which account_name.c uses too); a plain
	 * name is only lowered here, and the login checks it
	 * (validate_username) so that it can say why it failed. */
	if (memchr(decoded, '@', ulen) != NULL) {
		auth_email_to_username((const char *)decoded, ulen, out->username);
		out->username_len = 32;
	} else {
		memcpy(out->username, decoded, ulen);
		out->username[ulen] = '\0';
		ascii_lower(out->username);
		out->username_len = ulen;
	}
	out->password_len =
		auth_password_to_utf8((const char *)colon + 1, plen, out->password);
	st = AUTH_PARSE_OK;
done:
	/* Only what was written: cleansing all 2 KiB, and all of *out below,
	 * was some 2 700 instructions of every login. */
	OPENSSL_cleanse(decoded, written);
	if (st != AUTH_PARSE_OK)
		auth_credentials_wipe(out);
	return st;
}

/* auth_parse_basic() zeroes *c first and then writes each string with
 * its NUL and sets its length: past length + 1 nothing was written. */
static size_t written_part(size_t len, size_t cap)
{
	return len < cap ? len + 1 : cap;
}

void auth_credentials_wipe(struct credentials *c)
{
	OPENSSL_cleanse(c->password, written_part(c->password_len, sizeof c->password));
	OPENSSL_cleanse(c->username, written_part(c->username_len, sizeof c->username));
	c->password_len = 0;
	c->username_len = 0;
}
