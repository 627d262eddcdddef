/* shared_credential.c - verified passwords shared through the database (shared_credential.h). */
#include "shared_credential.h"

#include <openssl/crypto.h>

#include "account_cache.h"
#include "cache_key.h"
#include "change_board.h"
#include "config.h"
#include "log.h"
#include "util.h"

static bool enabled;
static int64_t ttl;

void shared_credential_init(const struct config *cfg)
{
	ttl = cfg->auth_cache_seconds;
	enabled = cfg->shared_credentials && ttl > 0 && cache_key_shared_verifier_ready();
	if (cfg->shared_credentials && ttl > 0 && !enabled)
		log_debug("verified passwords are not shared through the database: "
			  "cache_secret is not set");
}

bool shared_credential_wanted(void)
{
	return enabled && db_user_verifiers_ready();
}

bool shared_credential_fresh(int64_t made, int64_t now, int64_t lifetime)
{
	return lifetime > 0 && made > 0 && made <= now + SHARED_CREDENTIAL_SKEW &&
	       now - made < lifetime;
}

bool shared_credential_vouches(const struct user *u, const struct login_verifier *v,
			       const char *password, size_t len, int64_t now)
{
	unsigned char mac[CACHE_MAC_BYTES];
	if (!enabled || !v->found || !shared_credential_fresh(v->made, now, ttl))
		return false;
	bool hit = cache_key_shared_verifier(u->id, u->password_hash, password, len, mac) &&
		   bytes_equal_const_time(mac, v->mac, sizeof mac);
	OPENSSL_cleanse(mac, sizeof mac);
	if (!hit)
		return false;
	/* Trusted on this host from the verifier's making, not from now:
	 * one KDF vouches for at most auth_cache_seconds anywhere. */
	account_cache_credential_put(u, password, len, v->made < now ? v->made : now);
	change_board_count(BOARD_SHARED_HITS);
	log_debug("password vouched for by a verification stored in the database");
	return true;
}

void shared_credential_put(const struct user *u, const char *password, size_t len,
			   int64_t now)
{
	unsigned char mac[CACHE_MAC_BYTES];
	/* Never inside a request's transaction: its rollback would drop it,
	 * and the row lock it may hold must stay short. */
	if (!shared_credential_wanted() || db_in_transaction())
		return;
	if (cache_key_shared_verifier(u->id, u->password_hash, password, len, mac)) {
		enum db_status st = db_user_put_verifier(u->id, mac, now);
		if (st != DB_OK)
			log_info("verified password not stored for other web servers: %s",
				 db_status_text(st));
	}
	OPENSSL_cleanse(mac, sizeof mac);
}
