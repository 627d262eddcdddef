/*
 * cache_key.h - the key of the host's account cache, and the MACs made
 * with it (account_cache.h says what they are for).
 *
 * The key lives in process memory only, never in the cache file: it is
 * derived at process start from cache_secret in weave.conf
 * (HKDF-SHA256, salt "weave-server account cache", info "cache key 1"),
 * so that every process of the host, and of every host with the same
 * weave.conf, finds what another stored. Without cache_secret each
 * process draws a random key, and what it stores serves itself only.
 * cache_key_init() also makes the process undumpable (prctl), so that
 * other processes of the web server's user cannot read the key from its
 * memory.
 *
 * A second key, for the verifiers kept in the database and shared by
 * every web server (shared_credential.h), is derived from the same
 * secret under another label (info "shared verifier key 1"), and only
 * from cache_secret: a random key could not be shared. So a verifier of
 * one kind is never valid as the other, and the cache file holds nothing
 * made with the database's key.
 *
 * Every MAC is HMAC-SHA256 under the key over a label and fields, each
 * written as its length (8 bytes, little-endian) and then its bytes, so
 * fields cannot run into each other. Numbers are 8 bytes little-endian.
 * The one exception is the name's tag, which only finds an entry: it is
 * SipHash-2-4 (128 bits), the same label and fields, under a third key
 * derived the same way (info "cache name key 1"; random with the host key
 * when there is no cache_secret).
 */
#ifndef WEAVE_CACHE_KEY_H
#define WEAVE_CACHE_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CACHE_MAC_BYTES 32

/*
 * Derive the key from secret (NULL or "": a random key, and a warning
 * logged once). Returns 0, or -1 if OpenSSL failed (then every MAC
 * fails and nothing is cached).
 */
int cache_key_init(const char *secret);

/* true when the key came from cache_secret (shared by the host). */
bool cache_key_shared(void);

/* MAC("name", username): the first word tags the entry, the second checks it. */
bool cache_key_name(const char *username, uint64_t out[2]);

/* MAC("hash", stored hash): the password fingerprint; it changes with the password. */
bool cache_key_fingerprint(const char *stored_hash, unsigned char out[CACHE_MAC_BYTES]);

/* MAC("verifier", id, fingerprint, password): what a verified login leaves. */
bool cache_key_verifier(int64_t user_id, const unsigned char fingerprint[CACHE_MAC_BYTES],
			const char *password, size_t len,
			unsigned char out[CACHE_MAC_BYTES]);

/* true when cache_secret gave the database verifiers' key. */
bool cache_key_shared_verifier_ready(void);

/*
 * Under the database verifiers' key: MAC("shared verifier", id,
 * MAC("hash", stored hash), password). false without that key.
 */
bool cache_key_shared_verifier(int64_t user_id, const char *stored_hash, const char *password,
			       size_t len, unsigned char out[CACHE_MAC_BYTES]);

#endif
