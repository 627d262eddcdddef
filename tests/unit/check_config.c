/* check_config.c - unit tests for src/config.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_suites.h"
#include "config.h"

#define ERRLEN 512

/* Parse text (strlen) on top of the defaults; the caller frees cfg. */
static int parse_text(struct config *cfg, const char *text, char *err)
{
	config_defaults(cfg);
	memset(err, 0, ERRLEN);
	return config_parse(cfg, "test.conf", text, strlen(text), err, ERRLEN);
}

/* Expect text to fail; the message must contain every non-NULL needle. */
static void expect_error(const char *text, const char *where, const char *n1,
			 const char *n2)
{
	struct config cfg;
	char err[ERRLEN];
	int rc = parse_text(&cfg, text, err);
	ck_assert_msg(rc == -1, "accepted: %s", text);
	ck_assert_msg(strncmp(err, where, strlen(where)) == 0,
		      "message '%s' does not start with '%s'", err, where);
	if (n1 != NULL)
		ck_assert_msg(strstr(err, n1) != NULL, "'%s' not in '%s'", n1, err);
	if (n2 != NULL)
		ck_assert_msg(strstr(err, n2) != NULL, "'%s' not in '%s'", n2, err);
	ck_assert_ptr_null(memchr(err, '\n', strlen(err)));
	config_free(&cfg);
}

START_TEST(test_defaults)
{
	struct config cfg;
	config_defaults(&cfg);
	ck_assert_str_eq(cfg.db_host, "127.0.0.1");
	ck_assert_int_eq(cfg.db_port, 3306);
	ck_assert_ptr_null(cfg.db_socket);
	ck_assert_str_eq(cfg.db_name, "weave");
	ck_assert_str_eq(cfg.db_user, "weave");
	ck_assert_str_eq(cfg.db_password, "");
	ck_assert_int_eq(cfg.db_connect_timeout, 5);
	ck_assert_int_eq(cfg.db_read_timeout, 10);
	ck_assert_int_eq(cfg.db_write_timeout, 10);
	ck_assert_ptr_null(cfg.public_url);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_INFO);
	ck_assert_int_eq(cfg.retry_after, 600);
	ck_assert_int_eq(cfg.backoff, 0);
	ck_assert(!cfg.maintenance);
	ck_assert_int_eq(cfg.quota_kb, 0);
	ck_assert_int_eq(cfg.max_payload_bytes, 262144);
	ck_assert_int_eq(cfg.max_request_bytes, 2097152);
	ck_assert_int_eq(cfg.max_post_records, 100);
	ck_assert_int_eq(cfg.max_post_bytes, 1048576);
	ck_assert_int_eq(cfg.max_ids, 1000);
	ck_assert_int_eq(cfg.auth_cache_seconds, 86400);
	ck_assert_ptr_null(cfg.cache_secret);
	ck_assert_int_eq(cfg.max_concurrent_kdf, 0);
	ck_assert_int_eq(cfg.password_cost, 17);
	ck_assert(!cfg.registration);
	ck_assert_ptr_null(cfg.admin_secret);
	config_free(&cfg);
	/* config_free zeroes, so a second call is harmless. */
	ck_assert_ptr_null(cfg.db_host);
	config_free(&cfg);
}
END_TEST

START_TEST(test_empty_text)
{
	struct config cfg;
	char err[ERRLEN];
	ck_assert_int_eq(parse_text(&cfg, "", err), 0);
	ck_assert_int_eq(cfg.db_port, 3306);
	ck_assert_str_eq(cfg.db_name, "weave");
	config_free(&cfg);
	ck_assert_int_eq(parse_text(&cfg, "\n\n   \n\t\r\n# only comments\n", err), 0);
	ck_assert_int_eq(cfg.password_cost, 17);
	config_free(&cfg);
}
END_TEST

START_TEST(test_every_key)
{
	static const char text[] =
		"db_host = db.example.org\n"
		"db_port = 3307\n"
		"db_socket = /run/mysqld/mysqld.sock\n"
		"db_name = sync\n"
		"db_user = syncer\n"
		"db_password = pa ss#word=1\n"
		"db_connect_timeout = 30\n"
		"db_read_timeout = 4\n"
		"db_write_timeout = 3\n"
		"public_url = https://sync.example.org/weave\n"
		"log_level = debug\n"
		"retry_after = 120\n"
		"backoff = 3600\n"
		"maintenance = on\n"
		"quota_kb = 5120\n"
		"max_payload_bytes = 1024\n"
		"max_request_bytes = 4096\n"
		"max_post_records = 50\n"
		"max_ids = 200\n"
		"auth_cache_seconds = 0\n"
		"password_cost = 10\n"
		"registration = yes\n"
		"admin_secret = topsecret-0123456\n";
	struct config cfg;
	char err[ERRLEN];
	ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
	ck_assert_str_eq(cfg.db_host, "db.example.org");
	ck_assert_int_eq(cfg.db_port, 3307);
	ck_assert_str_eq(cfg.db_socket, "/run/mysqld/mysqld.sock");
	ck_assert_str_eq(cfg.db_name, "sync");
	ck_assert_str_eq(cfg.db_user, "syncer");
	ck_assert_str_eq(cfg.db_password, "pa ss#word=1");
	ck_assert_int_eq(cfg.db_connect_timeout, 30);
	ck_assert_int_eq(cfg.db_read_timeout, 4);
	ck_assert_int_eq(cfg.db_write_timeout, 3);
	ck_assert_str_eq(cfg.public_url, "https://sync.example.org/weave/");
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_DEBUG);
	ck_assert_int_eq(cfg.retry_after, 120);
	ck_assert_int_eq(cfg.backoff, 3600);
	ck_assert(cfg.maintenance);
	ck_assert_int_eq(cfg.quota_kb, 5120);
	ck_assert_int_eq(cfg.max_payload_bytes, 1024);
	ck_assert_int_eq(cfg.max_request_bytes, 4096);
	ck_assert_int_eq(cfg.max_post_records, 50);
	ck_assert_int_eq(cfg.max_ids, 200);
	ck_assert_int_eq(cfg.auth_cache_seconds, 0);
	ck_assert_int_eq(cfg.password_cost, 10);
	ck_assert(cfg.registration);
	ck_assert_str_eq(cfg.admin_secret, "topsecret-0123456");
	config_free(&cfg);
}
END_TEST

START_TEST(test_layout)
{
	/* Blanks around key, '=' and value; CRLF; '#' lines after blanks;
	 * '#' inside a value kept; last line without newline. */
	static const char text[] =
		"# weave.conf\r\n"
		"\r\n"
		"   # indented comment = ignored\n"
		"\t\tdb_name\t=\t  my db  \r\n"
		"db_host=bare\n"
		"db_user = user # not a comment\n"
		"db_password =    a=b=c   \n"
		"db_port   =   3310";
	struct config cfg;
	char err[ERRLEN];
	ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
	ck_assert_str_eq(cfg.db_name, "my db");
	ck_assert_str_eq(cfg.db_host, "bare");
	ck_assert_str_eq(cfg.db_user, "user # not a comment");
	ck_assert_str_eq(cfg.db_password, "a=b=c");
	ck_assert_int_eq(cfg.db_port, 3310);
	config_free(&cfg);
}
END_TEST

START_TEST(test_empty_strings)
{
	struct config cfg;
	char err[ERRLEN];
	/* An empty socket or admin secret means "not set". */
	ck_assert_int_eq(parse_text(&cfg, "db_socket =\nadmin_secret =   \n"
					  "db_password =\n", err), 0);
	ck_assert_ptr_null(cfg.db_socket);
	ck_assert_ptr_null(cfg.admin_secret);
	ck_assert_str_eq(cfg.db_password, "");
	config_free(&cfg);
}
END_TEST

START_TEST(test_parse_twice)
{
	/* A second parse replaces strings (no leak under ASan). */
	struct config cfg;
	char err[ERRLEN];
	ck_assert_int_eq(parse_text(&cfg, "db_host = a\npublic_url = http://a\n", err), 0);
	ck_assert_int_eq(config_parse(&cfg, "second.conf",
				      "db_host = b\npublic_url = http://b/\n",
				      strlen("db_host = b\npublic_url = http://b/\n"),
				      err, ERRLEN), 0);
	ck_assert_str_eq(cfg.db_host, "b");
	ck_assert_str_eq(cfg.public_url, "http://b/");
	config_free(&cfg);
}
END_TEST

/* Issue 15: our own secrets are at least 16 bytes, or the file is refused. */
START_TEST(test_short_secrets)
{
	struct config cfg;
	char err[ERRLEN];
	static const char *const keys[] = { "admin_secret", "captcha_secret",
					    "cache_secret" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		char text[128], name[64];
		snprintf(text, sizeof text, "db_name = x\n%s = 0123456789abcde\n", keys[i]);
		snprintf(name, sizeof name, "'%s'", keys[i]);
		ck_assert_int_eq(parse_text(&cfg, text, err), -1);
		ck_assert_msg(strstr(err, "test.conf:2:") != NULL, "%s", err);
		ck_assert_msg(strstr(err, name) != NULL, "%s", err);
		ck_assert_msg(strstr(err, "too short") != NULL, "%s", err);
		ck_assert_msg(strstr(err, "0123456789") == NULL, "secret leaked: %s", err);
		config_free(&cfg);
		/* 16 bytes will do; so will none at all (unset). */
		snprintf(text, sizeof text, "%s = 0123456789abcdef\n", keys[i]);
		ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
		config_free(&cfg);
		snprintf(text, sizeof text, "%s =\n", keys[i]);
		ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
		config_free(&cfg);
	}
	/* Other secrets are someone else's to choose. */
	ck_assert_int_eq(parse_text(&cfg, "db_password = x\ncaptcha_private_key = y\n", err), 0);
	config_free(&cfg);
}
END_TEST

/* The metrics URL: off by default, open to localhost once on, and its
 * token a secret of our own (16 bytes at least, never echoed). */
START_TEST(test_metrics_settings)
{
	struct config cfg;
	char err[ERRLEN];
	config_defaults(&cfg);
	ck_assert(!cfg.metrics);
	ck_assert_str_eq(cfg.metrics_allow, "127.0.0.1 ::1");
	ck_assert_ptr_null(cfg.metrics_token);
	config_free(&cfg);
	ck_assert_msg(parse_text(&cfg, "metrics = on\nmetrics_allow = 10.0.0.0/8\n"
				       "metrics_token = 0123456789abcdef-x\n", err) == 0, "%s", err);
	ck_assert(cfg.metrics);
	ck_assert_str_eq(cfg.metrics_allow, "10.0.0.0/8");
	ck_assert_str_eq(cfg.metrics_token, "0123456789abcdef-x");
	config_free(&cfg);
	ck_assert_int_eq(parse_text(&cfg, "metrics_token =\n", err), 0);
	ck_assert_ptr_null(cfg.metrics_token);
	config_free(&cfg);
	expect_error("metrics = maybe\n", "test.conf:1:", "'metrics'", NULL);
	ck_assert_int_eq(parse_text(&cfg, "metrics_token = short-secret\n", err), -1);
	ck_assert_msg(strstr(err, "too short") != NULL && strstr(err, "short-secret") == NULL,
		      "%s", err);
	config_free(&cfg);
}
END_TEST

START_TEST(test_unknown_key)
{
	expect_error("db_host = x\n\nnosuch = 1\n", "test.conf:3:", "'nosuch'",
		     "unknown key");
	/* Keys are case-sensitive and must be whole. */
	expect_error("DB_PORT = 1\n", "test.conf:1:", "'DB_PORT'", NULL);
	expect_error("db_por = 1\n", "test.conf:1:", "'db_por'", NULL);
	expect_error("db_portx = 1\n", "test.conf:1:", "'db_portx'", NULL);
	expect_error("db port = 1\n", "test.conf:1:", "expected 'key = value'", NULL);
	expect_error("= value\n", "test.conf:1:", "unknown key", NULL);
}
END_TEST

START_TEST(test_no_equals)
{
	expect_error("# c\ndb_host\n", "test.conf:2:", "key = value", NULL);
	expect_error("db_port 3306\n", "test.conf:1:", NULL, NULL);
}
END_TEST

START_TEST(test_repeated_key)
{
	expect_error("db_port = 1\n#\ndb_port = 1\n", "test.conf:3:", "'db_port'",
		     "twice");
	expect_error("db_name = a\ndb_name = b\n", "test.conf:2:", "'db_name'",
		     "twice");
	expect_error("maintenance = on\nmaintenance = on\n", "test.conf:2:",
		     "'maintenance'", NULL);
}
END_TEST

START_TEST(test_bad_int)
{
	expect_error("db_port = abc\n", "test.conf:1:", "'db_port'", "abc");
	expect_error("\ndb_port =\n", "test.conf:2:", "'db_port'", NULL);
	expect_error("db_port = 3306 # mysql\n", "test.conf:1:", "'db_port'", NULL);
	expect_error("db_port = +3306\n", "test.conf:1:", "'db_port'", NULL);
	expect_error("db_port = 33 06\n", "test.conf:1:", "'db_port'", NULL);
	expect_error("db_port = 0x10\n", "test.conf:1:", "'db_port'", NULL);
	expect_error("db_port = 99999999999999999999999\n", "test.conf:1:",
		     "'db_port'", NULL);
}
END_TEST

/* Every integer key: min and max accepted, one beyond each refused. */
START_TEST(test_int_ranges)
{
	static const struct {
		const char *key;
		size_t offset;
		int64_t min, max;
	} keys[] = {
		{ "db_port", offsetof(struct config, db_port), 1, 65535 },
		{ "db_connect_timeout", offsetof(struct config, db_connect_timeout), 1, 600 },
		{ "db_read_timeout", offsetof(struct config, db_read_timeout), 1, 3600 },
		{ "db_write_timeout", offsetof(struct config, db_write_timeout), 1, 3600 },
		{ "retry_after", offsetof(struct config, retry_after), 1, 86400 },
		{ "backoff", offsetof(struct config, backoff), 0, 86400 },
		{ "quota_kb", offsetof(struct config, quota_kb), 0, INT64_C(1) << 40 },
		{ "max_payload_bytes", offsetof(struct config, max_payload_bytes), 1024, 16777216 },
		{ "max_request_bytes", offsetof(struct config, max_request_bytes), 4096, 67108864 },
		{ "max_post_records", offsetof(struct config, max_post_records), 1, 10000 },
		{ "max_post_bytes", offsetof(struct config, max_post_bytes), 1024, 67108864 },
		{ "max_ids", offsetof(struct config, max_ids), 1, 10000 },
		{ "auth_cache_seconds", offsetof(struct config, auth_cache_seconds), 0, 604800 },
		{ "max_concurrent_kdf", offsetof(struct config, max_concurrent_kdf), 0, 64 },
		{ "password_cost", offsetof(struct config, password_cost), 10, 20 },
	};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const int64_t tries[4] = { keys[i].min, keys[i].max,
					   keys[i].min - 1, keys[i].max + 1 };
		for (int t = 0; t < 4; t++) {
			char text[128], err[ERRLEN], got[40];
			struct config cfg;
			snprintf(text, sizeof text, "# x\n%s = %lld\n", keys[i].key,
				 (long long)tries[t]);
			snprintf(got, sizeof got, "%lld", (long long)tries[t]);
			int rc = parse_text(&cfg, text, err);
			if (t < 2) {
				ck_assert_msg(rc == 0, "%s: %s", text, err);
				int64_t v;
				memcpy(&v, (char *)&cfg + keys[i].offset, sizeof v);
				ck_assert_msg(v == tries[t], "%s gave %lld", text,
					      (long long)v);
			} else {
				ck_assert_msg(rc == -1, "accepted %s", text);
				ck_assert_msg(strncmp(err, "test.conf:2:", 12) == 0,
					      "%s", err);
				ck_assert_msg(strstr(err, keys[i].key) != NULL, "%s", err);
				ck_assert_msg(strstr(err, got) != NULL, "%s", err);
			}
			config_free(&cfg);
		}
	}
}
END_TEST

START_TEST(test_bool)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };
	for (size_t i = 0; i < 4; i++) {
		char text[64], err[ERRLEN];
		struct config cfg;
		snprintf(text, sizeof text, "maintenance = %s\nregistration=%s\n",
			 yes[i], yes[i]);
		ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
		ck_assert(cfg.maintenance);
		ck_assert(cfg.registration);
		config_free(&cfg);
		/* Start from true so "false" has something to change. */
		config_defaults(&cfg);
		cfg.maintenance = true;
		cfg.registration = true;
		snprintf(text, sizeof text, "maintenance = %s\nregistration=%s\n",
			 no[i], no[i]);
		ck_assert_int_eq(config_parse(&cfg, "t", text, strlen(text), err,
					      ERRLEN), 0);
		ck_assert(!cfg.maintenance);
		ck_assert(!cfg.registration);
		config_free(&cfg);
	}
	expect_error("maintenance = maybe\n", "test.conf:1:", "'maintenance'",
		     "maybe");
	expect_error("\n\nregistration = 2\n", "test.conf:3:", "'registration'",
		     NULL);
	expect_error("registration =\n", "test.conf:1:", "'registration'", NULL);
	expect_error("registration = on off\n", "test.conf:1:", "'registration'",
		     NULL);
}
END_TEST

START_TEST(test_log_level)
{
	static const struct {
		const char *name;
		enum log_level level;
	} levels[] = {
		{ "error", LOG_LEVEL_ERROR },
		{ "warn", LOG_LEVEL_WARN },
		{ "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};
	for (size_t i = 0; i < 4; i++) {
		char text[64], err[ERRLEN];
		struct config cfg;
		snprintf(text, sizeof text, "log_level = %s\n", levels[i].name);
		ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
		ck_assert_int_eq(cfg.log_level, levels[i].level);
		config_free(&cfg);
	}
	expect_error("log_level = verbose\n", "test.conf:1:", "'log_level'",
		     "verbose");
	expect_error("log_level = 3\n", "test.conf:1:", "'log_level'", NULL);
}
END_TEST

START_TEST(test_public_url)
{
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "https://sync.example.com", "https://sync.example.com/" },
		{ "https://sync.example.com/", "https://sync.example.com/" },
		{ "http://h:8080/weave", "http://h:8080/weave/" },
		{ "http://h/a/b/", "http://h/a/b/" },
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char text[128], err[ERRLEN];
		struct config cfg;
		snprintf(text, sizeof text, "public_url =  %s  \n", good[i].in);
		ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
		ck_assert_str_eq(cfg.public_url, good[i].out);
		config_free(&cfg);
	}
	static const char *const bad[] = {
		"public_url = ftp://example.com\n",
		"public_url = sync.example.com\n",
		"public_url = http://\n",
		"public_url = https:///path\n",
		"public_url = http://a b/\n",
		"public_url = http://a\"b/\n",
		"public_url = http://a\\b/\n",
		"public_url = HTTP://example.com\n",
		"public_url = //example.com\n",
		"public_url =\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect_error(bad[i], "test.conf:1:", "'public_url'", NULL);
}
END_TEST

/* A verify endpoint is used exactly as written: no '/' is added. */
START_TEST(test_verify_url_kept_exactly)
{
	static const char *const good[] = {
		"https://www.google.com/recaptcha/api/verify",
		"http://127.0.0.1:8000/verify",
		"http://v.example/",
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char text[128], err[ERRLEN];
		struct config cfg;
		snprintf(text, sizeof text, "captcha_verify_url = %s\n", good[i]);
		ck_assert_msg(parse_text(&cfg, text, err) == 0, "%s", err);
		ck_assert_str_eq(cfg.captcha_verify_url, good[i]);
		config_free(&cfg);
	}
	expect_error("captcha_verify_url = ftp://v.example/verify\n", "test.conf:1:",
		     "'captcha_verify_url'", NULL);
	expect_error("captcha_verify_url = http://\n", "test.conf:1:",
		     "'captcha_verify_url'", NULL);
}
END_TEST

START_TEST(test_nul_byte)
{
	static const char text[] = "db_host = a\ndb_name = we\0ave\n";
	struct config cfg;
	char err[ERRLEN];
	config_defaults(&cfg);
	ck_assert_int_eq(config_parse(&cfg, "test.conf", text, sizeof text - 1,
				      err, ERRLEN), -1);
	ck_assert_msg(strncmp(err, "test.conf:2:", 12) == 0, "%s", err);
	ck_assert_msg(strstr(err, "NUL") != NULL, "%s", err);
	config_free(&cfg);

	static const char lead[] = "\0db_host = a\n";
	config_defaults(&cfg);
	ck_assert_int_eq(config_parse(&cfg, "test.conf", lead, sizeof lead - 1,
				      err, ERRLEN), -1);
	ck_assert_msg(strncmp(err, "test.conf:1:", 12) == 0, "%s", err);
	config_free(&cfg);

	/* In the key part too. */
	static const char key[] = "db_h\0ost = a\n";
	config_defaults(&cfg);
	ck_assert_int_eq(config_parse(&cfg, "test.conf", key, sizeof key - 1,
				      err, ERRLEN), -1);
	config_free(&cfg);
}
END_TEST

/* The database password is never echoed, whatever goes wrong. */
START_TEST(test_secret_not_in_errors)
{
	struct config cfg;
	char err[ERRLEN];
	ck_assert_int_eq(parse_text(&cfg, "db_password = Hunter2xyz\n"
					  "db_password = Hunter2xyz\n", err), -1);
	ck_assert_msg(strstr(err, "test.conf:2:") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "db_password") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "Hunter2") == NULL, "secret leaked: %s", err);
	config_free(&cfg);

	ck_assert_int_eq(parse_text(&cfg, "db_password = Hunter2xyz\n"
					  "db_port = Hunter2xyz\n", err), -1);
	/* The bad port value is echoed; make sure it is the port line's. */
	ck_assert_msg(strstr(err, "test.conf:2:") != NULL, "%s", err);
	config_free(&cfg);

	ck_assert_int_eq(parse_text(&cfg, "admin_secret = Hunter2xyz-long-enough\n"
					  "admin_secret = Hunter2xyz-long-enough\n", err), -1);
	ck_assert_msg(strstr(err, "set twice") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "Hunter2") == NULL, "secret leaked: %s", err);
	config_free(&cfg);

	ck_assert_int_eq(parse_text(&cfg, "db_password Hunter2xyz\n", err), -1);
	ck_assert_msg(strstr(err, "Hunter2") == NULL, "secret leaked: %s", err);
	config_free(&cfg);
}
END_TEST

/*
 * A forgotten '=' after db_password, with a password that itself holds
 * an '=', turns the password into part of the "key". The unknown-key
 * message must not echo it.
 */
START_TEST(test_secret_not_in_unknown_key)
{
	struct config cfg;
	char err[ERRLEN];
	ck_assert_int_eq(parse_text(&cfg, "db_password Hunter2=xyz\n", err), -1);
	ck_assert_msg(strncmp(err, "test.conf:1:", 12) == 0, "%s", err);
	ck_assert_msg(strstr(err, "Hunter2") == NULL, "secret leaked: %s", err);
	config_free(&cfg);
}
END_TEST

START_TEST(test_error_truncated)
{
	struct config cfg;
	char err[16];
	memset(err, 'Z', sizeof err);
	config_defaults(&cfg);
	const char *text = "db_port = 123456789012345678901234567890\n";
	ck_assert_int_eq(config_parse(&cfg, "a-very-long-file-name.conf", text,
				      strlen(text), err, sizeof err), -1);
	ck_assert_uint_eq(strlen(err), sizeof err - 1);
	config_free(&cfg);
}
END_TEST

/* Write bytes to a fresh temporary file; returns its malloc'd path. */
static char *write_temp(const char *data, size_t len)
{
	char *path = strdup("/tmp/check_config_XXXXXX");
	ck_assert_ptr_nonnull(path);
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

START_TEST(test_load_file)
{
	static const char text[] = "# test\ndb_port = 4406\n"
				   "public_url = https://x.example\n";
	char *path = write_temp(text, sizeof text - 1);
	struct config cfg;
	char err[ERRLEN] = "";
	config_defaults(&cfg);
	ck_assert_msg(config_load(&cfg, path, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(cfg.db_port, 4406);
	ck_assert_str_eq(cfg.public_url, "https://x.example/");
	ck_assert_str_eq(cfg.db_name, "weave");
	config_free(&cfg);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_load_errors_name_file)
{
	static const char text[] = "db_port = 4406\nbogus = 1\n";
	char *path = write_temp(text, sizeof text - 1);
	struct config cfg;
	char err[ERRLEN] = "", where[128];
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, err, sizeof err), -1);
	snprintf(where, sizeof where, "%s:2:", path);
	ck_assert_msg(strncmp(err, where, strlen(where)) == 0, "%s", err);
	ck_assert_msg(strstr(err, "bogus") != NULL, "%s", err);
	config_free(&cfg);
	unlink(path);
	free(path);

	/* A NUL read from disk is caught too. */
	static const char nul[] = "db_port = 44\0\n";
	path = write_temp(nul, sizeof nul - 1);
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, err, sizeof err), -1);
	snprintf(where, sizeof where, "%s:1:", path);
	ck_assert_msg(strncmp(err, where, strlen(where)) == 0, "%s", err);
	config_free(&cfg);
	unlink(path);
	free(path);

	/* An empty file is fine. */
	path = write_temp("", 0);
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, err, sizeof err), 0);
	ck_assert_int_eq(cfg.db_port, 3306);
	config_free(&cfg);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_load_missing)
{
	struct config cfg;
	char err[ERRLEN] = "";
	config_defaults(&cfg);
	const char *path = "/nonexistent/dir/weave-check.conf";
	ck_assert_int_eq(config_load(&cfg, path, err, sizeof err), -1);
	ck_assert_msg(strncmp(err, path, strlen(path)) == 0, "%s", err);
	ck_assert_msg(strstr(err, "cannot open") != NULL, "%s", err);
	/* The defaults are left alone. */
	ck_assert_int_eq(cfg.db_port, 3306);
	config_free(&cfg);
}
END_TEST

START_TEST(test_load_too_big)
{
	size_t len = 1024 * 1024 + 10;
	char *text = malloc(len);
	ck_assert_ptr_nonnull(text);
	memset(text, '#', len);
	for (size_t i = 99; i < len; i += 100)
		text[i] = '\n';
	char *path = write_temp(text, len);
	free(text);
	struct config cfg;
	char err[ERRLEN] = "";
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "1 MiB") != NULL, "%s", err);
	config_free(&cfg);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_path_from_env)
{
	char *saved = getenv("WEAVE_CONFIG") ? strdup(getenv("WEAVE_CONFIG")) : NULL;
	ck_assert_int_eq(setenv("WEAVE_CONFIG", "/tmp/other.conf", 1), 0);
	ck_assert_str_eq(config_path_from_env(), "/tmp/other.conf");
	ck_assert_int_eq(setenv("WEAVE_CONFIG", "", 1), 0);
	ck_assert_str_eq(config_path_from_env(), WEAVE_DEFAULT_CONFIG);
	ck_assert_int_eq(unsetenv("WEAVE_CONFIG"), 0);
	ck_assert_str_eq(config_path_from_env(), WEAVE_DEFAULT_CONFIG);
	if (saved != NULL) {
		setenv("WEAVE_CONFIG", saved, 1);
		free(saved);
	}
}
END_TEST

/* node.NAME.* keys: a node's own database, its place, and the refusals. */
START_TEST(test_storage_nodes)
{
	struct config cfg;
	char err[ERRLEN];
	const char *text = "db_host = 10.0.0.1\ndb_name = accounts\ndb_user = weave\n"
			   "db_password = pw\npublic_url = https://sync.example/\n"
			   "node.n2.url = https://n2.example/weave\n"
			   "node.n2.db_name = storage2\n"
			   "node.n3.url = https://n3.example/\n"
			   "node.n3.db_host = 10.0.0.3:3307\n"
			   "node.n3.db_user = other\n";
	ck_assert_int_eq(parse_text(&cfg, text, err), 0);
	ck_assert_uint_eq(cfg.nnodes, 2);
	ck_assert_str_eq(cfg.nodes[0].name, "n2");
	ck_assert_str_eq(cfg.nodes[0].url, "https://n2.example/weave/");
	/* Neither host nor socket: the account database's server. */
	ck_assert_str_eq(cfg.nodes[0].db_host, "10.0.0.1");
	ck_assert_str_eq(cfg.nodes[0].db_name, "storage2");
	ck_assert_str_eq(cfg.nodes[0].db_user, "weave");
	ck_assert_str_eq(cfg.nodes[0].db_password, "pw");
	/* A host of its own; the rest inherited. */
	ck_assert_str_eq(cfg.nodes[1].db_host, "10.0.0.3:3307");
	ck_assert_str_eq(cfg.nodes[1].db_name, "accounts");
	ck_assert_str_eq(cfg.nodes[1].db_user, "other");
	ck_assert_uint_eq(config_node_place(&cfg, NULL), 0);
	ck_assert_uint_eq(config_node_place(&cfg, "https://sync.example/"), 0);
	ck_assert_uint_eq(config_node_place(&cfg, "https://n2.example/weave/"), 1);
	ck_assert_uint_eq(config_node_place(&cfg, "https://n3.example/"), 2);
	ck_assert_uint_eq(config_node_place(&cfg, "https://n4.example/"), 0);
	config_free(&cfg);

	expect_error("node.n2.db_name = x\n", "test.conf: node 'n2' has no node.n2.url", NULL, NULL);
	expect_error("node.a.url = http://x.example/\nnode.b.url = http://x.example/\n"
		     "node.a.db_name = a\nnode.b.db_name = b\n",
		     "test.conf: nodes 'a' and 'b' have the same url", NULL, NULL);
	expect_error("public_url = http://x.example/\nnode.a.url = http://x.example\n"
		     "node.a.db_name = a\n", "test.conf: node 'a'", "public_url", NULL);
	expect_error("node.a.url = http://x.example/\n", "test.conf: node 'a'",
		     "account database", NULL);
	expect_error("node.A.url = http://x.example/\n", "test.conf:1:", "a-z", NULL);
	expect_error("node.a.colour = blue\n", "test.conf:1:", "unknown key 'node.a.colour'", NULL);
	expect_error("node.a.url = ftp://x/\n", "test.conf:1:", "node.a.url", "http");
	expect_error("node.a.db_name = x\nnode.a.db_name = y\n", "test.conf:2:", "set twice",
		     NULL);
	expect_error("node.a.db_password = hunter2-secret\nnode.a.db_password = x\n",
		     "test.conf:2:", "set twice", NULL);
	char many[2048] = "";
	for (int n = 0; n <= CONFIG_MAX_NODES; n++) {
		char line[96];
		snprintf(line, sizeof line, "node.n%d.url = http://n%d.example/\n", n, n);
		strcat(many, line);
	}
	expect_error(many, "test.conf:17:", "too many nodes", NULL);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");

	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_empty_text);
	tcase_add_test(tc, test_every_key);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_empty_strings);
	tcase_add_test(tc, test_parse_twice);
	suite_add_tcase(s, tc);

	tc = tcase_create("values");
	tcase_add_test(tc, test_int_ranges);
	tcase_add_test(tc, test_bool);
	tcase_add_test(tc, test_log_level);
	tcase_add_test(tc, test_public_url);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_short_secrets);
	tcase_add_test(tc, test_metrics_settings);
	tcase_add_test(tc, test_unknown_key);
	tcase_add_test(tc, test_no_equals);
	tcase_add_test(tc, test_repeated_key);
	tcase_add_test(tc, test_bad_int);
	tcase_add_test(tc, test_nul_byte);
	tcase_add_test(tc, test_secret_not_in_errors);
	tcase_add_test(tc, test_secret_not_in_unknown_key);
	tcase_add_test(tc, test_error_truncated);
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_test(tc, test_verify_url_kept_exactly);
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_load_errors_name_file);
	tcase_add_test(tc, test_load_missing);
	tcase_add_test(tc, test_load_too_big);
	tcase_add_test(tc, test_path_from_env);
	tcase_add_test(tc, test_storage_nodes);
	suite_add_tcase(s, tc);

	return s;
}
