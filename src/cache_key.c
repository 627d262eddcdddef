/* cache_key.c - the account cache's key, in process memory only, and its MACs (cache_key.h). */
#include "cache_key.h"

#include <errno.h>
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
 * poll's work. Each MAC re-initialises the one context with the key it
 * holds (EVP_MAC_init with no key: the keyed inner and outer states are
 * copied back), which costs a third less than a copy made and freed per
 * MAC (callgrind, docs/performance.md).
 */
static EVP_MAC_CTX *keyed_mac;
static bool key_shared;

/* The last name's MAC: a poll asks for it twice (its login and its
 * info/collections answer), each time a MAC. Only the name (bounded) and
 * its tag are kept: the same two words the shared file indexes by. */
#define NAME_MEMO_MAX 64
static struct {
	char name[NAME_MEMO_MAX + 1];
	uint64_t mac[2];
} name_memo;

static int derive(const char *secret, unsigned char key[32])
{
	char digest[] = "SHA256";
	char salt[] = "weave-server account cache", info[] = "cache key 1";
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

static void set_key(const unsigned char key[32])
{
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX_free(keyed_mac);
	name_memo.name[0] = '\0'; /* made under another key */
	keyed_mac = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
	EVP_MAC_free(mac); /* the context keeps its own reference */
	if (keyed_mac != NULL && EVP_MAC_init(keyed_mac, key, 32, params) != 1) {
		EVP_MAC_CTX_free(keyed_mac);
		keyed_mac = NULL;
	}
}

int cache_key_init(const char *secret)
{
	unsigned char key[32];
	/* Other processes of this user must not read the key (ptrace,
	 * /proc/PID/mem, a core file). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		log_warn("cannot make this process undumpable: %s", strerror(errno));
	key_shared = secret != NULL && secret[0] != '\0';
	int rc = key_shared ? derive(secret, key) : (RAND_bytes(key, 32) == 1 ? 0 : -1);
	if (!key_shared)
		log_warn("cache_secret is not set in weave.conf: this process keeps "
			 "verified passwords for itself only (weave-admin secret makes one)");
	if (rc == 0)
		set_key(key);
	OPENSSL_cleanse(key, sizeof key);
	if (rc != 0 || keyed_mac == NULL) {
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

static bool mac(const char *label, const struct piece *pieces, size_t n,
		unsigned char out[CACHE_MAC_BYTES])
{
	size_t outlen = 0;
	EVP_MAC_CTX *c = keyed_mac;
	bool ok = c != NULL && EVP_MAC_init(c, NULL, 0, NULL) == 1 &&
		  field(c, label, strlen(label));
	for (size_t i = 0; ok && i < n; i++)
		ok = field(c, pieces[i].p, pieces[i].len);
	ok = ok && EVP_MAC_final(c, out, &outlen, CACHE_MAC_BYTES) == 1 &&
	     outlen == CACHE_MAC_BYTES;
	/* The digest state left by final is the MAC just made (a verifier
	 * is a secret): overwrite it with the keyed start again. */
	if (c != NULL && EVP_MAC_init(c, NULL, 0, NULL) != 1)
		ok = false;
	return ok;
}

bool cache_key_name(const char *username, uint64_t out[2])
{
	unsigned char m[CACHE_MAC_BYTES];
	size_t len = strlen(username);
	if (len > 0 && strcmp(username, name_memo.name) == 0) {
		memcpy(out, name_memo.mac, sizeof name_memo.mac);
		return true;
	}
	struct piece p[] = { { username, len } };
	if (!mac("name", p, 1, m))
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
