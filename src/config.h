/*
 * config.h - the weave.conf file shared by weave.fcgi and weave-admin.
 *
 * Format: one "key = value" per line; blank lines and lines whose first
 * non-blank character is '#' are ignored. The value is the rest of the
 * line with surrounding blanks removed ('#' inside a value is kept, so
 * passwords may contain it). Unknown keys, repeated keys and bad values
 * are errors that name the file, the line and the key.
 *
 * Every key, its default and its meaning are listed in config_keys[]
 * (config.c), and docs/admin.md, "Configuration", is written from it.
 */
#ifndef WEAVE_CONFIG_H
#define WEAVE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

#ifndef WEAVE_DEFAULT_CONFIG
#define WEAVE_DEFAULT_CONFIG "/usr/local/etc/weave/weave.conf"
#endif

/*
 * A storage node with a database of its own (docs/shards.md): the
 * accounts whose users.node is url keep their records there. Keys
 * "node.NAME.url" and "node.NAME.db_*"; a db_* key not given is the
 * account database's.
 */
#define CONFIG_MAX_NODES 16
#define CONFIG_NODE_NAME_MAX 32
struct config_node {
	char name[CONFIG_NODE_NAME_MAX + 1];
	char *url;
	char *db_host;
	int64_t db_port;
	char *db_socket;
	char *db_name;
	char *db_user;
	char *db_password;
};

struct config {
	char *db_host;
	int64_t db_port;
	char *db_socket;
	char *db_name;
	char *db_user;
	char *db_password;
	int64_t db_connect_timeout;
	/* Seconds one read or write on the connection may wait before the node
	 * counts as lost (weave.fcgi only; weave-admin waits as long as needed). */
	int64_t db_read_timeout;
	int64_t db_write_timeout;

	char *public_url;
	enum log_level log_level;

	int64_t retry_after;
	int64_t backoff;
	bool maintenance;

	int64_t quota_kb;
	int64_t max_payload_bytes;
	int64_t max_request_bytes;
	int64_t max_post_records;
	int64_t max_post_bytes;
	int64_t max_ids;
	/* Record history (db_history.h). */
	int64_t history_days;   /* 0: keep no history */
	int64_t history_max_kb; /* per account; 0: no cap */
	/* Uploads lock their account after writing (write_lock.h). */
	bool late_write_lock;

	/* Verified credentials (account_cache.h): kept at most this long. */
	int64_t auth_cache_seconds;
	/* Keys the host's account cache file (account_cache.h); NULL: each
	 * process draws its own key and the caches are per process. */
	char *cache_secret;
	/* Verified passwords shared through the database (shared_credential.h);
	 * only with cache_secret set. */
	bool shared_credentials;
	int64_t max_concurrent_kdf; /* password KDFs at once on the host; 0: cores */
	int64_t password_cost;
	/* Reuse of account rows across requests (account_cache.h). */
	int64_t account_cache_seconds; /* 0: read the row on every request */
	char *account_cache_file;      /* NULL: derived from the db settings */

	bool registration;
	char *admin_secret;
	int64_t registration_limit;
	int64_t registration_window;

	bool captcha;
	char *captcha_secret;
	int64_t captcha_lifetime;
	char *captcha_verify_url;
	char *captcha_public_key;
	char *captcha_private_key;

	char *sendmail_command;
	char *mail_from;
	int64_t reset_code_lifetime;

	/* Throttling of guesses (throttle.c); a limit of 0 turns it off. */
	int64_t login_limit;         /* failed logins per account and address */
	int64_t login_address_limit; /* failed logins per client address */
	int64_t login_window;        /* seconds over which failures add up */
	int64_t login_lockout;       /* seconds a reached limit lasts */
	int64_t reset_limit;         /* reset-code mails per account */
	int64_t reset_address_limit; /* reset-code mails per client address */
	int64_t reset_window;        /* seconds */
	char *throttle_exempt;       /* addresses free of the per-address limits */
	int64_t login_account_limit; /* failed logins per account per day */
	char *trusted_proxies;       /* reverse proxies whose X-Forwarded-For counts */

	/* The metrics page (metrics.h): off unless asked for; then answered to
	 * the client addresses in metrics_allow, or to a request bearing
	 * metrics_token from anywhere. */
	bool metrics;
	char *metrics_allow;
	char *metrics_token;

	/* Storage nodes with databases of their own; none: one database. */
	struct config_node nodes[CONFIG_MAX_NODES];
	size_t nnodes;
};

/* Fill *cfg with the defaults. */
void config_defaults(struct config *cfg);

/*
 * Read path into *cfg (on top of the defaults). On error returns -1 and
 * writes a one-line message ("FILE:LINE: key 'k': ...") to err.
 */
int config_load(struct config *cfg, const char *path, char *err, size_t errlen);

/* Parse config text held in memory; name is used in messages. */
int config_parse(struct config *cfg, const char *name, const char *text,
		 size_t len, char *err, size_t errlen);

/* The path to use: $WEAVE_CONFIG if set, else the compiled-in default. */
const char *config_path_from_env(void);

void config_free(struct config *cfg);

/*
 * The place (db.h) of the database holding the records of an account
 * whose users.node is node_url: 1 + the index of the node whose url it
 * is, or 0 (the account database) for NULL or any other URL.
 */
size_t config_node_place(const struct config *cfg, const char *node_url);

#endif
