/* auth.c - Basic credential parsing, e-mail names, the credential cache. */
#include "auth.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "change_board.h"
#include "password.h"
#include "request.h"
#include "shared_table.h"
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

enum auth_parse_status auth_parse_basic(const char *header,
					struct credentials *out)
{
	unsigned char decoded[AUTH_HEADER_MAX];
	enum auth_parse_status st = AUTH_PARSE_MALFORMED;

	memset(out, 0, sizeof *out);
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
	int n = EVP_DecodeBlock(decoded, (const unsigned char *)b64, (int)len);
	if (n < 0)
		return AUTH_PARSE_MALFORMED;
	if (b64[len - 1] == '=')
		n--;
	if (b64[len - 2] == '=')
		n--;
	size_t dlen = (size_t)n;

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
	OPENSSL_cleanse(decoded, sizeof decoded);
	if (st != AUTH_PARSE_OK)
		auth_credentials_wipe(out);
	return st;
}

void auth_credentials_wipe(struct credentials *c)
{
	OPENSSL_cleanse(c, sizeof *c);
}

/* ---- credential cache ------------------------------------------------ */

/*
 * The table lives in the change board (change_board.h), keyed by the
 * board's secret, so every process of the host shares it; without a board
 * it is private to this process, under a random key.
 */
#define VERIFIED 1           /* state word of a verified entry */
#define PENDING_SECONDS 3    /* a claim to verify lasts at most this */
#define WAIT_STEP_NS 2000000 /* how often a waiter looks again */

static long cache_ttl;
static unsigned char private_secret[32]; /* when there is no board */
static bool private_secret_set;
static struct shared_table table;
static uint64_t table_epoch = UINT64_MAX;
static bool table_shared;
/*
 * HMAC-SHA256 set up once per key: the one-shot HMAC() looks the
 * algorithm up and keys it on every call, which was a quarter of a sync
 * poll's work in this process. Each key is computed on a copy.
 */
static EVP_MAC_CTX *keyed_mac;

static void forget_key(void)
{
	EVP_MAC_CTX_free(keyed_mac);
	keyed_mac = NULL;
}

static void set_key(const unsigned char secret[32])
{
	forget_key();
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	keyed_mac = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac); /* the context keeps its own reference */
	if (keyed_mac != NULL && EVP_MAC_init(keyed_mac, secret, 32, params) != 1)
		forget_key();
}

/* The table and key for the board as it is now; false: no cache. */
static bool attach(void)
{
	if (cache_ttl <= 0)
		return false;
	if (table_epoch == change_board_epoch() && keyed_mac != NULL)
		return true;
	unsigned char secret[32];
	table_shared = change_board_table(BOARD_CREDENTIALS, &table);
	if (table_shared) {
		if (!change_board_secret(secret))
			return false;
	} else {
		if (!private_secret_set && RAND_bytes(private_secret, 32) == 1)
			private_secret_set = true;
		if (!private_secret_set)
			return false;
		memcpy(secret, private_secret, 32);
	}
	set_key(secret);
	OPENSSL_cleanse(secret, sizeof secret);
	table_epoch = change_board_epoch();
	return keyed_mac != NULL;
}

void auth_cache_init(long ttl_seconds)
{
	cache_ttl = ttl_seconds;
	table_epoch = UINT64_MAX;
	forget_key();
	/* A private cache starts empty: what a new key cannot find is gone. */
	private_secret_set = false;
}

/* Each field with its length first, so fields cannot run into each other. */
static bool mac_field(EVP_MAC_CTX *c, const char *s, size_t len)
{
	uint64_t n = len;
	return EVP_MAC_update(c, (const unsigned char *)&n, sizeof n) == 1 &&
	       EVP_MAC_update(c, (const unsigned char *)s, len) == 1;
}

/* HMAC over (name, stored hash, password) into out[0..3]; false if
 * OpenSSL failed, and then nothing is cached or found. */
static bool cache_key(const char *username, const char *stored_hash,
		      const char *password, size_t len, uint64_t out[4])
{
	size_t outlen = 0;
	EVP_MAC_CTX *c = EVP_MAC_CTX_dup(keyed_mac);
	bool ok = c != NULL && mac_field(c, username, strlen(username)) &&
		  mac_field(c, stored_hash, strlen(stored_hash)) &&
		  mac_field(c, password, len) &&
		  EVP_MAC_final(c, (unsigned char *)out, &outlen, 32) == 1 && outlen == 32;
	EVP_MAC_CTX_free(c); /* cleanses its state */
	return ok;
}

static uint64_t tag_of(const uint64_t key[4])
{
	return key[0] != 0 ? key[0] : 1;
}

/* The state word of key's entry (VERIFIED, a pending claim) or 0. */
static uint64_t entry_state(const uint64_t key[4], int64_t now)
{
	uint64_t e[BOARD_CREDENTIAL_WORDS];
	if (!shared_table_get(&table, tag_of(key), now, e))
		return 0;
	uint64_t state = bytes_equal_const_time(e, key, 32) ? e[4] : 0;
	OPENSSL_cleanse(e, sizeof e);
	return state;
}

static void put_entry(const uint64_t key[4], uint64_t state, int64_t expires,
		      int64_t now)
{
	uint64_t e[BOARD_CREDENTIAL_WORDS] = { key[0], key[1], key[2], key[3], state };
	shared_table_put(&table, tag_of(key), expires, now, e);
	OPENSSL_cleanse(e, sizeof e);
}

bool auth_cache_lookup(const char *username, const char *stored_hash,
		       const char *password, size_t len)
{
	uint64_t key[4];
	if (!attach() || !cache_key(username, stored_hash, password, len, key))
		return false;
	bool hit = entry_state(key, (int64_t)time(NULL)) == VERIFIED;
	OPENSSL_cleanse(key, sizeof key);
	if (hit)
		change_board_count(BOARD_CREDENTIAL_HITS);
	return hit;
}

bool auth_cache_wait_or_claim(const char *username, const char *stored_hash,
			      const char *password, size_t len)
{
	uint64_t key[4];
	if (!attach() || !cache_key(username, stored_hash, password, len, key))
		return false;
	uint64_t mine = 2 + 2 * (uint64_t)getpid(); /* even: never VERIFIED */
	uint64_t claim[BOARD_CREDENTIAL_WORDS] = { key[0], key[1], key[2], key[3], mine };
	bool verified = false;
	for (int step = 0; step < PENDING_SECONDS * 1000000000L / WAIT_STEP_NS; step++) {
		int64_t now = (int64_t)time(NULL);
		uint64_t state = entry_state(key, now);
		if (state == VERIFIED) {
			verified = true;
			break;
		}
		if (state == mine)
			break;
		/* A verifier that died (its process is gone) is not waited for. */
		if (state != 0 && kill((pid_t)((state - 2) / 2), 0) != 0 && errno == ESRCH) {
			put_entry(key, mine, now + PENDING_SECONDS, now);
			break;
		}
		/* Nobody verifies these: we will, if no rival claims them first. */
		if (state == 0 && shared_table_add(&table, tag_of(key), now + PENDING_SECONDS,
						   now, claim) == SHARED_ADDED)
			break;
		struct timespec pause = { 0, WAIT_STEP_NS };
		nanosleep(&pause, NULL);
	}
	OPENSSL_cleanse(claim, sizeof claim);
	OPENSSL_cleanse(key, sizeof key);
	if (verified)
		change_board_count(BOARD_CREDENTIAL_WAITS);
	return verified;
}

void auth_cache_store(const char *username, const char *stored_hash,
		      const char *password, size_t len)
{
	uint64_t key[4];
	if (!attach() || !cache_key(username, stored_hash, password, len, key))
		return;
	int64_t now = (int64_t)time(NULL);
	put_entry(key, VERIFIED, now + cache_ttl, now);
	OPENSSL_cleanse(key, sizeof key);
}

void auth_cache_abandon(const char *username, const char *stored_hash,
			const char *password, size_t len)
{
	uint64_t key[4];
	if (!attach() || !cache_key(username, stored_hash, password, len, key))
		return;
	shared_table_remove(&table, tag_of(key));
	OPENSSL_cleanse(key, sizeof key);
}

void auth_cache_clear(void)
{
	if (attach() && !table_shared)
		memset(table.region, 0,
		       shared_table_bytes(table.sets, table.ways, table.words));
}
