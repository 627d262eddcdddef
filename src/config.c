/* config.c - table-driven parser for weave.conf. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "buf.h"
#include "db_hosts.h"
#include "util.h"

/*
 * KEY_URL: a base URL, stored ending in '/' (paths are appended to it).
 * KEY_ENDPOINT: the URL of one resource (a verify endpoint), checked the
 * same way but used exactly as written: a '/' added there names another
 * resource, which a remote server may not have.
 */
enum key_type { KEY_STRING, KEY_INT, KEY_BOOL, KEY_LOG_LEVEL, KEY_URL, KEY_ENDPOINT,
		KEY_HOSTS };

struct config_key {
	const char *name;
	enum key_type type;
	size_t offset;
	int64_t min, max; /* KEY_STRING: min is the shortest value but "" (unset) */
	bool secret;
};

/*
 * Our own secrets: a guessable one gives away accounts (admin_secret
 * creates and deletes them remotely) or the captcha. 16 bytes of random
 * text is beyond guessing; "weave-admin secret" prints such a value.
 */
#define SECRET_MIN 16

#define KEY(name, type, min, max) \
	{ #name, type, offsetof(struct config, name), min, max, false }

/* The whole file format on one screen; defaults are in config_defaults(). */
static const struct config_key config_keys[] = {
	KEY(db_host, KEY_HOSTS, 0, 0),
	KEY(db_port, KEY_INT, 1, 65535),
	KEY(db_socket, KEY_STRING, 0, 0),
	KEY(db_name, KEY_STRING, 0, 0),
	KEY(db_user, KEY_STRING, 0, 0),
	{ "db_password", KEY_STRING, offsetof(struct config, db_password), 0, 0, true },
	KEY(db_connect_timeout, KEY_INT, 1, 600),
	KEY(db_read_timeout, KEY_INT, 1, 3600),
	KEY(db_write_timeout, KEY_INT, 1, 3600),
	KEY(public_url, KEY_URL, 0, 0),
	KEY(log_level, KEY_LOG_LEVEL, 0, 0),
	KEY(retry_after, KEY_INT, 1, 86400),
	KEY(backoff, KEY_INT, 0, 86400),
	KEY(maintenance, KEY_BOOL, 0, 0),
	KEY(quota_kb, KEY_INT, 0, INT64_C(1) << 40),
	KEY(max_payload_bytes, KEY_INT, 1024, 16 * 1024 * 1024),
	KEY(max_request_bytes, KEY_INT, 4096, 64 * 1024 * 1024),
	KEY(max_post_records, KEY_INT, 1, 10000),
	KEY(max_post_bytes, KEY_INT, 1024, 64 * 1024 * 1024),
	KEY(max_ids, KEY_INT, 1, 10000),
	KEY(history_days, KEY_INT, 0, 3650),
	KEY(late_write_lock, KEY_BOOL, 0, 0),
	KEY(history_max_kb, KEY_INT, 0, INT64_C(1) << 30),
	KEY(auth_cache_seconds, KEY_INT, 0, 7 * 86400),
	{ "cache_secret", KEY_STRING, offsetof(struct config, cache_secret), SECRET_MIN, 0, true },
	KEY(shared_credentials, KEY_BOOL, 0, 0),
	KEY(max_concurrent_kdf, KEY_INT, 0, 64),
	KEY(password_cost, KEY_INT, 10, 20),
	KEY(account_cache_seconds, KEY_INT, 0, 3600),
	KEY(account_cache_file, KEY_STRING, 0, 0),
	KEY(registration, KEY_BOOL, 0, 0),
	{ "admin_secret", KEY_STRING, offsetof(struct config, admin_secret), SECRET_MIN, 0, true },
	KEY(registration_limit, KEY_INT, 0, 1000000),
	KEY(registration_window, KEY_INT, 1, 86400 * 30),
	KEY(captcha, KEY_BOOL, 0, 0),
	{ "captcha_secret", KEY_STRING, offsetof(struct config, captcha_secret), SECRET_MIN, 0, true },
	KEY(captcha_lifetime, KEY_INT, 30, 86400),
	KEY(captcha_verify_url, KEY_ENDPOINT, 0, 0),
	KEY(captcha_public_key, KEY_STRING, 0, 0),
	{ "captcha_private_key", KEY_STRING, offsetof(struct config, captcha_private_key), 0, 0, true },
	KEY(sendmail_command, KEY_STRING, 0, 0),
	KEY(mail_from, KEY_STRING, 0, 0),
	KEY(reset_code_lifetime, KEY_INT, 60, 86400 * 7),
	KEY(login_limit, KEY_INT, 0, 1000000),
	KEY(login_address_limit, KEY_INT, 0, 1000000),
	KEY(login_window, KEY_INT, 1, 86400 * 30),
	KEY(login_lockout, KEY_INT, 1, 86400 * 30),
	KEY(reset_limit, KEY_INT, 0, 1000000),
	KEY(reset_address_limit, KEY_INT, 0, 1000000),
	KEY(reset_window, KEY_INT, 1, 86400 * 30),
	KEY(throttle_exempt, KEY_STRING, 0, 0),
	KEY(login_account_limit, KEY_INT, 0, 1000000),
	KEY(trusted_proxies, KEY_STRING, 0, 0),
	KEY(metrics, KEY_BOOL, 0, 0),
	KEY(metrics_allow, KEY_STRING, 0, 0),
	{ "metrics_token", KEY_STRING, offsetof(struct config, metrics_token), SECRET_MIN, 0, true },
};

#define NKEYS (sizeof config_keys / sizeof config_keys[0])

#define NODE_KEY(name, type, min, max) \
	{ #name, type, offsetof(struct config_node, name), min, max, false }

/* The keys of one storage node: "node.NAME." and one of these. */
static const struct config_key node_keys[] = {
	NODE_KEY(url, KEY_URL, 0, 0),
	NODE_KEY(db_host, KEY_HOSTS, 0, 0),
	NODE_KEY(db_port, KEY_INT, 1, 65535),
	NODE_KEY(db_socket, KEY_STRING, 0, 0),
	NODE_KEY(db_name, KEY_STRING, 0, 0),
	NODE_KEY(db_user, KEY_STRING, 0, 0),
	{ "db_password", KEY_STRING, offsetof(struct config_node, db_password), 0, 0, true },
};
#define NNODE_KEYS (sizeof node_keys / sizeof node_keys[0])

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->db_host = xstrdup("127.0.0.1");
	cfg->db_port = 3306;
	cfg->db_name = xstrdup("weave");
	cfg->db_user = xstrdup("weave");
	cfg->db_password = xstrdup("");
	cfg->db_connect_timeout = 5;
	cfg->db_read_timeout = 10;
	cfg->db_write_timeout = 10;
	cfg->public_url = NULL;
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->retry_after = 600;
	cfg->backoff = 0;
	cfg->maintenance = false;
	cfg->quota_kb = 0;
	cfg->max_payload_bytes = 262144;
	cfg->max_request_bytes = 2097152;
	cfg->max_post_records = 100;
	cfg->max_post_bytes = 1048576;
	cfg->max_ids = 1000;
	cfg->history_days = 14;
	cfg->late_write_lock = true;
	cfg->history_max_kb = 10240;
	cfg->auth_cache_seconds = 86400;
	cfg->cache_secret = NULL;
	cfg->shared_credentials = true;
	cfg->max_concurrent_kdf = 0;
	cfg->password_cost = 17;
	cfg->account_cache_seconds = 30;
	cfg->account_cache_file = NULL;
	cfg->registration = false;
	cfg->admin_secret = NULL;
	cfg->registration_limit = 10;
	cfg->registration_window = 3600;
	cfg->captcha = true;
	cfg->captcha_secret = NULL;
	cfg->captcha_lifetime = 600;
	cfg->sendmail_command = xstrdup("/usr/sbin/sendmail -t -i");
	cfg->mail_from = NULL;
	cfg->reset_code_lifetime = 21600;
	cfg->login_limit = 10;
	cfg->login_address_limit = 100;
	cfg->login_window = 900;
	cfg->login_lockout = 900;
	cfg->reset_limit = 5;
	cfg->reset_address_limit = 20;
	cfg->reset_window = 3600;
	cfg->throttle_exempt = xstrdup("");
	cfg->login_account_limit = 100;
	cfg->trusted_proxies = xstrdup("");
	cfg->metrics = false;
	cfg->metrics_allow = xstrdup("127.0.0.1 ::1");
	cfg->metrics_token = NULL;
}

/* The key of table (n entries) called [name, name + len), or NULL. */
static const struct config_key *find_key(const struct config_key *table, size_t n,
					 const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
			return &table[i];
	return NULL;
}

static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

/* An absolute http(s) URL; with add_slash, stored ending in '/'. */
static char *normalise_url(const char *v, bool add_slash)
{
	if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
		return NULL;
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '"' || *p == '\\')
			return NULL;
	size_t len = strlen(v);
	const char *host = strstr(v, "//") + 2;
	if (*host == '\0' || *host == '/')
		return NULL;
	char *url = xmalloc(len + 2);
	memcpy(url, v, len + 1);
	if (add_slash && url[len - 1] != '/') {
		url[len] = '/';
		url[len + 1] = '\0';
	}
	return url;
}

/* Set key of the struct at base (a struct config or config_node). */
static int set_value(void *base, const struct config_key *key,
		     const char *value, const char **why)
{
	char *field = (char *)base + key->offset;

	switch (key->type) {
	case KEY_HOSTS:
	case KEY_STRING: {
		/* A host list is checked here and kept as text: db.c parses
		 * it again, with db_port, which may come later in the file. */
		struct db_hosts hosts;
		if (key->type == KEY_HOSTS && value[0] != '\0' &&
		    db_hosts_parse(value, 3306, &hosts, why) < 0)
			return -1;
		char **slot = (char **)(void *)field;
		if (value[0] != '\0' && (int64_t)strlen(value) < key->min) {
			*why = "too short: use at least 16 bytes of random text "
			       "(weave-admin secret prints one)";
			return -1;
		}
		if (*slot != NULL) {
			OPENSSL_cleanse(*slot, strlen(*slot));
			free(*slot);
		}
		*slot = xstrdup(value);
		return 0;
	}
	case KEY_INT:
		if (parse_int64(value, key->min, key->max,
				(int64_t *)(void *)field) < 0) {
			*why = "expected a whole number in range";
			return -1;
		}
		return 0;
	case KEY_BOOL:
		if (parse_bool(value, (bool *)(void *)field) < 0) {
			*why = "expected on or off";
			return -1;
		}
		return 0;
	case KEY_LOG_LEVEL:
		if (log_level_parse(value, (enum log_level *)(void *)field) < 0) {
			*why = "expected error, warn, info or debug";
			return -1;
		}
		return 0;
	case KEY_URL:
	case KEY_ENDPOINT: {
		char *url = normalise_url(value, key->type == KEY_URL);
		if (url == NULL) {
			*why = "expected an absolute http:// or https:// URL";
			return -1;
		}
		char **slot = (char **)(void *)field;
		free(*slot);
		*slot = url;
		return 0;
	}
	}
	*why = "internal error: unknown key type";
	return -1;
}

/* An empty value means "not set" for optional strings. */
static void empty_to_null(char **s)
{
	if (*s != NULL && (*s)[0] == '\0') {
		free(*s);
		*s = NULL;
	}
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Where config_parse() is, for its messages. */
struct parse_at {
	struct config *cfg;
	const char *name; /* the file, as messages name it */
	size_t line_no;
	bool seen[NKEYS];
	unsigned node_seen[CONFIG_MAX_NODES]; /* bit i: node_keys[i] */
	char *err;
	size_t errlen;
};

/* The key and value of the trimmed line [p, q): -1 with the message set
 * when it is no 'key = value'. */
static int split_line(struct parse_at *at, const char *p, const char *q,
		      const char **key_end, const char **value)
{
	if (memchr(p, '\0', (size_t)(q - p)) != NULL) {
		snprintf(at->err, at->errlen, "%s:%zu: line contains a NUL byte",
			 at->name, at->line_no);
		return -1;
	}
	const char *eq = memchr(p, '=', (size_t)(q - p));
	if (eq == NULL) {
		snprintf(at->err, at->errlen, "%s:%zu: expected 'key = value'",
			 at->name, at->line_no);
		return -1;
	}
	*key_end = eq;
	while (*key_end > p && is_blank((*key_end)[-1]))
		(*key_end)--;
	*value = eq + 1;
	while (*value < q && is_blank(**value))
		(*value)++;
	/* A blank inside the "key" means a missing '=' earlier on the
	 * line: echo nothing, the text may be a secret. */
	for (const char *k = p; k < *key_end; k++) {
		if (is_blank(*k)) {
			snprintf(at->err, at->errlen,
				 "%s:%zu: expected 'key = value' (the key has a blank in it)",
				 at->name, at->line_no);
			return -1;
		}
	}
	return 0;
}

/* The node called name (len bytes), added if new; NULL with *why set. */
static struct config_node *node_named(struct config *cfg, const char *name,
				      size_t len, const char **why)
{
	if (len == 0 || len > CONFIG_NODE_NAME_MAX) {
		*why = "a node name is 1 to 32 characters";
		return NULL;
	}
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
			*why = "a node name is made of a-z, 0-9, '_' and '-'";
			return NULL;
		}
	}
	for (size_t i = 0; i < cfg->nnodes; i++)
		if (strlen(cfg->nodes[i].name) == len && memcmp(cfg->nodes[i].name, name, len) == 0)
			return &cfg->nodes[i];
	if (cfg->nnodes == CONFIG_MAX_NODES) {
		*why = "too many nodes (at most 16)";
		return NULL;
	}
	struct config_node *n = &cfg->nodes[cfg->nnodes++];
	memset(n, 0, sizeof *n);
	memcpy(n->name, name, len);
	return n;
}

/* "node.NAME.KEY = value" ([p, key_end) the key, [v, q) the value). */
static int store_node_line(struct parse_at *at, const char *p, const char *key_end,
			   const char *v, const char *q)
{
	const char *name = p + 5, *dot = memchr(name, '.', (size_t)(key_end - name));
	const char *why = NULL;
	const struct config_key *key =
		dot ? find_key(node_keys, NNODE_KEYS, dot + 1, (size_t)(key_end - dot - 1)) : NULL;
	if (key == NULL) {
		snprintf(at->err, at->errlen,
			 "%s:%zu: unknown key '%.*s' (a node's keys are node.NAME.url, "
			 "node.NAME.db_host, db_port, db_socket, db_name, db_user, db_password)",
			 at->name, at->line_no, (int)(key_end - p > 64 ? 64 : key_end - p), p);
		return -1;
	}
	struct config_node *node = node_named(at->cfg, name, (size_t)(dot - name), &why);
	if (node == NULL) {
		snprintf(at->err, at->errlen, "%s:%zu: key '%.*s': %s", at->name, at->line_no,
			 (int)(key_end - p > 64 ? 64 : key_end - p), p, why);
		return -1;
	}
	unsigned bit = 1u << (key - node_keys);
	size_t index = (size_t)(node - at->cfg->nodes);
	if (at->node_seen[index] & bit) {
		snprintf(at->err, at->errlen, "%s:%zu: key 'node.%s.%s' is set twice", at->name,
			 at->line_no, node->name, key->name);
		return -1;
	}
	at->node_seen[index] |= bit;
	char *value = xstrndup(v, (size_t)(q - v));
	int rc = set_value(node, key, value, &why);
	if (rc < 0)
		snprintf(at->err, at->errlen, "%s:%zu: key 'node.%s.%s': %s", at->name,
			 at->line_no, node->name, key->name, why);
	OPENSSL_cleanse(value, strlen(value));
	free(value);
	return rc < 0 ? -1 : 0;
}

/* Set the key [p, key_end) to the value [v, q), once per file. */
static int store_line(struct parse_at *at, const char *p, const char *key_end,
		      const char *v, const char *q)
{
	if (key_end - p > 5 && memcmp(p, "node.", 5) == 0)
		return store_node_line(at, p, key_end, v, q);
	const struct config_key *key = find_key(config_keys, NKEYS, p, (size_t)(key_end - p));
	if (key == NULL) {
		snprintf(at->err, at->errlen, "%s:%zu: unknown key '%.*s'", at->name,
			 at->line_no, (int)(key_end - p > 64 ? 64 : key_end - p), p);
		return -1;
	}
	size_t index = (size_t)(key - config_keys);
	if (at->seen[index]) {
		snprintf(at->err, at->errlen, "%s:%zu: key '%s' is set twice", at->name,
			 at->line_no, key->name);
		return -1;
	}
	at->seen[index] = true;

	char *value = xstrndup(v, (size_t)(q - v));
	const char *why = NULL;
	int rc = set_value(at->cfg, key, value, &why);
	if (rc < 0) {
		if (key->secret)
			snprintf(at->err, at->errlen, "%s:%zu: key '%s': %s", at->name,
				 at->line_no, key->name, why);
		else
			snprintf(at->err, at->errlen,
				 "%s:%zu: key '%s': %s (got '%.64s')", at->name,
				 at->line_no, key->name, why, value);
	}
	OPENSSL_cleanse(value, strlen(value));
	free(value);
	return rc < 0 ? -1 : 0;
}

/* One line [line, line_end): blank lines and comments are skipped. */
static int parse_line(struct parse_at *at, const char *line, const char *line_end)
{
	const char *p = line;
	while (p < line_end && is_blank(*p))
		p++;
	const char *q = line_end;
	while (q > p && is_blank(q[-1]))
		q--;
	if (p == q || *p == '#')
		return 0;
	const char *key_end, *v;
	if (split_line(at, p, q, &key_end, &v) < 0)
		return -1;
	return store_line(at, p, key_end, v, q);
}

/* A db_* key a node did not set is the account database's. */
static void inherit(char **slot, const char *account_value)
{
	if (*slot == NULL && account_value != NULL)
		*slot = xstrdup(account_value);
	empty_to_null(slot);
}

/* Every node has a url of its own and a database other than the
 * account database; unset db_* keys are filled in. */
static int check_nodes(struct config *cfg, const char *name, char *err, size_t errlen)
{
	for (size_t i = 0; i < cfg->nnodes; i++) {
		struct config_node *n = &cfg->nodes[i];
		if (n->url == NULL) {
			snprintf(err, errlen, "%s: node '%s' has no node.%s.url", name, n->name, n->name);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(cfg->nodes[j].url, n->url) == 0) {
				snprintf(err, errlen, "%s: nodes '%s' and '%s' have the same url",
					 name, cfg->nodes[j].name, n->name);
				return -1;
			}
		}
		if (cfg->public_url != NULL && strcmp(n->url, cfg->public_url) == 0) {
			snprintf(err, errlen, "%s: node '%s': its url is public_url, whose "
				 "accounts keep their records in the account database",
				 name, n->name);
			return -1;
		}
		/* Naming neither host nor socket: the account database's server. */
		if (n->db_host == NULL && n->db_socket == NULL) {
			inherit(&n->db_host, cfg->db_host);
			inherit(&n->db_socket, cfg->db_socket);
			if (n->db_port == 0)
				n->db_port = cfg->db_port;
		}
		if (n->db_host == NULL)
			n->db_host = xstrdup("");
		empty_to_null(&n->db_socket);
		if (n->db_port == 0)
			n->db_port = 3306;
		inherit(&n->db_name, cfg->db_name);
		inherit(&n->db_user, cfg->db_user);
		inherit(&n->db_password, cfg->db_password);
		if (n->db_name == NULL) {
			snprintf(err, errlen, "%s: node '%s' has no node.%s.db_name", name,
				 n->name, n->name);
			return -1;
		}
		if (strcmp(n->db_host, cfg->db_host ? cfg->db_host : "") == 0 &&
		    n->db_port == cfg->db_port &&
		    strcmp(n->db_socket ? n->db_socket : "", cfg->db_socket ? cfg->db_socket : "") == 0 &&
		    strcmp(n->db_name, cfg->db_name ? cfg->db_name : "") == 0) {
			snprintf(err, errlen, "%s: node '%s': its database is the account "
				 "database (set node.%s.db_name)", name, n->name, n->name);
			return -1;
		}
	}
	return 0;
}

size_t config_node_place(const struct config *cfg, const char *node_url)
{
	if (node_url == NULL)
		return 0;
	for (size_t i = 0; i < cfg->nnodes; i++)
		if (strcmp(cfg->nodes[i].url, node_url) == 0)
			return i + 1;
	return 0;
}

int config_parse(struct config *cfg, const char *name, const char *text,
		 size_t len, char *err, size_t errlen)
{
	struct parse_at at = { .cfg = cfg, .name = name, .err = err, .errlen = errlen };
	const char *end = text + len;
	const char *line = text;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		at.line_no++;
		if (parse_line(&at, line, nl ? nl : end) < 0)
			return -1;
		line = nl ? nl + 1 : end;
	}
	if (cfg->db_socket != NULL && cfg->db_socket[0] == '\0') {
		free(cfg->db_socket);
		cfg->db_socket = NULL;
	}
	empty_to_null(&cfg->admin_secret);
	empty_to_null(&cfg->captcha_secret);
	empty_to_null(&cfg->cache_secret);
	empty_to_null(&cfg->captcha_public_key);
	empty_to_null(&cfg->captcha_private_key);
	empty_to_null(&cfg->mail_from);
	empty_to_null(&cfg->account_cache_file);
	empty_to_null(&cfg->metrics_token);
	return check_nodes(cfg, name, err, errlen);
}

int config_load(struct config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot open config file: %s", path,
			 strerror(errno));
		return -1;
	}
	struct buf text;
	buf_init(&text, 1024 * 1024);
	char chunk[4096];
	size_t n;
	int rc = 0;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (buf_append(&text, chunk, n) < 0) {
			snprintf(err, errlen, "%s: config file larger than 1 MiB",
				 path);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && ferror(f)) {
		snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
		rc = -1;
	}
	fclose(f);
	if (rc == 0)
		rc = config_parse(cfg, path, text.data ? text.data : "", text.len,
				  err, errlen);
	buf_free_secret(&text);
	return rc;
}

const char *config_path_from_env(void)
{
	const char *path = getenv("WEAVE_CONFIG");
	return (path != NULL && *path != '\0') ? path : WEAVE_DEFAULT_CONFIG;
}

static void free_secret(char *s)
{
	if (s != NULL) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

void config_free(struct config *cfg)
{
	free(cfg->db_host);
	free(cfg->db_socket);
	free(cfg->db_name);
	free(cfg->db_user);
	free_secret(cfg->db_password);
	free(cfg->public_url);
	free_secret(cfg->admin_secret);
	free_secret(cfg->captcha_secret);
	free_secret(cfg->cache_secret);
	free(cfg->captcha_verify_url);
	free(cfg->captcha_public_key);
	free_secret(cfg->captcha_private_key);
	free(cfg->sendmail_command);
	free(cfg->mail_from);
	free(cfg->throttle_exempt);
	free(cfg->trusted_proxies);
	free(cfg->account_cache_file);
	free(cfg->metrics_allow);
	free_secret(cfg->metrics_token);
	for (size_t i = 0; i < cfg->nnodes; i++) {
		struct config_node *n = &cfg->nodes[i];
		free(n->url);
		free(n->db_host);
		free(n->db_socket);
		free(n->db_name);
		free(n->db_user);
		free_secret(n->db_password);
	}
	memset(cfg, 0, sizeof *cfg);
}
