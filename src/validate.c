/* validate.c - pure validators for client-supplied fields. */
#include "validate.h"

#include <string.h>

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/*
 * [A-Za-z0-9._-]{1,max}, except "." and "..": as a path segment those are
 * dot segments, which clients and proxies resolve away (RFC 3986 5.2.4),
 * so an account or collection with such a name could never be reached.
 */
static bool all_name_chars(const char *s, size_t len, size_t max)
{
	if (s == NULL || len == 0 || len > max)
		return false;
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_name_char(s[i]))
			return false;
	return true;
}

bool validate_username(const char *s, size_t len)
{
	return all_name_chars(s, len, USERNAME_MAX);
}

bool validate_collection(const char *s, size_t len)
{
	return all_name_chars(s, len, COLLECTION_MAX);
}

bool validate_wbo_id(const char *s, size_t len)
{
	if (s == NULL || len == 0 || len > WBO_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',')
			return false;
	}
	return true;
}

bool validate_sortindex(int64_t v)
{
	return v >= -SORTINDEX_LIMIT && v <= SORTINDEX_LIMIT;
}

bool validate_ttl(int64_t v)
{
	return v >= 0 && v <= TTL_MAX;
}

bool validate_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		/* Bodies are almost all ASCII (base64 ciphertext): skip eight
		 * bytes at a time while none has its high bit set. */
		uint64_t word;
		while (len - i >= sizeof word) {
			memcpy(&word, p + i, sizeof word);
			if ((word & UINT64_C(0x8080808080808080)) != 0)
				break;
			i += sizeof word;
		}
		if (i == len)
			break;
		unsigned char c = p[i];
		size_t n;
		uint32_t cp;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			n = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
		    (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

bool validate_email(const char *s, size_t len)
{
	if (s == NULL || len < 3 || len > EMAIL_MAX)
		return false;
	if (!validate_utf8(s, len))
		return false;
	const char *at = memchr(s, '@', len);
	if (at == NULL || at == s || memchr(at + 1, '@', len - (size_t)(at - s) - 1))
		return false;
	const char *domain = at + 1;
	size_t dlen = len - (size_t)(domain - s);
	if (dlen < 3 || domain[0] == '.' || domain[dlen - 1] == '.' ||
	    memchr(domain, '.', dlen) == NULL)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c == 0x7f || c == '<' || c == '>' || c == '"' ||
		    c == '\\' || c == ',' || c == ';')
			return false;
	}
	return true;
}
