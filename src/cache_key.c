/* cache_key.c - the account cache's key, in process memory only, and its MACs (cache_key.h). */
#include "cache_key.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "log.h"

/*
 * HMAC-SHA256 set up once with the key: the one-shot HMAC() looks the
 * algorithm up and keys it on every call, which was a quarter of a sync
 * poll's work. Each MAC re-initialises its context with the key it
 * holds (EVP_MAC_init with no key: the keyed inner and outer states are
 * copied back), which costs a third less than a copy made and freed per
 * MAC (callgrind, docs/performance.md).
 */
static EVP_MAC_CTX *keyed_mac;
static bool key_shared;
/* The key of the verifiers stored in the database (cache_key.h): another
 * label, so that nothing made with one key is ever valid under the other. */
static EVP_MAC_CTX *shared_mac;

/*
 * The name's tag: SipHash-2-4 with 128-bit output, under a key of its own
 * (derived like the others, label NAME_KEY_LABEL). It only has to find
 * an account's entry and, without the key, say nothing of the name: a
 * keyed hash-table index, which SipHash was made for, at a fifth of the
 * cost of an HMAC (1 400 instructions against 7 200, callgrind; a poll
 * makes one). What proves a password (the verifier) stays HMAC-SHA256.
 */
static EVP_MAC_CTX *name_mac;

/* The last name's MAC: a poll asks for it twice (its login and its
 * info/collections answer), each time a MAC. Only the name (bounded) and
 * its tag are kept: the same two words the shared file indexes by. */
#define NAME_MEMO_MAX 64
static struct {
	char name[NAME_MEMO_MAX + 1];
	uint64_t mac[2];
} name_memo;

#define CACHE_KEY_LABEL_MAX 32
#define HOST_KEY_LABEL "cache key 1"
#define SHARED_KEY_LABEL "shared verifier key 1"
#define NAME_KEY_LABEL "cache name key 1"
#define NAME_TAG_BYTES 16

static int derive(const char *secret, const char *label, unsigned char key[32])
{
	char digest[] = "SHA256";
	char salt[] = "weave-server account cache", info[CACHE_KEY_LABEL_MAX];
	snprintf(info, sizeof info, "%s", label);
	EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	EVP_KDF_CTX *c = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
	EVP_KDF_free(kdf);
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret,
						  strlen(secret)),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt, strlen(salt)),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, strlen(info)),
		OSSL_PARAM_construct_end(),
	};
	int ok = c != NULL && EVP_KDF_derive(c, key, 32, params) == 1;
	EVP_KDF_CTX_free(c);
	return ok ? 0 : -1;
}

/* *ctx keyed with key under HMAC-SHA256, or SipHash-2-4 with a 128-bit
 * tag and the key's first 16 bytes (NULL if OpenSSL failed). */
static void set_key_of(EVP_MAC_CTX **ctx, bool siphash, const unsigned char key[32])
{
	char digest[] = "SHA256";
	size_t tag = NAME_TAG_BYTES;
	OSSL_PARAM params[] = {
		siphash ? OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &tag)
			: OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC *mac = EVP_MAC_fetch(NULL, siphash ? "SIPHASH" : "HMAC", NULL);
	EVP_MAC_CTX_free(*ctx);
	name_memo.name[0] = '\0'; /* made under another key */
	*ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac); /* the context keeps its own reference */
	if (*ctx != NULL && EVP_MAC_init(*ctx, key, siphash ? 16 : 32, params) != 1) {
		EVP_MAC_CTX_free(*ctx);
		*ctx = NULL;
	}
}

static void set_key(EVP_MAC_CTX **ctx, const unsigned char key[32])
{
	set_key_of(ctx, false, key);
}

/* The database verifiers' key, from the same secret under its own label. */
static void set_shared_key(const char *secret)
{
	unsigned char key[32];
	EVP_MAC_CTX_free(shared_mac);
	shared_mac = NULL;
	if (secret != NULL && secret[0] != '\0' && derive(secret, SHARED_KEY_LABEL, key) == 0)
		set_key(&shared_mac, key);
	OPENSSL_cleanse(key, sizeof key);
}

int cache_key_init(const char *secret)
{
	unsigned char key[32];
	/* Other processes of this user must not read the key (ptrace,
	 * /proc/PID/mem, a core file). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		log_warn("cannot make this process undumpable: %s", strerror(errno));
	key_shared = secret != NULL && secret[0] != '\0';
	int rc = key_shared ? derive(secret, HOST_KEY_LABEL, key)
			    : (RAND_bytes(key, 32) == 1 ? 0 : -1);
	if (!key_shared)
		log_warn("cache_secret is not set in weave.conf: this process keeps "
			 "verified passwords for itself only (weave-admin secret makes one)");
	if (rc == 0)
		set_key(&keyed_mac, key);
	if (rc == 0)
		rc = key_shared ? derive(secret, NAME_KEY_LABEL, key)
				: (RAND_bytes(key, 32) == 1 ? 0 : -1);
	if (rc == 0)
		set_key_of(&name_mac, true, key);
	OPENSSL_cleanse(key, sizeof key);
	set_shared_key(secret);
	if (rc != 0 || keyed_mac == NULL || name_mac == NULL) {
		log_error("account cache off: no key (OpenSSL failed)");
		return -1;
	}
	return 0;
}

bool cache_key_shared(void)
{
	return key_shared && keyed_mac != NULL;
}

static bool field(EVP_MAC_CTX *c, const void *p, size_t len)
{
	unsigned char n[8];
	for (int i = 0; i < 8; i++)
		n[i] = (unsigned char)((uint64_t)len >> (8 * i));
	return EVP_MAC_update(c, n, sizeof n) == 1 &&
	       (len == 0 || EVP_MAC_update(c, p, len) == 1);
}

struct piece {
	const void *p;
	size_t len;
};

static bool mac_sized(EVP_MAC_CTX *c, const char *label, const struct piece *pieces,
		      size_t n, unsigned char *out, size_t size)
{
	size_t outlen = 0;
	bool ok = c != NULL && EVP_MAC_init(c, NULL, 0, NULL) == 1 &&
		  field(c, label, strlen(label));
	for (size_t i = 0; ok && i < n; i++)
		ok = field(c, pieces[i].p, pieces[i].len);
	ok = ok && EVP_MAC_final(c, out, &outlen, size) == 1 && outlen == size;
	/* The digest state left by final is the MAC just made (a verifier
	 * is a secret): overwrite it with the keyed start again. */
	if (c != NULL && EVP_MAC_init(c, NULL, 0, NULL) != 1)
		ok = false;
	return ok;
}

static bool mac_with(EVP_MAC_CTX *c, const char *label, const struct piece *pieces,
		     size_t n, unsigned char out[CACHE_MAC_BYTES])
{
	return mac_sized(c, label, pieces, n, out, CACHE_MAC_BYTES);
}

static bool mac(const char *label, const struct piece *pieces, size_t n,
		unsigned char out[CACHE_MAC_BYTES])
{
	return mac_with(keyed_mac, label, pieces, n, out);
}

bool cache_key_name(const char *username, uint64_t out[2])
{
	unsigned char m[NAME_TAG_BYTES];
	size_t len = strlen(username);
	if (len > 0 && strcmp(username, name_memo.name) == 0) {
		memcpy(out, name_memo.mac, sizeof name_memo.mac);
		return true;
	}
	struct piece p[] = { { username, len } };
	if (!mac_sized(name_mac, "name", p, 1, m, sizeof m))
		return false;
	memcpy(out, m, 2 * sizeof out[0]);
	OPENSSL_cleanse(m, sizeof m);
	if (out[0] == 0)
		out[0] = 1; /* 0 marks an empty entry */
	if (len <= NAME_MEMO_MAX) {
		memcpy(name_memo.name, username, len + 1);
		memcpy(name_memo.mac, out, sizeof name_memo.mac);
	}
	return true;
}

bool cache_key_fingerprint(const char *stored_hash, unsigned char out[CACHE_MAC_BYTES])
{
	struct piece p[] = { { stored_hash, strlen(stored_hash) } };
	return mac("hash", p, 1, out);
}

bool cache_key_verifier(int64_t user_id, const unsigned char fingerprint[CACHE_MAC_BYTES],
			const char *password, size_t len,
			unsigned char out[CACHE_MAC_BYTES])
{
	unsigned char id[8];
	for (int i = 0; i < 8; i++)
		id[i] = (unsigned char)((uint64_t)user_id >> (8 * i));
	struct piece p[] = { { id, 8 }, { fingerprint, CACHE_MAC_BYTES }, { password, len } };
	return mac("verifier", p, 3, out);
}

bool cache_key_shared_verifier_ready(void)
{
	return shared_mac != NULL;
}

bool cache_key_shared_verifier(int64_t user_id, const char *stored_hash, const char *password,
			       size_t len, unsigned char out[CACHE_MAC_BYTES])
{
	unsigned char id[8], fp[CACHE_MAC_BYTES];
	for (int i = 0; i < 8; i++)
		id[i] = (unsigned char)((uint64_t)user_id >> (8 * i));
	struct piece h[] = { { stored_hash, strlen(stored_hash) } };
	struct piece p[] = { { id, 8 }, { fp, CACHE_MAC_BYTES }, { password, len } };
	bool ok = mac_with(shared_mac, "hash", h, 1, fp) &&
		  mac_with(shared_mac, "shared verifier", p, 3, out);
	OPENSSL_cleanse(fp, sizeof fp);
	return ok;
}
