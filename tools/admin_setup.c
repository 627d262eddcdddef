/*
 * admin_setup.c - weave-admin setup: database, weave.conf, Apache and HTTPS in one go.
 * Over 600 lines: one sequence of steps, each checking what is already
 * right before it changes anything; read top to bottom, as it runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "admin.h"
#include "util.h"

#ifndef WEAVE_APACHE_SNIPPET
#define WEAVE_APACHE_SNIPPET "/usr/local/share/weave-server/apache-weave.conf"
#endif

/* Where MariaDB and MySQL on Debian listen locally, and its admin user
 * reaches them without a password (unix_socket authentication). */
#define DB_SOCKET "/run/mysqld/mysqld.sock"
#define APACHE_DIR "/etc/apache2"
#define APACHE_CONF APACHE_DIR "/conf-available/weave.conf"
#define APACHE_SITE APACHE_DIR "/sites-available/weave-ssl.conf"
#define MOUNT "/weave"

struct setup {
	char host[256];
	const char *cert, *key;     /* given, or NULL: self-signed */
	char cert_path[1024], key_path[1024];
	const char *first_user;
	const char *password_file;
	struct apache_user www;
	bool apache_changed;
	bool ask; /* on a terminal without --yes: ask before replacing an edited file */
};

/* ---- small file helpers --------------------------------------------------------- */

static int read_whole(const char *path, struct buf *out)
{
	FILE *f = fopen(path, "r");
	char chunk[4096];
	size_t n;
	if (f == NULL)
		return -1;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		if (buf_append(out, chunk, n) < 0) {
			fclose(f);
			return -1;
		}
	fclose(f);
	return 0;
}

/*
 * Write content to path (through a temporary file and rename) unless it
 * already holds exactly that with this mode and owner. 1 written, 0
 * unchanged, -1 failed (message printed).
 */
static int write_if_changed(const char *path, const char *content, mode_t mode, uid_t uid,
			    gid_t gid)
{
	struct buf old;
	struct stat st;
	buf_init(&old, 1024 * 1024);
	bool same = read_whole(path, &old) == 0 && old.data != NULL &&
		    strcmp(old.data, content) == 0;
	buf_free(&old);
	if (same && stat(path, &st) == 0 && (st.st_mode & 07777) == mode && st.st_uid == uid &&
	    st.st_gid == gid)
		return 0;
	if (same) {
		if (chown(path, uid, gid) != 0 || chmod(path, mode) != 0)
			return fail(-1, "cannot set the owner and mode of %s: %s", path,
				    strerror(errno));
		return 1;
	}
	char tmp[1100];
	snprintf(tmp, sizeof tmp, "%s.new", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fail(-1, "cannot write %s: %s", tmp, strerror(errno));
	size_t len = strlen(content);
	bool ok = write(fd, content, len) == (ssize_t)len && fchown(fd, uid, gid) == 0 &&
		  fchmod(fd, mode) == 0 && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return fail(-1, "cannot write %s: %s", path, strerror(errno));
	}
	return 1;
}

static void step(const char *what, int changed)
{
	printf("%-8s %s\n", changed ? "changed" : "ok", what);
}

/* ---- files setup owns, kept when edited locally ------------------------------- */

#define STAMP "# Written by weave-admin setup; sha256 of the lines above: "

static void sha256_hex(const char *text, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_Digest(text, len, md, &n, EVP_sha256(), NULL);
	for (unsigned int i = 0; i < n && i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* content followed by the stamp line that proves it unedited later. */
static void stamped(const char *content, struct buf *out)
{
	char hex[65] = "";
	sha256_hex(content, strlen(content), hex);
	buf_printf(out, "%s" STAMP "%s\n", content, hex);
}

/* Does text end with a stamp that matches the lines above it? */
static bool unedited(const char *text)
{
	size_t len = strlen(text);
	if (len < 2 || text[len - 1] != '\n')
		return false;
	const char *last = text + len - 1;
	while (last > text && last[-1] != '\n')
		last--;
	size_t stamp_len = strlen(STAMP);
	if (strncmp(last, STAMP, stamp_len) != 0 || strlen(last + stamp_len) != 65)
		return false;
	char hex[65] = "";
	sha256_hex(text, (size_t)(last - text), hex);
	return memcmp(hex, last + stamp_len, 64) == 0;
}

static int copy_aside(const char *path, const char *suffix, const char *text, char *out,
		      size_t cap)
{
	snprintf(out, cap, "%s%s", path, suffix);
	return write_if_changed(out, text, 0644, 0, 0) < 0 ? -1 : 0;
}

/*
 * Write a file setup owns (an Apache file): new, unchanged, or replaced
 * when it is still what setup wrote (the old one kept as FILE.weave-old).
 * A file edited since (its stamp does not match) is kept: setup's
 * version goes beside it as FILE.weave-new, unless the admin, asked on a
 * terminal, says to replace it. 1 written, 0 unchanged, KEPT_ASIDE,
 * or -1 failed (message printed).
 */
#define KEPT_ASIDE 2
static int write_owned(const char *path, const char *content, bool ask)
{
	struct buf want, old;
	char aside[1100];
	int rc;
	buf_init(&want, 2 * 1024 * 1024);
	buf_init(&old, 2 * 1024 * 1024);
	stamped(content, &want);
	bool exists = read_whole(path, &old) == 0 && old.data != NULL;
	bool same = exists && strcmp(old.data, want.data) == 0;
	bool replace = exists && !same && unedited(old.data);
	if (exists && !same && !replace && ask) {
		printf("note     %s was edited since setup wrote it\n", path);
		replace = confirm("Replace it (your version is kept as .weave-old)?");
	}
	if (!exists || same) {
		rc = write_if_changed(path, want.data, 0644, 0, 0);
	} else if (replace) {
		rc = copy_aside(path, ".weave-old", old.data, aside, sizeof aside);
		if (rc == 0)
			rc = write_if_changed(path, want.data, 0644, 0, 0);
		if (rc > 0)
			printf("note     the previous %s is kept as %s\n", path, aside);
	} else {
		rc = copy_aside(path, ".weave-new", want.data, aside, sizeof aside);
		if (rc == 0) {
			rc = KEPT_ASIDE;
			printf("kept     %s (edited locally); setup's version is %s: compare with "
			       "'diff -u %s %s', and move it over the file to take it\n",
			       path, aside, path, aside);
		}
	}
	buf_free(&want);
	buf_free(&old);
	return rc;
}

/* n random bytes as 2n hex digits. */
static void random_hex(char *out, size_t n)
{
	unsigned char bytes[64];
	if (n > sizeof bytes || RAND_bytes(bytes, (int)n) != 1) {
		fprintf(stderr, "weave-admin: no randomness\n");
		exit(EXIT_FAILED);
	}
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", bytes[i]);
}

static bool valid_host(const char *h)
{
	size_t len = strlen(h);
	if (len == 0 || len > 253 || h[0] == '-' || h[0] == '.')
		return false;
	for (const char *p = h; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
			return false;
	return true;
}

static bool is_ipv4(const char *h)
{
	return strspn(h, "0123456789.") == strlen(h);
}

/* ---- weave.conf ----------------------------------------------------------------------- */

static int mkdir_parents(const char *path, mode_t mode)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s", path);
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, mode) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return 0;
}

static int setup_config(struct setup *s)
{
	const char *path = admin_config_path;
	char err[512];
	struct stat st;

	if (stat(path, &st) != 0) {
		char db_password[49], captcha_secret[65], cache_secret[65], text[2048], when[64];
		time_t now = time(NULL);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
		random_hex(db_password, 24);
		random_hex(captcha_secret, 32);
		random_hex(cache_secret, 32);
		snprintf(text, sizeof text,
			 "# weave.conf, written by weave-admin setup on %s.\n"
			 "# weave.conf(5) lists every key; weave-admin check checks the file.\n"
			 "db_socket = " DB_SOCKET "\n"
			 "db_name = weave\n"
			 "db_user = weave\n"
			 "db_password = %s\n"
			 "public_url = https://%s" MOUNT "/\n"
			 "registration = off\n"
			 "captcha_secret = %s\n"
			 "cache_secret = %s\n",
			 when, db_password, s->host, captcha_secret, cache_secret);
		OPENSSL_cleanse(db_password, sizeof db_password);
		OPENSSL_cleanse(cache_secret, sizeof cache_secret);
		if (mkdir_parents(path, 0755) != 0)
			return fail(EXIT_FAILED, "cannot create the folder of %s: %s", path,
				    strerror(errno));
		int rc = write_if_changed(path, text, 0640, 0, s->www.gid);
		OPENSSL_cleanse(text, sizeof text);
		if (rc < 0)
			return EXIT_FAILED;
		step(path, 1);
	} else {
		/* The admin's file stays as it is; only its owner and mode are made safe. */
		bool fix = st.st_uid != 0 || st.st_gid != s->www.gid || (st.st_mode & 07777) != 0640;
		if (fix && (chown(path, 0, s->www.gid) != 0 || chmod(path, 0640) != 0))
			return fail(EXIT_FAILED, "cannot set the owner and mode of %s: %s", path,
				    strerror(errno));
		step(path, fix);
	}
	config_free(&admin_cfg);
	config_defaults(&admin_cfg);
	if (config_load(&admin_cfg, path, err, sizeof err) < 0)
		return fail(EXIT_CONFIG, "%s (correct it, or move it away and run setup again)",
			    err);
	char want[512];
	snprintf(want, sizeof want, "https://%s" MOUNT "/", s->host);
	if (admin_cfg.public_url == NULL || strcmp(admin_cfg.public_url, want) != 0)
		printf("note     %s has public_url %s, not %s: kept as it is\n", path,
		       admin_cfg.public_url ? admin_cfg.public_url : "(unset)", want);
	return EXIT_OK;
}

/* ---- the database ---------------------------------------------------------------------- */

static bool db_is_local(const struct config *c)
{
	return c->db_socket != NULL || strcmp(c->db_host, "127.0.0.1") == 0 ||
	       strcmp(c->db_host, "localhost") == 0 || strcmp(c->db_host, "::1") == 0;
}

static bool sql_literal_safe(const char *s)
{
	return s != NULL && strpbrk(s, "'\\`\r\n") == NULL;
}

/* The database and its user, made by the database's root when the
 * configured credentials do not work yet. */
static int setup_database(void)
{
	db_disconnect();
	db_configure(&admin_cfg);
	if (db_connect() == DB_OK) {
		step("database: weave.conf's credentials work", 0);
		db_disconnect();
		return EXIT_OK;
	}
	if (!db_is_local(&admin_cfg))
		return fail(EXIT_DATABASE, "cannot connect to the database on %s as %s: %s "
			    "(a remote database is taken as given: create it and the user there)",
			    admin_cfg.db_host, admin_cfg.db_user, db_last_error());
	if (!sql_literal_safe(admin_cfg.db_name) || !sql_literal_safe(admin_cfg.db_user) ||
	    !sql_literal_safe(admin_cfg.db_password))
		return fail(EXIT_CONFIG, "db_name, db_user and db_password may not contain "
			    "quotes or backslashes for setup to create them");
	if (access(DB_SOCKET, F_OK) != 0)
		return fail(EXIT_DATABASE, "MariaDB/MySQL is not running here (no " DB_SOCKET
			    "): start it (systemctl start mariadb) and run setup again");

	struct config root = admin_cfg;
	char root_user[] = "root", socket_path[] = DB_SOCKET;
	root.db_user = root_user;
	root.db_password = NULL;
	root.db_name = NULL;
	root.db_socket = socket_path;
	db_configure(&root);
	if (db_connect() != DB_OK) {
		db_configure(&admin_cfg);
		return fail(EXIT_DATABASE, "cannot connect to the database as root through "
			    DB_SOCKET ": %s (run setup as root, or create database %s and user "
			    "%s yourself)", db_last_error(), admin_cfg.db_name, admin_cfg.db_user);
	}
	/* Local connections come through the socket or from 127.0.0.1. */
	static const char *const hosts[] = { "localhost", "127.0.0.1" };
	struct buf sql;
	buf_init(&sql, 4096);
	buf_printf(&sql, "CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4",
		   admin_cfg.db_name);
	enum db_status st = db_exec_text(sql.data);
	for (size_t i = 0; st == DB_OK && i < 2; i++) {
		const char *pw = admin_cfg.db_password ? admin_cfg.db_password : "";
		buf_reset(&sql);
		buf_printf(&sql, "CREATE USER IF NOT EXISTS '%s'@'%s' IDENTIFIED BY '%s'",
			   admin_cfg.db_user, hosts[i], pw);
		st = db_exec_text(sql.data);
		buf_reset(&sql);
		if (st == DB_OK) {
			buf_printf(&sql, "ALTER USER '%s'@'%s' IDENTIFIED BY '%s'",
				   admin_cfg.db_user, hosts[i], pw);
			st = db_exec_text(sql.data);
			buf_reset(&sql);
		}
		if (st == DB_OK) {
			buf_printf(&sql, "GRANT ALL ON `%s`.* TO '%s'@'%s'", admin_cfg.db_name,
				   admin_cfg.db_user, hosts[i]);
			st = db_exec_text(sql.data);
		}
	}
	buf_free_secret(&sql);
	const char *why = st == DB_OK ? "" : db_last_error();
	char reason[512];
	snprintf(reason, sizeof reason, "%s", why);
	db_disconnect();
	db_configure(&admin_cfg);
	if (st != DB_OK)
		return fail(EXIT_DATABASE, "creating database %s and user %s: %s",
			    admin_cfg.db_name, admin_cfg.db_user, reason);
	char what[300];
	snprintf(what, sizeof what, "database %s and its user %s", admin_cfg.db_name,
		 admin_cfg.db_user);
	step(what, 1);
	return EXIT_OK;
}

static int setup_schema(void)
{
	struct args none;
	memset(&none, 0, sizeof none);
	db_disconnect();
	db_configure(&admin_cfg);
	printf("         ");
	return cmd_db_init(&none);
}

/* ---- Apache and HTTPS ---------------------------------------------------------------------- */

static int run_quiet(const char *const argv[], const char *what)
{
	struct buf out;
	buf_init(&out, 64 * 1024);
	int rc = run_program(argv, &out);
	if (rc != 0)
		fprintf(stderr, "weave-admin: %s failed (exit %d):\n%s", what, rc,
			out.data ? out.data : "");
	buf_free(&out);
	return rc == 0 ? 0 : -1;
}

static int enable(const char *tool, const char *name, const char *enabled_file)
{
	char what[256];
	snprintf(what, sizeof what, "%s %s", tool, name);
	if (access(enabled_file, F_OK) == 0) {
		step(what, 0);
		return 0;
	}
	const char *argv[] = { tool, "-q", name, NULL };
	if (run_quiet(argv, what) != 0)
		return -1;
	step(what, 1);
	return 1;
}

static int setup_certificate(struct setup *s)
{
	if (s->cert != NULL) {
		snprintf(s->cert_path, sizeof s->cert_path, "%s", s->cert);
		snprintf(s->key_path, sizeof s->key_path, "%s", s->key);
		step("certificate: the given one", 0);
		return EXIT_OK;
	}
	snprintf(s->cert_path, sizeof s->cert_path, "/etc/weave/tls/%s.crt", s->host);
	snprintf(s->key_path, sizeof s->key_path, "/etc/weave/tls/%s.key", s->host);
	if (access(s->cert_path, R_OK) == 0 && access(s->key_path, R_OK) == 0) {
		step(s->cert_path, 0);
		return EXIT_OK;
	}
	if (mkdir_parents(s->cert_path, 0755) != 0)
		return fail(EXIT_FAILED, "cannot create /etc/weave/tls: %s", strerror(errno));
	char subject[300], san[300];
	snprintf(subject, sizeof subject, "/CN=%s", s->host);
	snprintf(san, sizeof san, "subjectAltName=%s:%s", is_ipv4(s->host) ? "IP" : "DNS",
		 s->host);
	/* RSA 2048 with SHA-256: what the oldest clients (Firefox 4's NSS) accept. */
	/* A server's certificate, not a CA's: with openssl's default CA:TRUE
	 * Apache warns at every start and strict clients refuse it. */
	const char *argv[] = { "openssl", "req", "-x509", "-newkey", "rsa:2048", "-sha256",
			       "-nodes", "-days", "3650", "-subj", subject, "-addext", san,
			       "-addext", "basicConstraints=critical,CA:FALSE",
			       "-addext", "keyUsage=critical,digitalSignature,keyEncipherment",
			       "-addext", "extendedKeyUsage=serverAuth",
			       "-keyout", s->key_path, "-out", s->cert_path, NULL };
	umask(077);
	int rc = run_quiet(argv, "openssl req (a self-signed certificate)");
	umask(022);
	if (rc != 0)
		return EXIT_FAILED;
	if (chmod(s->key_path, 0600) != 0 || chmod(s->cert_path, 0644) != 0)
		return fail(EXIT_FAILED, "cannot set the mode of %s: %s", s->key_path,
			    strerror(errno));
	step(s->cert_path, 1);
	return EXIT_OK;
}

/* "AB:CD:..." of the certificate's DER, as browsers show it. */
static int certificate_fingerprint(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	int ok = x != NULL && X509_digest(x, EVP_sha256(), md, &len) == 1;
	X509_free(x);
	if (!ok || cap < len * 3)
		return -1;
	for (unsigned int i = 0; i < len; i++)
		snprintf(out + 3 * i, 4, "%02X%s", md[i], i + 1 < len ? ":" : "");
	return 0;
}

static int apache_running(void)
{
	FILE *f = fopen("/run/apache2/apache2.pid", "r");
	char line[32];
	int64_t pid = 0;
	if (f == NULL)
		return 0;
	if (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (parse_int64(line, 1, INT32_MAX, &pid) != 0)
			pid = 0;
	}
	fclose(f);
	return pid > 0 && kill((pid_t)pid, 0) == 0;
}

/*
 * The snippet's mount-point block (between "# >>> mount point" and
 * "# <<< mount point") into mount, indented for a <VirtualHost>; the
 * rest, valid at server level, into server. -1 without the markers.
 */
static int split_snippet(const char *text, struct buf *server, struct buf *mount)
{
	const char *begin = strstr(text, "\n# >>> mount point");
	const char *end = begin ? strstr(begin, "\n# <<< mount point") : NULL;
	if (end == NULL)
		return -1;
	buf_append(server, text, (size_t)(begin - text) + 1);
	const char *after = strchr(end + 1, '\n');
	buf_puts(server, after ? after + 1 : "");
	for (const char *p = strchr(begin + 1, '\n') + 1; p < end + 1;) {
		size_t n = strcspn(p, "\n");
		if (n > 0)
			buf_puts(mount, "    ");
		buf_append(mount, p, n);
		buf_putc(mount, '\n');
		p += n + 1;
	}
	return 0;
}

/* write_owned() and its line; 1 changed, 0 not (or kept), -1 failed. */
static int write_step(const char *path, const char *content, const struct setup *s)
{
	int rc = write_owned(path, content, s->ask);
	if (rc == 0 || rc == 1)
		step(path, rc);
	return rc == KEPT_ASIDE ? 0 : rc;
}

/* The HTTPS virtual host, with the mount point in it. */
static int write_site(const struct setup *s, const char *mount)
{
	struct buf site;
	buf_init(&site, 64 * 1024);
	buf_printf(&site,
		   "# HTTPS for weave-server, written by weave-admin setup. The mount\n"
		   "# point is here only, so plain HTTP (port 80) never reaches weave.fcgi;\n"
		   "# the server-wide settings are in conf-available/weave.conf. Edit at\n"
		   "# will: a later setup keeps your version and writes its own beside it\n"
		   "# (weave-ssl.conf.weave-new).\n"
		   "<IfModule mod_ssl.c>\n"
		   "<VirtualHost *:443>\n"
		   "    ServerName %s\n"
		   "    SSLEngine on\n"
		   "    SSLCertificateFile %s\n"
		   "    SSLCertificateKeyFile %s\n"
		   "    # Record ids may hold %%2F: let weave.fcgi, not Apache, answer them.\n"
		   "    AllowEncodedSlashes NoDecode\n\n%s"
		   "</VirtualHost>\n"
		   "</IfModule>\n",
		   s->host, s->cert_path, s->key_path, mount);
	int rc = write_step(APACHE_SITE, site.data, s);
	buf_free(&site);
	return rc;
}

static int enable_and_reload(int changed);

static int setup_apache(struct setup *s)
{
	struct buf snippet, server, mount;
	int changed = 0, rc;

	buf_init(&snippet, 1024 * 1024);
	buf_init(&server, 1024 * 1024);
	buf_init(&mount, 64 * 1024);
	if (read_whole(WEAVE_APACHE_SNIPPET, &snippet) != 0 || snippet.data == NULL ||
	    split_snippet(snippet.data, &server, &mount) != 0) {
		buf_free(&snippet);
		buf_free(&server);
		buf_free(&mount);
		return fail(EXIT_FAILED, "cannot read the Apache snippet " WEAVE_APACHE_SNIPPET
			    " with its mount-point block (make install puts it there)");
	}
	buf_free(&snippet);
	if (strcmp(admin_config_path, WEAVE_DEFAULT_CONFIG) != 0)
		buf_printf(&server, "\n# Written by weave-admin setup: the server's config file.\n"
			   "FcgidInitialEnv WEAVE_CONFIG %s\n", admin_config_path);
	rc = write_step(APACHE_CONF, server.data, s);
	buf_free(&server);
	if (rc < 0 || setup_certificate(s) != EXIT_OK) {
		buf_free(&mount);
		return EXIT_FAILED;
	}
	changed |= rc;
	rc = write_site(s, mount.data ? mount.data : "");
	buf_free(&mount);
	if (rc < 0)
		return EXIT_FAILED;
	changed |= rc;
	return enable_and_reload(changed);
}

/* Enable the modules, the snippet and the site; reload Apache when
 * anything changed (or start it). */
static int enable_and_reload(int changed)
{
	int rc;
	static const struct {
		const char *tool, *name, *enabled;
	} parts[] = {
		{ "a2enmod", "fcgid", APACHE_DIR "/mods-enabled/fcgid.load" },
		{ "a2enmod", "ssl", APACHE_DIR "/mods-enabled/ssl.load" },
		{ "a2enconf", "weave", APACHE_DIR "/conf-enabled/weave.conf" },
		{ "a2ensite", "weave-ssl", APACHE_DIR "/sites-enabled/weave-ssl.conf" },
	};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		rc = enable(parts[i].tool, parts[i].name, parts[i].enabled);
		if (rc < 0)
			return EXIT_FAILED;
		changed |= rc;
	}

	const char *test[] = { "apache2ctl", "configtest", NULL };
	if (run_quiet(test, "apache2ctl configtest") != 0)
		return EXIT_FAILED;
	if (apache_running() && !changed) {
		step("Apache runs with this configuration", 0);
		return EXIT_OK;
	}
	const char *systemd[] = { "systemctl", "is-active", "--quiet", "apache2", NULL };
	const char *reload[] = { "systemctl", "reload", "apache2", NULL };
	const char *graceful[] = { "apache2ctl", "graceful", NULL };
	const char *start[] = { "apache2ctl", "start", NULL };
	bool under_systemd = access("/run/systemd/system", F_OK) == 0 &&
			     run_program(systemd, NULL) == 0;
	const char *const *how = under_systemd ? reload : apache_running() ? graceful : start;
	if (run_quiet(how, "reloading Apache") != 0)
		return EXIT_FAILED;
	step(under_systemd ? "systemctl reload apache2" : how == graceful ? "apache2ctl graceful"
								: "apache2ctl start", 1);
	/* A graceful restart lets running requests finish first. */
	for (int i = 0; i < 50 && !apache_running(); i++)
		usleep(100 * 1000);
	sleep(2);
	return EXIT_OK;
}

/* ---- the first account ------------------------------------------------------------------------- */

static int setup_first_user(struct setup *s)
{
	char name[USERNAME_MAX + 1];
	int exists = 0;
	int rc = account_name(s->first_user, name, NULL);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = db_user_exists(name, &exists);
	if (st != DB_OK)
		return db_fail(st, "looking up the first account");
	if (exists && s->password_file != NULL) {
		/* Setup never changes a live account's password behind the admin's back. */
		printf("kept     account %s exists: its password was NOT changed (--password-file "
		       "sets it only when setup creates the account); to change it: weave-admin "
		       "user passwd %s --password-file %s\n", s->first_user, name,
		       s->password_file);
		return EXIT_OK;
	}
	if (exists) {
		printf("ok       account %s exists (its password is unchanged)\n", s->first_user);
		return EXIT_OK;
	}
	struct args a;
	memset(&a, 0, sizeof a);
	a.pos[0] = s->first_user;
	a.npos = 1;
	a.opt[OPT_PASSWORD_FILE] = s->password_file;
	printf("changed  ");
	return cmd_user_add(&a);
}

/* ---- asking --------------------------------------------------------------------------------------- */

/* A line from the terminal; def when empty. */
static void ask(const char *question, const char *def, char *out, size_t cap)
{
	char line[1024];
	fprintf(stderr, "%s%s%s%s: ", question, def ? " [" : "", def ? def : "", def ? "]" : "");
	if (fgets(line, sizeof line, stdin) == NULL)
		line[0] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	snprintf(out, cap, "%s", line[0] ? line : def ? def : "");
}

static int gather(const struct args *a, struct setup *s)
{
	static char cert[1024], key[1024], user[256];
	bool yes = has_opt(a, OPT_YES);
	if (!yes && !isatty(STDIN_FILENO))
		return usage_error("standard input is not a terminal: give --yes and the "
				   "options instead of answers");
	s->ask = !yes;
	s->cert = a->opt[OPT_CERT];
	s->key = a->opt[OPT_KEY];
	s->first_user = a->opt[OPT_FIRST_USER];
	s->password_file = a->opt[OPT_PASSWORD_FILE];
	if (a->opt[OPT_SERVER_NAME] != NULL) {
		snprintf(s->host, sizeof s->host, "%s", a->opt[OPT_SERVER_NAME]);
	} else if (yes) {
		return usage_error("--yes needs --server-name HOST (the name clients use)");
	} else {
		char def[256] = "";
		gethostname(def, sizeof def - 1);
		ask("Server name clients will use (the certificate's name)", def, s->host,
		    sizeof s->host);
		if (s->cert == NULL) {
			ask("Certificate file (empty: make a self-signed one)", NULL, cert,
			    sizeof cert);
			if (cert[0] != '\0') {
				s->cert = cert;
				ask("Its private key file", NULL, key, sizeof key);
				s->key = key;
			}
		}
		if (s->first_user == NULL) {
			ask("First account to create (empty: none)", NULL, user, sizeof user);
			if (user[0] != '\0')
				s->first_user = user;
		}
	}
	if (!valid_host(s->host))
		return usage_error("'%s' is not a host name", s->host);
	if ((s->cert == NULL) != (s->key == NULL))
		return usage_error("--cert and --key go together");
	if (s->cert != NULL && (access(s->cert, R_OK) != 0 || access(s->key, R_OK) != 0))
		return fail(EXIT_FAILED, "cannot read %s or %s", s->cert, s->key);
	if (s->password_file != NULL && s->first_user == NULL)
		return usage_error("--password-file goes with --first-user");
	if (s->first_user != NULL) {
		char name[USERNAME_MAX + 1];
		int rc = account_name(s->first_user, name, NULL);
		if (rc != EXIT_OK)
			return rc;
		if (yes && s->password_file == NULL)
			return usage_error("--first-user with --yes needs --password-file");
	}
	if (!yes) {
		fprintf(stderr, "\nThis will set up https://%s" MOUNT "/ with %s, write %s, "
			"create the database if needed, change Apache's configuration and "
			"reload it%s%s.\n", s->host,
			s->cert ? s->cert : "a self-signed certificate", admin_config_path,
			s->first_user ? ", and create the account " : "",
			s->first_user ? s->first_user : "");
		if (!confirm("Go on?"))
			return fail(EXIT_FAILED, "nothing changed");
	}
	return EXIT_OK;
}

/* ---- the whole setup ---------------------------------------------------------------------------------- */

int cmd_setup(const struct args *a)
{
	struct setup s;
	int rc;
	memset(&s, 0, sizeof s);
	if (geteuid() != 0)
		return fail(EXIT_FAILED, "setup changes the system's Apache, database and /etc: "
			    "run it as root");
	if ((rc = gather(a, &s)) != EXIT_OK)
		return rc;
	if (apache_user(NULL, &s.www) != 0)
		return fail(EXIT_FAILED, "no Apache user (www-data) here: install apache2 and "
			    "libapache2-mod-fcgid first");
	if (access(APACHE_DIR "/conf-available", F_OK) != 0 || !program_exists("a2enconf"))
		return fail(EXIT_FAILED,
			    "this is not Debian's Apache layout (no " APACHE_DIR
			    "/conf-available, a2enconf): add 'Include " WEAVE_APACHE_SNIPPET
			    "' to httpd.conf, 'AllowEncodedSlashes NoDecode' to the HTTPS "
			    "<VirtualHost>, create the database (admin.md, Database), then run "
			    "weave-admin check");
	if ((rc = setup_config(&s)) != EXIT_OK || (rc = setup_database()) != EXIT_OK ||
	    (rc = setup_schema()) != EXIT_OK || (rc = setup_apache(&s)) != EXIT_OK)
		return rc;
	if (s.first_user != NULL && (rc = setup_first_user(&s)) != EXIT_OK)
		return rc;

	char fingerprint[EVP_MAX_MD_SIZE * 3 + 1] = "";
	if (certificate_fingerprint(s.cert_path, fingerprint, sizeof fingerprint) != 0)
		snprintf(fingerprint, sizeof fingerprint, "(cannot read the certificate)");

	printf("\nChecking the installation (weave-admin check):\n");
	check_mta_optional(true);
	int problems = check_installation(NULL, s.cert_path);
	check_mta_optional(false);
	const char *url = admin_cfg.public_url ? admin_cfg.public_url : "";
	printf("\nCertificate: %s\nSHA-256 fingerprint: %s\n", s.cert_path, fingerprint);
	printf("\nIn the client (Firefox's Sync or the Weave add-on):\n"
	       "  1. Visit %s once in the browser and accept the certificate\n"
	       "     (compare its SHA-256 fingerprint with the one above)%s.\n"
	       "  2. Set up Sync, choose \"Use a custom server\" and enter %s\n"
	       "  3. Enter the user name%s%s and its password.\n"
	       "  4. Choose a passphrase (the sync key) of at least 12 characters that is\n"
	       "     not the password; it never reaches the server, keep it safe.\n",
	       url, s.cert ? " if the browser does not know its issuer" : "", url,
	       s.first_user ? " " : "", s.first_user ? s.first_user : "");
	if (s.first_user == NULL)
		printf("Create accounts with: weave-admin user add NAME\n");
	return problems == 0 ? EXIT_OK : EXIT_FAILED;
}
