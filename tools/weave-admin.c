/* weave-admin.c - the administrator's tool: schema and user accounts. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/crypto.h>

#include "auth.h"
#include "buf.h"
#include "config.h"
#include "db.h"
#include "db_user.h"
#include "log.h"
#include "password.h"
#include "util.h"
#include "validate.h"

/* Exit codes, documented in --help and weave-admin(8). */
enum exit_code {
	EXIT_OK = 0,
	EXIT_FAILED = 1,      /* the operation failed (e.g. no such user) */
	EXIT_USAGE = 2,       /* bad command line */
	EXIT_CONFIG = 3,      /* config file missing or wrong */
	EXIT_DATABASE = 4,    /* database unreachable or refused the change */
};

#define SCHEMA_VERSION 1

extern const char weave_schema_sql[];

static struct config cfg;
static const char *config_path;

static const char usage_text[] =
	"Usage: weave-admin [--config FILE] COMMAND [ARGS...]\n"
	"\n"
	"Administer a weave-server installation: its database schema and its\n"
	"user accounts. Reads the same weave.conf as weave.fcgi.\n"
	"\n"
	"Commands:\n"
	"  db init                   create the schema, or upgrade it in place\n"
	"  db check                  report the schema version\n"
	"  user add NAME [--email E] [--password-file FILE|-]\n"
	"                            create an account (prompts for the password\n"
	"                            without echo on a terminal)\n"
	"  user delete NAME [--yes]  delete an account and all its records\n"
	"  user passwd NAME [--password-file FILE|-]\n"
	"                            set an account's password\n"
	"  user list [--json]        list accounts with record counts and usage\n"
	"\n"
	"Options:\n"
	"  --config FILE   config file (default: $WEAVE_CONFIG, else " WEAVE_DEFAULT_CONFIG ")\n"
	"  --help          show this help (also after a command: user add --help)\n"
	"  --version       show the version\n"
	"\n"
	"NAME is lower-cased; a NAME containing '@' is an e-mail login and is\n"
	"stored under its Sync 1.1 hashed name (the address becomes the e-mail).\n"
	"A password file holds the password on its first line; '-' reads stdin.\n"
	"\n"
	"Exit status: 0 success, 1 operation failed, 2 usage error,\n"
	"3 configuration error, 4 database unavailable or error.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("weave-admin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'weave-admin --help'.\n", stderr);
	return EXIT_USAGE;
}

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("weave-admin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static int db_fail(enum db_status st, const char *what)
{
	if (st == DB_UNAVAILABLE)
		return fail(EXIT_DATABASE,
			    "cannot reach the database %s at %s:%lld (%s): %s",
			    cfg.db_name, cfg.db_socket ? cfg.db_socket : cfg.db_host,
			    (long long)cfg.db_port, what, db_last_error());
	return fail(EXIT_DATABASE, "database error while %s: %s", what,
		    db_last_error());
}

/* ---- options ---------------------------------------------------------- */

struct options {
	const char *email;
	const char *password_file;
	bool yes;
	bool json;
	bool help;
	const char *args[4];
	int nargs;
};

static int parse_options(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--email") == 0 && i + 1 < argc)
			o->email = argv[++i];
		else if (strcmp(a, "--password-file") == 0 && i + 1 < argc)
			o->password_file = argv[++i];
		else if (strcmp(a, "--yes") == 0 || strcmp(a, "-y") == 0)
			o->yes = true;
		else if (strcmp(a, "--json") == 0)
			o->json = true;
		else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
			o->help = true;
		else if (a[0] == '-' && a[1] != '\0')
			return usage_error("unknown or incomplete option '%s'", a);
		else if (o->nargs < 4)
			o->args[o->nargs++] = a;
		else
			return usage_error("too many arguments");
	}
	return 0;
}

/* ---- passwords -------------------------------------------------------- */

static int read_line(FILE *f, struct buf *out)
{
	int c;
	while ((c = fgetc(f)) != EOF && c != '\n')
		if (buf_putc(out, (char)c) < 0)
			return -1;
	if (out->len > 0 && out->data[out->len - 1] == '\r')
		out->data[--out->len] = '\0';
	return (c == EOF && out->len == 0) ? -1 : 0;
}

static int prompt_hidden(const char *prompt, struct buf *out)
{
	struct termios saved, quiet;
	FILE *tty = fopen("/dev/tty", "r+");
	if (tty == NULL)
		return -1;
	fputs(prompt, tty);
	fflush(tty);
	tcgetattr(fileno(tty), &saved);
	quiet = saved;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
	int rc = read_line(tty, out);
	tcsetattr(fileno(tty), TCSAFLUSH, &saved);
	fputc('\n', tty);
	fclose(tty);
	return rc;
}

/* The new password from --password-file, or typed twice on a terminal. */
static int get_new_password(const struct options *o, struct buf *pw)
{
	if (o->password_file != NULL) {
		FILE *f = strcmp(o->password_file, "-") == 0
				  ? stdin
				  : fopen(o->password_file, "r");
		if (f == NULL)
			return fail(EXIT_FAILED, "cannot open password file %s: %s",
				    o->password_file, strerror(errno));
		int rc = read_line(f, pw);
		if (f != stdin)
			fclose(f);
		if (rc < 0 || pw->len == 0)
			return fail(EXIT_FAILED, "no password in %s",
				    strcmp(o->password_file, "-") == 0
					    ? "standard input"
					    : o->password_file);
		return EXIT_OK;
	}
	if (!isatty(STDIN_FILENO))
		return usage_error("no terminal to ask for the password: use "
				   "--password-file FILE or --password-file -");
	struct buf again;
	buf_init(&again, AUTH_PASSWORD_MAX);
	int rc = EXIT_OK;
	if (prompt_hidden("New password: ", pw) < 0 ||
	    prompt_hidden("Repeat the password: ", &again) < 0)
		rc = fail(EXIT_FAILED, "cannot read the password from the terminal");
	else if (pw->len != again.len || memcmp(pw->data, again.data, pw->len) != 0)
		rc = fail(EXIT_FAILED, "the passwords do not match");
	buf_free_secret(&again);
	return rc;
}

/* Hash a new password for username after the strength rule. */
static int hash_new_password(const char *username, struct buf *pw, char *hash)
{
	if (memchr(pw->data, '\0', pw->len) != NULL)
		return fail(EXIT_FAILED, "the password contains a NUL byte");
	if (!password_is_strong(pw->data, pw->len, username))
		return fail(EXIT_FAILED, "password too weak: it needs at least 8 "
					 "bytes and must differ from the user name");
	char utf8[AUTH_PASSWORD_MAX * 2 + 1];
	size_t len = auth_password_to_utf8(pw->data, pw->len, utf8);
	int rc = password_hash(utf8, len, (int)cfg.password_cost, hash,
			       PASSWORD_HASH_MAX);
	OPENSSL_cleanse(utf8, sizeof utf8);
	if (rc < 0)
		return fail(EXIT_FAILED, "cannot hash the password (OpenSSL failed)");
	return EXIT_OK;
}

/* NAME as stored: lower case, e-mail logins hashed. *email_out gets the address. */
static int account_name(const char *name, char out[USERNAME_MAX + 1],
			const char **email_out)
{
	size_t len = strlen(name);
	if (strchr(name, '@') != NULL) {
		if (!validate_email(name, len))
			return fail(EXIT_FAILED, "'%s' is not a valid e-mail login", name);
		auth_email_to_username(name, len, out);
		if (email_out != NULL)
			*email_out = name;
		return EXIT_OK;
	}
	if (!validate_username(name, len))
		return fail(EXIT_FAILED,
			    "invalid user name '%s': use 1-32 of A-Z a-z 0-9 . _ -", name);
	memcpy(out, name, len + 1);
	ascii_lower(out);
	return EXIT_OK;
}

/* ---- commands --------------------------------------------------------- */

static int int_row(void *ctx, const struct db_value *row, size_t ncols)
{
	(void)ncols;
	*(int64_t *)ctx = row[0].is_null ? 0 : row[0].i;
	return 0;
}

/* 0 when the schema is not installed yet. */
static enum db_status schema_version(int64_t *version)
{
	int64_t tables = 0;
	struct db_param p[] = { DB_CSTR(cfg.db_name) };
	enum db_status st = db_run(
		"SELECT COUNT(*) FROM information_schema.tables "
		"WHERE table_schema = ? AND table_name = 'weave_schema'",
		p, 1, int_row, &tables, NULL);
	*version = 0;
	if (st != DB_OK || tables == 0)
		return st;
	return db_run("SELECT MAX(version) FROM weave_schema", NULL, 0, int_row,
		      version, NULL);
}

/*
 * Run the embedded schema: statements end with ';' at the end of a line.
 * Every statement is CREATE ... IF NOT EXISTS, so running it on an
 * installed schema adds only what is missing.
 */
static enum db_status install_schema(void)
{
	struct buf stmt;
	enum db_status st = DB_OK;
	const char *p = weave_schema_sql;

	buf_init(&stmt, 1024 * 1024);
	while (*p != '\0' && st == DB_OK) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *start = p;
		p += len + (nl ? 1 : 0);
		while (len > 0 && (*start == ' ' || *start == '\t')) {
			start++;
			len--;
		}
		if (len == 0 || (len >= 2 && start[0] == '-' && start[1] == '-'))
			continue;
		buf_append(&stmt, start, len);
		buf_putc(&stmt, '\n');
		if (start[len - 1] == ';') {
			st = db_exec_text(stmt.data);
			buf_reset(&stmt);
		}
	}
	buf_free(&stmt);
	return st;
}

static enum db_status record_version(void)
{
	struct db_param v[] = { DB_INT(SCHEMA_VERSION), DB_INT(time(NULL)) };
	return db_run("INSERT INTO weave_schema (version, installed) VALUES (?, ?)",
		      v, 2, NULL, NULL, NULL);
}

static int cmd_db(const struct options *o)
{
	int64_t version;
	enum db_status st;

	if (o->nargs != 1)
		return usage_error("db: expected 'init' or 'check'");
	st = schema_version(&version);
	if (st != DB_OK)
		return db_fail(st, "reading the schema version");
	if (strcmp(o->args[0], "check") == 0) {
		if (version == 0)
			return fail(EXIT_FAILED, "no weave schema in database %s: "
						 "run 'weave-admin db init'", cfg.db_name);
		printf("schema version %" PRId64 " (this weave-admin: %d)%s\n",
		       version, SCHEMA_VERSION,
		       version == SCHEMA_VERSION ? ", up to date" : ", needs 'db init'");
		return version == SCHEMA_VERSION ? EXIT_OK : EXIT_FAILED;
	}
	if (strcmp(o->args[0], "init") != 0)
		return usage_error("db: unknown subcommand '%s'", o->args[0]);
	if (version > SCHEMA_VERSION)
		return fail(EXIT_FAILED,
			    "database schema version %" PRId64 " is newer than this "
			    "weave-admin understands (%d): upgrade weave-server",
			    version, SCHEMA_VERSION);
	st = install_schema();
	if (st != DB_OK)
		return db_fail(st, "installing the schema");
	if (version == SCHEMA_VERSION) {
		printf("schema version %d is installed and up to date\n", SCHEMA_VERSION);
		return EXIT_OK;
	}
	/* Later versions apply their numbered upgrade steps here, in order. */
	st = record_version();
	if (st != DB_OK)
		return db_fail(st, "recording the schema version");
	printf("installed schema version %d in database %s\n", SCHEMA_VERSION,
	       cfg.db_name);
	return EXIT_OK;
}

static int cmd_user_add(const struct options *o)
{
	char name[USERNAME_MAX + 1], hash[PASSWORD_HASH_MAX];
	const char *email = o->email;
	struct buf pw;
	int rc;

	if (o->nargs != 2)
		return usage_error("user add: expected NAME");
	rc = account_name(o->args[1], name, email ? NULL : &email);
	if (rc != EXIT_OK)
		return rc;
	if (email != NULL && !validate_email(email, strlen(email)))
		return fail(EXIT_FAILED, "'%s' is not a valid e-mail address", email);
	int exists = 0;
	enum db_status st = db_user_exists(name, &exists);
	if (st != DB_OK)
		return db_fail(st, "looking up the user");
	if (exists)
		return fail(EXIT_FAILED, "user %s already exists", name);
	buf_init(&pw, AUTH_PASSWORD_MAX);
	rc = get_new_password(o, &pw);
	if (rc == EXIT_OK)
		rc = hash_new_password(name, &pw, hash);
	buf_free_secret(&pw);
	if (rc != EXIT_OK)
		return rc;
	st = db_user_create(name, hash, email, NULL);
	if (st == DB_CONFLICT)
		return fail(EXIT_FAILED, "user %s already exists", name);
	if (st != DB_OK)
		return db_fail(st, "creating the user");
	printf("created user %s\n", name);
	return EXIT_OK;
}

static int cmd_user_passwd(const struct options *o)
{
	char name[USERNAME_MAX + 1], hash[PASSWORD_HASH_MAX];
	struct user u;
	struct buf pw;

	if (o->nargs != 2)
		return usage_error("user passwd: expected NAME");
	int rc = account_name(o->args[1], name, NULL);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = db_user_get(name, USER_LOCK_NONE, &u);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such user: %s", name);
	if (st != DB_OK)
		return db_fail(st, "looking up the user");
	buf_init(&pw, AUTH_PASSWORD_MAX);
	rc = get_new_password(o, &pw);
	if (rc == EXIT_OK)
		rc = hash_new_password(name, &pw, hash);
	buf_free_secret(&pw);
	if (rc == EXIT_OK) {
		st = db_user_set_password(u.id, hash);
		if (st != DB_OK)
			rc = db_fail(st, "setting the password");
		else
			printf("password of %s changed\n", name);
	}
	user_free(&u);
	return rc;
}

static bool confirm(const char *question)
{
	char answer[16];
	fputs(question, stderr);
	fflush(stderr);
	if (fgets(answer, sizeof answer, stdin) == NULL)
		return false;
	return answer[0] == 'y' || answer[0] == 'Y';
}

static int cmd_user_delete(const struct options *o)
{
	char name[USERNAME_MAX + 1];
	struct user u;

	if (o->nargs != 2)
		return usage_error("user delete: expected NAME");
	int rc = account_name(o->args[1], name, NULL);
	if (rc != EXIT_OK)
		return rc;
	if (!o->yes && !isatty(STDIN_FILENO))
		return usage_error("user delete: not on a terminal, so add --yes "
				   "to delete %s and all its data", name);
	enum db_status st = db_user_get(name, USER_LOCK_NONE, &u);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such user: %s", name);
	if (st != DB_OK)
		return db_fail(st, "looking up the user");
	if (!o->yes) {
		char question[128];
		snprintf(question, sizeof question,
			 "Delete user %s and all of its records? [y/N] ", name);
		if (!confirm(question)) {
			user_free(&u);
			return fail(EXIT_FAILED, "not deleted");
		}
	}
	st = db_begin();
	if (st == DB_OK)
		st = db_user_delete(u.id);
	if (st == DB_OK)
		st = db_commit();
	else
		db_rollback();
	user_free(&u);
	if (st != DB_OK)
		return db_fail(st, "deleting the user");
	printf("deleted user %s and its records\n", name);
	return EXIT_OK;
}

struct list_ctx {
	bool json;
	struct json_object *array;
};

static int list_one(void *ctx, const struct user *u, int64_t records, int64_t bytes)
{
	struct list_ctx *l = ctx;
	char last[32] = "never";
	if (u->last_write > 0)
		format_timestamp(u->last_write, last, sizeof last);
	if (l->json) {
		struct json_object *o = json_object_new_object();
		json_object_object_add(o, "username", json_object_new_string(u->username));
		json_object_object_add(o, "email", u->email ? json_object_new_string(u->email) : NULL);
		json_object_object_add(o, "enabled", json_object_new_boolean(u->status == 1));
		json_object_object_add(o, "records", json_object_new_int64(records));
		json_object_object_add(o, "bytes", json_object_new_int64(bytes));
		json_object_object_add(o, "quota_kb", u->quota_kb >= 0 ? json_object_new_int64(u->quota_kb) : NULL);
		json_object_object_add(o, "node", u->node ? json_object_new_string(u->node) : NULL);
		json_object_object_add(o, "last_write", u->last_write > 0 ? json_object_new_double_s((double)u->last_write / 100.0, last) : NULL);
		json_object_array_add(l->array, o);
	} else {
		printf("%-32s %-8s %10" PRId64 " %12" PRId64 "  %-14s %s\n", u->username,
		       u->status == 1 ? "enabled" : "disabled", records,
		       (bytes + 1023) / 1024, last, u->email ? u->email : "-");
	}
	return 0;
}

static int cmd_user_list(const struct options *o)
{
	struct list_ctx l = { o->json, NULL };
	if (o->nargs != 1)
		return usage_error("user list: takes no arguments");
	if (l.json)
		l.array = json_object_new_array();
	else
		printf("%-32s %-8s %10s %12s  %-14s %s\n", "USER", "STATUS", "RECORDS",
		       "KB", "LAST WRITE", "EMAIL");
	enum db_status st = db_user_list(list_one, &l);
	if (st != DB_OK) {
		json_object_put(l.array);
		return db_fail(st, "listing users");
	}
	if (l.json) {
		puts(json_object_to_json_string_ext(l.array, JSON_C_TO_STRING_PRETTY |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(l.array);
	}
	return EXIT_OK;
}

static int cmd_user(const struct options *o)
{
	if (o->nargs < 1)
		return usage_error("user: expected add, delete, passwd or list");
	const char *sub = o->args[0];
	if (strcmp(sub, "add") == 0)
		return cmd_user_add(o);
	if (strcmp(sub, "delete") == 0)
		return cmd_user_delete(o);
	if (strcmp(sub, "passwd") == 0)
		return cmd_user_passwd(o);
	if (strcmp(sub, "list") == 0)
		return cmd_user_list(o);
	return usage_error("user: unknown subcommand '%s'", sub);
}

int main(int argc, char **argv)
{
	int i = 1;
	char err[512];

	log_set_program("weave-admin");
	log_set_level(LOG_LEVEL_ERROR);
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_text, stdout);
			return EXIT_OK;
		} else if (strcmp(argv[i], "--version") == 0) {
			puts("weave-admin " PACKAGE_VERSION);
			return EXIT_OK;
		} else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
			config_path = argv[++i];
		} else {
			return usage_error("unknown or incomplete option '%s'", argv[i]);
		}
	}
	if (i >= argc)
		return usage_error("no command given");
	const char *command = argv[i++];
	struct options o;
	if (parse_options(argc - i, argv + i, &o) != 0)
		return EXIT_USAGE;
	if (o.help) {
		fputs(usage_text, stdout);
		return EXIT_OK;
	}
	if (strcmp(command, "db") != 0 && strcmp(command, "user") != 0)
		return usage_error("unknown command '%s'", command);

	if (config_path == NULL)
		config_path = config_path_from_env();
	config_defaults(&cfg);
	if (config_load(&cfg, config_path, err, sizeof err) < 0) {
		fprintf(stderr, "weave-admin: %s\n", err);
		config_free(&cfg);
		return EXIT_CONFIG;
	}
	db_configure(&cfg);
	int rc = strcmp(command, "db") == 0 ? cmd_db(&o) : cmd_user(&o);
	db_disconnect();
	config_free(&cfg);
	return rc;
}
