/* admin_check.c - weave-admin check: what is wrong with this installation, one line per problem with its fix. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <linux/magic.h>
#include <json-c/json.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "admin.h"
#include "change_board.h"
#include "mail.h"
#include "util.h"

/*
 * Output: "ok: WHAT" for what is right, "note: WHAT" for a choice worth
 * knowing, and "problem: WHAT -- fix: HOW" for each thing that is wrong.
 * Problems make the exit status 1.
 */
static int problems, warnings;
/* check --json: the findings gathered here instead of printed. */
static struct json_object *findings;

static void say(const char *level, const char *fix, const char *fmt, va_list ap)
{
	char what[4096];
	vsnprintf(what, sizeof what, fmt, ap);
	if (findings == NULL) {
		printf("%s: %s", level, what);
		if (fix != NULL)
			printf(" -- fix: %s", fix);
		putchar('\n');
		return;
	}
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "level", json_object_new_string(level));
	json_object_object_add(o, "what", json_object_new_string(what));
	if (fix != NULL)
		json_object_object_add(o, "fix", json_object_new_string(fix));
	json_object_array_add(findings, o);
}

static void say_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_problem(const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say_warning(const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Not a problem yet but worth fixing (a certificate close to expiry, the
 * account cache on a disk): said, exit status 0. */
static void say_warning(const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("warning", fix, fmt, ap);
	va_end(ap);
	warnings++;
}

static void say_ok(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("ok", NULL, fmt, ap);
	va_end(ap);
}

static void say_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("note", NULL, fmt, ap);
	va_end(ap);
}

static void say_problem(const char *fix, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say("problem", fix, fmt, ap);
	va_end(ap);
	problems++;
}

/* The closing line: a count, printed only as text. */
static void say_total(const char *rest)
{
	if (findings != NULL)
		return;
	char also[64] = "";
	if (warnings > 0)
		snprintf(also, sizeof also, ", %d warning%s", warnings, warnings == 1 ? "" : "s");
	if (problems == 0 && rest[0] == '\0')
		printf("no problems found%s\n", also);
	else
		printf("%d problem%s found%s%s\n", problems, problems == 1 ? "" : "s", also, rest);
}

/* ---- the configuration file -------------------------------------------------- */

static int can_read(void *ctx)
{
	int fd = open(ctx, O_RDONLY);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static bool check_config_file(const char *path, const struct apache_user *www)
{
	struct stat st;
	char fix[1200];
	if (stat(path, &st) != 0) {
		snprintf(fix, sizeof fix, "run 'weave-admin setup', or copy weave.conf.example "
			 "to %s (or pass --config FILE)", path);
		say_problem(fix, "no configuration file %s (%s)", path, strerror(errno));
		return false;
	}
	bool mode_ok = true;
	if (www != NULL && st.st_uid == www->uid) {
		snprintf(fix, sizeof fix, "chown root:%s %s", www->group, path);
		say_problem(fix, "%s belongs to the Apache user %s, so the server could rewrite "
			    "its own configuration", path, www->name);
		mode_ok = false;
	} else if (st.st_uid != 0) {
		struct passwd *owner = getpwuid(st.st_uid);
		snprintf(fix, sizeof fix, "chown root:%s %s", www ? www->group : "www-data", path);
		say_problem(fix, "%s belongs to %s (uid %u), not root: that user can change the "
			    "database credentials and every setting of the server", path,
			    owner ? owner->pw_name : "a user", (unsigned)st.st_uid);
		mode_ok = false;
	}
	if (st.st_mode & S_IRWXO) {
		snprintf(fix, sizeof fix, "chmod 0640 %s", path);
		say_problem(fix, "%s is open to every user (mode %04o) but holds the "
			    "database password", path, (unsigned)(st.st_mode & 07777));
		mode_ok = false;
	} else if (st.st_mode & S_IWGRP) {
		snprintf(fix, sizeof fix, "chmod 0640 %s", path);
		say_problem(fix, "the group of %s may write it (mode %04o)", path,
			    (unsigned)(st.st_mode & 07777));
		mode_ok = false;
	}
	if (www != NULL && as_apache_user(www, can_read, (void *)path) != 0) {
		snprintf(fix, sizeof fix, "chown root:%s %s && chmod 0640 %s", www->group, path,
			 path);
		say_problem(fix, "the Apache user %s cannot read %s: every request gets 503",
			    www->name, path);
		mode_ok = false;
	}
	if (mode_ok)
		say_ok("%s: owner %u, group %u, mode %04o%s", path, (unsigned)st.st_uid,
		       (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
		       www != NULL ? ", readable by the Apache user" : "");
	return true;
}

/* Contradictions config_load() cannot see, as each key is valid alone. */
static void check_settings(const struct config *c, const char *path)
{
	char fix[1200];
	if (c->registration && c->captcha && c->captcha_verify_url == NULL &&
	    c->captcha_secret == NULL) {
		snprintf(fix, sizeof fix, "set captcha_secret in %s to a random string "
			 "(weave-admin setup writes one), or captcha = off", path);
		say_problem(fix, "registration and captcha are on but captcha_secret is unset: "
			    "the CAPTCHA page and every sign-up answer 503");
	}
	if (c->captcha_verify_url != NULL &&
	    (c->captcha_public_key == NULL || c->captcha_private_key == NULL)) {
		snprintf(fix, sizeof fix, "set captcha_public_key and captcha_private_key in %s, "
			 "or remove captcha_verify_url", path);
		say_problem(fix, "captcha_verify_url is set without both of its keys");
	}
	if (c->registration && !c->captcha)
		say_note("registration is on without a captcha: anyone may create accounts "
			 "(up to registration_limit per address and window)");
	if (c->public_url == NULL) {
		say_note("public_url is unset: node URLs are built from each request's Host "
			 "header, and no request through the server can be checked here; set "
			 "public_url = https://HOST/weave/ in %s", path);
	} else if (strncmp(c->public_url, "https://", 8) != 0) {
		snprintf(fix, sizeof fix, "serve the mount point over HTTPS and set public_url = "
			 "https://... in %s (weave-admin setup does both)", path);
		say_problem(fix, "public_url %s is not https: clients send the account "
			    "password with every request", c->public_url);
	} else {
		say_ok("public_url %s", c->public_url);
	}
	if (c->registration && c->admin_secret == NULL)
		say_note("admin_secret is unset: accounts are created only by sign-up and "
			 "weave-admin");
	if (c->cache_secret == NULL)
		say_note("cache_secret is unset: each process verifies passwords for itself "
			 "(set cache_secret = $(weave-admin secret) in %s)", path);
}

/* ---- the account cache file ---------------------------------------------------- */

/* The folder of path ("/" for a file there, "." without any '/'). */
static void folder_of(const char *path, char *out, size_t cap)
{
	snprintf(out, cap, "%s", path);
	char *slash = strrchr(out, '/');
	if (slash == NULL)
		snprintf(out, cap, ".");
	else if (slash == out)
		out[1] = '\0';
	else
		*slash = '\0';
}

static int can_open_board(void *ctx)
{
	const char *path = ctx;
	int fd = open(path, O_RDWR);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != ENOENT)
		return -1;
	/* Not there yet: the first process creates it in its folder. */
	char dir[4096];
	if (strchr(path, '/') == NULL)
		return -1;
	folder_of(path, dir, sizeof dir);
	return access(dir, W_OK | X_OK);
}

/* One file the server's processes share: the Apache user opens or makes it. */
static void check_shared_file(const char *conf_path, const struct apache_user *www,
			      const char *file, const char *what, const char *without)
{
	char fix[5200];
	if (as_apache_user(www, can_open_board, (void *)file) == 0) {
		say_ok("the Apache user %s can open the %s %s", www->name, what, file);
		return;
	}
	struct stat st;
	if (stat(file, &st) == 0)
		snprintf(fix, sizeof fix, "chown %s %s (or remove it: the next server process "
			 "creates it)", www->name, file);
	else
		snprintf(fix, sizeof fix, "set account_cache_file in %s to a file in a folder "
			 "%s can write (e.g. /dev/shm/weave-server-cache)", conf_path, www->name);
	say_problem(fix, "the Apache user %s cannot open or create the %s %s: %s",
		    www->name, what, file, without);
}

/*
 * The file's folder on a memory file system: on a disk's, the kernel
 * tracks each page the processes write for writeback and write-protects
 * it again afterwards, so polls pay page faults and the disk takes writes
 * for what is only a cache (docs/performance.md, "Session 11: the
 * board's file system").
 */
static void check_board_in_memory(const char *board)
{
	char dir[4096];
	struct statfs fs;
	folder_of(board, dir, sizeof dir);
	if (statfs(dir, &fs) != 0 || fs.f_type == TMPFS_MAGIC ||
	    fs.f_type == RAMFS_MAGIC)
		return;
	say_warning("set account_cache_file to a file in /dev/shm or /run (or leave it unset)",
		    "the account cache file %s is on a disk's file system: the server's "
		    "processes write to it as they answer, and each page they write then "
		    "costs page faults and a write to the disk",
		    board);
}

static void check_account_cache(const struct config *c, const char *path,
				 const struct apache_user *www)
{
	char board[4096], changes[4200];
	if (c->account_cache_seconds == 0) {
		say_note("account_cache_seconds = 0: every request reads its account row");
		return;
	}
	if (change_board_path(c, board, sizeof board) < 0) {
		say_problem("set a shorter account_cache_file", "account_cache_file is too long");
		return;
	}
	check_board_in_memory(board);
	if (www == NULL)
		return;
	check_shared_file(path, www, board, "account cache file",
			  "every process then reads the database on each request");
	/* Beside it, change_log.h's state: changes made through other hosts. */
	snprintf(changes, sizeof changes, "%s.changes", board);
	check_shared_file(path, www, changes, "account change log file",
			  "changes made through other web servers then show only within "
			  "account_cache_seconds");
	/* And metrics.h's counters, named after the same file. */
	snprintf(changes, sizeof changes, "%s.metrics", board);
	check_shared_file(path, www, changes, "metrics file",
			  "the metrics URL then has no counters");
}

/* ---- the database ----------------------------------------------------------------- */

static void check_database(const char *path)
{
	char fix[1200], first[200];
	int64_t version;
	size_t missing;
	enum db_status st = db_connect();
	if (st != DB_OK) {
		snprintf(fix, sizeof fix, "start MariaDB/MySQL, or correct db_host, db_port, "
			 "db_socket, db_user, db_password in %s", path);
		say_problem(fix, "cannot reach database %s as %s: %s", admin_cfg.db_name,
			    admin_cfg.db_user, db_last_error());
		return;
	}
	char why[300];
	if (!db_server_supported(why, sizeof why)) {
		say_problem("install MariaDB 10.5 or newer (Debian 11 and later ship it)",
			    "%s", why);
		return;
	}
	st = schema_inspect(&version, &missing, first, sizeof first);
	if (st != DB_OK) {
		say_problem("check the grants of db_user (GRANT ALL ON db_name.*)",
			    "cannot read the schema of %s: %s", admin_cfg.db_name, db_last_error());
		return;
	}
	if (version == 0) {
		say_problem("weave-admin db init", "database %s has no weave schema",
			    admin_cfg.db_name);
		return;
	}
	if (missing > 0) {
		say_problem("weave-admin db upgrade",
			    "database %s lacks %zu table(s) or index(es), first %s",
			    admin_cfg.db_name, missing, first);
		return;
	}
	say_ok("database %s reachable as %s, schema version %" PRId64 ", every table and "
	       "index present", admin_cfg.db_name, admin_cfg.db_user, version);
}

/* ---- mail ----------------------------------------------------------------------------- */

static bool mta_optional;

void check_mta_optional(bool optional)
{
	mta_optional = optional;
}

static void check_mail(const struct config *c, const char *path, const char *mail_to)
{
	char program[1024], fix[1400];
	size_t n = strcspn(c->sendmail_command, " \t");
	snprintf(program, sizeof program, "%.*s", (int)(n < 1000 ? n : 1000), c->sendmail_command);
	if (!program_exists(program) && mta_optional) {
		say_note("no mail transfer agent (sendmail_command '%s' does not exist): the "
			 "server works, but password-reset mails will not be sent. To send them: "
			 "apt-get install exim4-daemon-light (or msmtp-mta to relay through "
			 "another server), or set sendmail_command in %s; then 'weave-admin "
			 "check --mail YOU@EXAMPLE.ORG' sends a test", program, path);
		return;
	}
	if (!program_exists(program)) {
		snprintf(fix, sizeof fix, "install a mail transfer agent (Debian: apt-get install "
			 "exim4-daemon-light, or msmtp-mta for a relay), or set sendmail_command in %s",
			 path);
		say_problem(fix, "sendmail_command '%s' does not exist: password-reset mails "
			    "cannot be sent", program);
		return;
	}
	if (mail_to == NULL) {
		say_ok("sendmail_command %s exists (--mail ADDRESS sends a test)", program);
		return;
	}
	const char *from = c->mail_from ? c->mail_from : "weave-admin";
	if (mail_send(c->sendmail_command, from, mail_to, "weave-server: test mail",
		      "This is a test from 'weave-admin check --mail'. Password-reset mails "
		      "will come the same way.\n") != 0) {
		snprintf(fix, sizeof fix, "see the mail system's log, or correct sendmail_command "
			 "in %s", path);
		say_problem(fix, "'%s' refused the test mail to %s", c->sendmail_command, mail_to);
		return;
	}
	say_ok("test mail to %s handed to %s", mail_to, program);
}

/* ---- Apache ------------------------------------------------------------------------------- */

/* A directive of a module that is off names the module to enable. */
static const char *configtest_fix(const char *error)
{
	if (strstr(error, "Invalid command 'Fcgid") != NULL ||
	    strstr(error, "fcgid-script") != NULL)
		return "mod_fcgid is not enabled: a2enmod fcgid && apache2ctl graceful "
		       "(Debian: apt-get install libapache2-mod-fcgid)";
	if (strstr(error, "Invalid command 'SSL") != NULL)
		return "mod_ssl is not enabled: a2enmod ssl && apache2ctl graceful";
	if (strstr(error, "Invalid command 'CGIPassAuth'") != NULL)
		return "CGIPassAuth needs Apache 2.4.13 or newer: upgrade apache2";
	return "correct the line of the file it names, then apache2ctl graceful";
}

static void check_apache(const struct config *c, const char *path, struct apache_view *v)
{
	char fix[1400];
	const char *ctl = apache_ctl();
	if (ctl == NULL || apache_view_load(v) != 0) {
		say_note("no apache2ctl or apachectl here: Apache is not checked");
		return;
	}
	if (!v->configtest_ok)
		say_problem(configtest_fix(v->configtest_error),
			    "Apache's configuration test fails: %s", v->configtest_error);
	if (v->alias_target[0] == '\0') {
		say_problem("weave-admin setup (or: a2enconf weave && apache2ctl graceful; "
			    "see docs/admin.md, Apache)",
			    "no loaded Apache file has the 'Alias /weave .../weave.fcgi' line: "
			    "the snippet is not enabled");
		return;
	}
	say_ok("Apache mounts %s at %s (%s)", v->alias_target, v->mount, v->snippet);
	if (v->settings_file[0] == '\0')
		say_problem("a2enconf weave && apache2ctl graceful (weave-admin setup writes "
			    "conf-available/weave.conf)",
			    "the mount point is loaded but not the snippet's server-wide settings "
			    "(FcgidPassHeader, FcgidMaxRequestLen, the process pool): the snippet "
			    "is not enabled");
	const char *settings = v->settings_file[0] ? v->settings_file : v->snippet;
	if (access(v->alias_target, X_OK) != 0) {
		snprintf(fix, sizeof fix, "make install, or correct the Alias line in %s",
			 v->snippet);
		say_problem(fix, "the Alias names %s, which is not an executable file",
			    v->alias_target);
	}
	const char *served = v->weave_config[0] ? v->weave_config : WEAVE_DEFAULT_CONFIG;
	if (strcmp(served, path) != 0) {
		snprintf(fix, sizeof fix, "check that file (weave-admin --config %s check), or "
			 "set FcgidInitialEnv WEAVE_CONFIG %s in %s", served, path, v->snippet);
		say_problem(fix, "Apache's weave.fcgi reads %s, not %s", served, path);
	}
	if (!v->encoded_slashes_nodecode)
		say_problem("add 'AllowEncodedSlashes NoDecode' inside the <VirtualHost> that "
			    "serves the mount point (it is not inherited from the server level)",
			    "no 'AllowEncodedSlashes NoDecode': Apache answers its own 404 to "
			    "record ids with %%2F");
	int64_t len = v->fcgid_max_request_len < 0 ? 131072 : v->fcgid_max_request_len;
	if (len < c->max_request_bytes) {
		snprintf(fix, sizeof fix, "set FcgidMaxRequestLen %" PRId64 " in %s (twice "
			 "max_request_bytes, so larger bodies get 413 from the server)",
			 c->max_request_bytes * 2, settings);
		say_problem(fix, "FcgidMaxRequestLen %" PRId64 "%s is below max_request_bytes "
			    "%" PRId64 ": large uploads fail with mod_fcgid's bare 500", len,
			    v->fcgid_max_request_len < 0 ? " (mod_fcgid's default)" : "",
			    c->max_request_bytes);
	} else {
		say_ok("FcgidMaxRequestLen %" PRId64 " >= max_request_bytes %" PRId64, len,
		       c->max_request_bytes);
	}
}

/* ---- one request through public_url ------------------------------------------------------ */

struct answer {
	long status;
	char content_type[128];
	struct buf body;
	char error[CURL_ERROR_SIZE];
	CURLcode code;
};

static size_t keep_body(char *data, size_t size, size_t n, void *ctx)
{
	struct answer *a = ctx;
	buf_append(&a->body, data, size * n); /* beyond its max: cut */
	return size * n;
}

static void fetch(const char *url, const char *cafile, struct answer *a)
{
	memset(a, 0, sizeof *a);
	buf_init(&a->body, 64 * 1024);
	CURL *h = curl_easy_init();
	if (h == NULL) {
		a->code = CURLE_FAILED_INIT;
		return;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, a->error);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "weave-admin-check/" PACKAGE_VERSION);
	if (cafile != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, cafile);
	a->code = curl_easy_perform(h);
	if (a->code == CURLE_OK) {
		char *type = NULL;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a->status);
		curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &type);
		snprintf(a->content_type, sizeof a->content_type, "%s", type ? type : "");
	} else if (a->error[0] == '\0') {
		snprintf(a->error, sizeof a->error, "%s", curl_easy_strerror(a->code));
	}
	curl_easy_cleanup(h);
}

static bool tls_untrusted(CURLcode code)
{
	return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
	       code == CURLE_SSL_ISSUER_ERROR;
}

/* GET url; "" on success with *a filled, else a problem was reported. */
static bool fetch_reported(const char *url, const char **cafile, const struct apache_view *v,
			   const char *public_url, struct answer *a)
{
	fetch(url, *cafile, a);
	if (tls_untrusted(a->code) && *cafile == NULL && v->certificate[0] != '\0') {
		/* A self-signed certificate: trust the one Apache serves, once. */
		buf_free(&a->body);
		*cafile = v->certificate;
		fetch(url, *cafile, a);
		if (a->code == CURLE_OK)
			say_note("the certificate of %s is %s, which this host does not trust by "
				 "itself (self-signed?): each client accepts it once by visiting %s",
				 public_url, v->certificate, public_url);
	}
	if (a->code == CURLE_OK)
		return true;
	say_problem(tls_untrusted(a->code)
			    ? "install a certificate for the host of public_url (weave-admin "
			      "setup --cert FILE --key FILE), or correct public_url"
		    : a->code == CURLE_COULDNT_RESOLVE_HOST
			    ? "the name does not resolve: give it a DNS A/AAAA record pointing "
			      "at this server (or, for a test, a line in /etc/hosts), or "
			      "correct public_url"
			    : "start Apache (apache2ctl start or systemctl start apache2), "
			      "or correct public_url",
		    "no answer from %s: %s", url, a->error);
	buf_free(&a->body);
	return false;
}

static bool from_weave(const struct answer *a)
{
	return strncasecmp(a->content_type, "application/json", 16) == 0;
}

static void check_request(const struct config *c, const struct apache_view *v,
			  const char *certificate)
{
	if (c->public_url == NULL)
		return;
	char url[2048];
	struct answer a;
	const char *cafile = certificate;

	/* The node of an account that does not exist: the server reads the
	 * database and answers its own 404 (JSON), with no credentials. */
	snprintf(url, sizeof url, "%suser/1.0/weave-admin-check/node/weave", c->public_url);
	if (!fetch_reported(url, &cafile, v, c->public_url, &a))
		return;
	bool served = a.status == 404 && from_weave(&a);
	if (a.status == 503) {
		say_problem("read Apache's error log: weave.fcgi says there why (its "
			    "configuration, or the database)",
			    "%s answers 503: the server cannot serve", c->public_url);
	} else if (!served) {
		say_problem("check the Alias line and the <VirtualHost> of public_url's host "
			    "and port",
			    "%s was answered %ld (%s), not by weave.fcgi", url, a.status,
			    a.content_type[0] ? a.content_type : "no type");
	}
	buf_free(&a.body);

	/* A %2F inside a collection name is the application's 400, never
	 * Apache's 404 page (which it answers without AllowEncodedSlashes). */
	snprintf(url, sizeof url, "%s1.1/weave-admin-check/storage/a%%2Fb", c->public_url);
	if (!fetch_reported(url, &cafile, v, c->public_url, &a))
		return;
	if (!from_weave(&a) || a.status == 404) {
		say_problem("add 'AllowEncodedSlashes NoDecode' to the <VirtualHost> of "
			    "public_url's host and port",
			    "%s was answered %ld (%s) by something other than weave.fcgi: "
			    "record ids with %%2F would fail", url, a.status,
			    a.content_type[0] ? a.content_type : "no type");
	} else if (served) {
		say_ok("requests through %s reach weave.fcgi, %%2F included", c->public_url);
	}
	buf_free(&a.body);
}

/*
 * With public_url on https, the same mount point over plain HTTP must not
 * reach weave.fcgi: a client sent there would send its password in clear.
 * A redirect, a refusal or another site's page are all fine.
 */
static void check_plain_http(const struct config *c)
{
	if (c->public_url == NULL || strncmp(c->public_url, "https://", 8) != 0)
		return;
	size_t host_len;
	const char *host = url_host(c->public_url, false, &host_len);
	const char *path = strchr(c->public_url + 8, '/');
	char url[2048];
	struct answer a;
	snprintf(url, sizeof url, "http://%.*s%suser/1.0/weave-admin-check/node/weave",
		 (int)host_len, host, path ? path : "/");
	fetch(url, NULL, &a);
	if (a.code == CURLE_OK && from_weave(&a))
		say_problem("serve the mount point from the HTTPS <VirtualHost> only (weave-admin "
			    "setup puts the Alias there); remove any 'Alias /weave' outside it, "
			    "or redirect port 80 to https",
			    "%s is answered by weave.fcgi over plain HTTP: passwords would "
			    "cross the network in clear", url);
	else
		say_ok("plain HTTP (%.*s port 80) does not reach weave.fcgi", (int)host_len, host);
	buf_free(&a.body);
}

#define CERT_WARN_DAYS 21

/* Days left on the certificate clients see; expired is a problem, close
 * to expiry a warning. */
static void check_certificate(const char *path)
{
	if (path == NULL || path[0] == '\0')
		return;
	FILE *f = fopen(path, "r");
	X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
	if (f != NULL)
		fclose(f);
	int days = 0, secs = 0;
	if (x == NULL || ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)) != 1) {
		X509_free(x);
		say_problem("check SSLCertificateFile in the HTTPS <VirtualHost>",
			    "cannot read the certificate %s", path);
		return;
	}
	X509_free(x);
	char fix[1200];
	snprintf(fix, sizeof fix, "renew it (certbot renew, or weave-admin setup --cert FILE "
		 "--key FILE with a new one; remove %s and run setup again for a new "
		 "self-signed one), then apache2ctl graceful", path);
	if (days < 0 || (days == 0 && secs <= 0))
		say_problem(fix, "the certificate %s has expired: clients refuse the server",
			    path);
	else if (days < CERT_WARN_DAYS)
		say_warning(fix, "the certificate %s expires in %d day%s", path, days,
			    days == 1 ? "" : "s");
	else
		say_ok("the certificate %s is valid for %d more days", path, days);
}

/* ---- the whole check ------------------------------------------------------------------------ */

int check_installation(const char *mail_to, const char *certificate)
{
	const char *path = admin_config_path;
	char err[512];
	struct apache_user www_user;
	const struct apache_user *www = NULL;
	struct apache_view view;

	problems = warnings = 0;
	memset(&view, 0, sizeof view);
	if (geteuid() != 0)
		say_note("not run as root: what the Apache user can open is not checked "
			 "(run 'weave-admin check' as root for that)");
	else if (apache_user(NULL, &www_user) == 0)
		www = &www_user;
	else
		say_note("no Apache user (www-data, apache, www) on this host: file access "
			 "is not checked as the server's user");
	config_free(&admin_cfg);
	config_defaults(&admin_cfg);
	bool exists = check_config_file(path, www);
	if (!exists || config_load(&admin_cfg, path, err, sizeof err) < 0) {
		if (exists)
			say_problem("correct that line (weave.conf(5) lists every key)", "%s", err);
		say_total("; the rest is checked once the configuration loads");
		return problems;
	}
	say_ok("%s loads", path);
	db_disconnect();
	db_configure(&admin_cfg);
	check_settings(&admin_cfg, path);
	check_account_cache(&admin_cfg, path, www);
	check_database(path);
	check_mail(&admin_cfg, path, mail_to);
	check_apache(&admin_cfg, path, &view);
	check_request(&admin_cfg, &view, certificate);
	check_plain_http(&admin_cfg);
	check_certificate(certificate != NULL ? certificate : view.certificate);
	say_total("");
	return problems;
}

int cmd_check(const struct args *a)
{
	const char *mail_to = a->opt[OPT_MAIL];
	if (mail_to != NULL && (strpbrk(mail_to, "\r\n") != NULL || strchr(mail_to, '@') == NULL))
		return usage_error("--mail needs an e-mail address");
	if (has_opt(a, OPT_JSON))
		findings = json_object_new_array();
	int n = check_installation(mail_to, NULL);
	if (findings != NULL) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "version", json_object_new_string(PACKAGE_VERSION));
		json_object_object_add(o, "problems", json_object_new_int(n));
		json_object_object_add(o, "warnings", json_object_new_int(warnings));
		json_object_object_add(o, "findings", findings);
		findings = NULL;
		json_print(o);
	}
	return n == 0 ? EXIT_OK : EXIT_FAILED;
}
