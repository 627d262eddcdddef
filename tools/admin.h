/*
 * admin.h - what the parts of weave-admin share: exit codes, the parsed
 * command line and the row type of the command table (weave-admin.c),
 * the handlers of each file, and helpers (admin.c) for messages,
 * account names, passwords, JSON output and the progress bar.
 *
 * Handlers take the parsed arguments, print their result on stdout and
 * messages on stderr, and return an exit code. The dispatcher has
 * already checked the argument count and that every option given is
 * one the command accepts, loaded weave.conf into admin_cfg and
 * configured the database (connected lazily on first use).
 */
#ifndef WEAVE_ADMIN_H
#define WEAVE_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "config.h"
#include "db.h"
#include "db_user.h"
#include "validate.h"

struct json_object;

/* Exit codes, documented in --help and weave-admin(8). */
enum exit_code {
	EXIT_OK = 0,
	EXIT_FAILED = 1,   /* the operation failed (e.g. no such user) */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_CONFIG = 3,   /* config file missing or wrong */
	EXIT_DATABASE = 4, /* database unavailable or refused the change */
};

/* Options; each command accepts a subset (struct command.options). */
enum admin_opt {
	OPT_CONFIG,        /* --config FILE (every command) */
	OPT_HELP,          /* --help, -h (every command) */
	OPT_JSON,          /* --json */
	OPT_YES,           /* --yes, -y */
	OPT_QUIET,         /* --quiet, -q */
	OPT_EMAIL,         /* --email ADDRESS */
	OPT_PASSWORD_FILE, /* --password-file FILE|- */
	OPT_NODE,          /* --node URL|default */
	OPT_ENABLED,       /* --enabled */
	OPT_DISABLED,      /* --disabled */
	OPT_NAME_LIKE,     /* --name-like PATTERN */
	OPT_SORT,          /* --sort name|usage|activity */
	OPT_LIMIT,         /* --limit N */
	OPT_CAPACITY,      /* --capacity N */
	OPT_CLEAR,         /* --clear */
	OPT_RETRY_AFTER,   /* --retry-after SECONDS */
	OPT_FROM,          /* --from SOURCE */
	OPT_FORMAT,        /* --format fsyncms|php|weave-minimal (minimal: fsyncms) */
	OPT_DRY_RUN,       /* --dry-run, -n */
	OPT_BATCH,         /* --batch N */
	OPT_PAUSE,         /* --pause MILLISECONDS */
	OPT_TOP,           /* --top N */
	OPT_REPLACE,       /* --replace */
	OPT_MAIL,          /* --mail ADDRESS (check) */
	OPT_SERVER_NAME,   /* --server-name HOST (setup) */
	OPT_CERT,          /* --cert FILE (setup) */
	OPT_KEY,           /* --key FILE (setup) */
	OPT_FIRST_USER,    /* --first-user NAME (setup) */
	OPT_FORCE,         /* --force (export: replace FILE) */
	OPT_COLLECTION,    /* --collection NAME */
	OPT_SINCE,         /* --since TIME */
	OPT_AS_OF,         /* --as-of TIME */
	OPT_KEEP_NEWER,    /* --keep-newer */
	OPT_USER,          /* --user NAME[,NAME...] (backup, restore) */
	OPT_USERS_FILE,    /* --users-file FILE|- (backup, restore) */
	OPT_TO,            /* --to NODE (user move, node drain) */
	OPT__MAX
};

#define OPT(o) (UINT64_C(1) << (o))
_Static_assert(OPT__MAX <= 64, "command options are bits of a uint64_t");
#define ARGS_MAX 4

struct args {
	const char *pos[ARGS_MAX]; /* positional arguments after the command words */
	int npos;
	const char *opt[OPT__MAX]; /* the value, "" for a flag, NULL when absent */
};

/*
 * What a command needs before its handler runs (struct command.flags).
 * 0, the usual and what a row that leaves flags out gets: weave.conf
 * loaded, the database configured (connected on first use), the change
 * board opened, and the schema installed (else "run 'weave-admin db
 * init'").
 */
enum command_flag {
	CMD_NO_SCHEMA = 1 << 0,   /* runs before 'db init' (db ..., status) */
	CMD_NO_DATABASE = 1 << 1, /* never asks the database (cache): no schema check */
	CMD_OWN_CONFIG = 1 << 2,  /* loads weave.conf itself, which may be missing
				   * or wrong (setup, check); admin_cfg holds the defaults */
	CMD_NO_CONFIG = 1 << 3,   /* reads no weave.conf at all (secret) */
};

struct command {
	const char *words;    /* "user add" */
	int min_args, max_args;
	uint64_t options;     /* OPT() bits accepted besides --config and --help */
	int (*run)(const struct args *a);
	const char *synopsis; /* what follows the words in a usage line */
	const char *summary;  /* one line for the overview */
	const char *help;     /* the rest of COMMAND --help */
	unsigned flags;       /* enum command_flag bits; last, so rows may leave it out */
};

/* weave.conf as loaded by main(). */
extern struct config admin_cfg;
/* Its path (--config, $WEAVE_CONFIG or the default); setup and check load
 * it themselves, as it may not exist or not load yet. */
extern const char *admin_config_path;

/* ---- messages ----------------------------------------------------------- */

/* "weave-admin: MESSAGE" on stderr; returns code. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, with a pointer to the command's --help; returns EXIT_USAGE. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A database failure while doing `what`: EXIT_DATABASE with the reason. */
int db_fail(enum db_status st, const char *what);
/* The command being run (for usage_error); set by the dispatcher. */
void admin_set_command(const struct command *c);
const struct command *admin_command(void);

/* ---- arguments ------------------------------------------------------------ */

static inline bool has_opt(const struct args *a, enum admin_opt o)
{
	return a->opt[o] != NULL;
}

/* A whole decimal number in [min, max] or a usage error naming `what`. */
int parse_number_arg(const char *s, int64_t min, int64_t max, const char *what,
		     int64_t *out);

/*
 * NAME as stored (account_name.h, the one rule): lower case; a NAME
 * containing '@' is an e-mail login
 * and maps to its Sync 1.1 hashed name (*email_out, if given, gets the
 * address). EXIT_OK, or EXIT_USAGE with a message for a malformed name.
 */
int account_name(const char *name, char out[USERNAME_MAX + 1],
		 const char **email_out);

/* account_name() + db_user_get(): EXIT_OK with *u filled (user_free() it),
 * EXIT_FAILED "no such user", or EXIT_DATABASE. */
int find_user(const char *name, struct user *u);

/* The place (db.h) holding u's records: its storage node's database when
 * weave.conf names one for users.node, else the account database. */
size_t records_place(const struct user *u);

/*
 * An account's records on a storage node are written in a transaction of
 * that node's, beside the account database's (which holds the users row
 * lock), and the node's commits first, as the server's writes do
 * (src/storage_place.h). For DB_ACCOUNTS each of these does nothing: the
 * account database's own transaction holds the records.
 *
 * records_begin(): open the records' transaction; place is current after.
 * records_commit(): commit it; the account database is current after,
 * its transaction still open for the caller to finish.
 * records_rollback(): roll back both (db_rollback() ends every place's),
 * the account database current after.
 */
enum db_status records_begin(size_t place);
enum db_status records_commit(size_t place);
void records_rollback(void);

/*
 * A storage node URL: http:// or https://, a host, printable ASCII
 * without blanks, quotes or backslashes, normalised to end in '/'.
 * 0 with out filled, or -1.
 */
int node_url_normalise(const char *in, char *out, size_t cap);
#define NODE_URL_MAX 255

/* Ask on stderr, read a y/N answer from stdin. */
bool confirm(const char *question);

/* ---- passwords -------------------------------------------------------------- */

/* The first line of FILE ('-': stdin) into pw. EXIT_OK or EXIT_FAILED. */
int read_secret_file(const char *path, struct buf *pw);
/* A new password from --password-file, or typed twice on a terminal. */
int get_new_password(const struct args *a, struct buf *pw);
/* Check the strength rule, convert to UTF-8 and hash with scrypt. */
int hash_new_password(const char *username, struct buf *pw, char *hash);

/* ---- output ----------------------------------------------------------------- */

/* Print o pretty on stdout followed by a newline, then release it. */
void json_print(struct json_object *o);
struct json_object *json_string_or_null(const char *s);
/* Centiseconds as a JSON number with exactly two decimals; 0 gives null. */
struct json_object *json_stamp(int64_t centiseconds);
/* "2024-05-01 12:00:00 UTC" for seconds since the epoch ("never" for 0). */
void format_utc(int64_t seconds, char *out, size_t cap);
/* "12.3 MB", "512 B" */
void format_bytes(int64_t bytes, char *out, size_t cap);

/* ---- progress --------------------------------------------------------------- */

/*
 * A progress bar with rate and ETA, redrawn on stderr at most ten times
 * a second, only when stderr is a terminal (cron and pipes stay quiet).
 * total 0 means unknown (a counter with rate, no bar or ETA).
 */
struct progress {
	bool on;
	const char *label;
	const char *unit;
	int64_t total, done;
	double started, drawn;
};

void progress_start(struct progress *p, const char *label, const char *unit,
		    int64_t total);
/* Whether progress is drawn at all (stderr is a terminal): a total that
 * costs a scan to count is worth it only then. */
bool progress_shown(void);
void progress_update(struct progress *p, int64_t done);
/* Draw the final state and end the line. */
void progress_end(struct progress *p);
/* Seconds on a monotonic clock. */
double monotonic_seconds(void);

/* ---- handlers ----------------------------------------------------------------- */

/* admin_users.c */
int cmd_user_add(const struct args *a);
int cmd_user_delete(const struct args *a);
int cmd_user_list(const struct args *a);
int cmd_user_show(const struct args *a);
int cmd_user_passwd(const struct args *a);
int cmd_user_email(const struct args *a);
int cmd_user_quota(const struct args *a);
int cmd_user_disable(const struct args *a);
int cmd_user_enable(const struct args *a);
int cmd_user_alert(const struct args *a);
int cmd_user_node(const struct args *a);

/* admin_secret.c: a fresh random secret (needs no weave.conf) */
int cmd_secret(const struct args *a);

/* admin_throttle.c: failed-login and reset-request counters */
int cmd_user_unlock(const struct args *a);
int cmd_throttle_list(const struct args *a);
int cmd_throttle_clear(const struct args *a);

/* admin_nodes.c */
int cmd_node_add(const struct args *a);
int cmd_node_list(const struct args *a);
int cmd_node_remove(const struct args *a);
int cmd_node_assign(const struct args *a);
int cmd_node_drain(const struct args *a);
int cmd_user_move(const struct args *a);
/* EXIT_OK when setting u's users.node to node (NULL: default) leaves no
 * record behind (same database, or no records); else a failure that
 * points to 'user move'. */
int node_change_allowed(const struct user *u, const char *node);
int cmd_node_capacity(const struct args *a);
/*
 * The node for a new account: --node URL|default when given, else
 * db_node_pick(). *node gets a malloc'd URL or NULL (this server).
 */
int choose_node(const struct args *a, char **node);

/* admin_data.c */
int cmd_purge(const struct args *a);
int cmd_stats(const struct args *a);
int cmd_export(const struct args *a);
int cmd_import(const struct args *a);

/* admin_backup.c, admin_restore.c: the whole server or chosen accounts */
int cmd_backup(const struct args *a);
int cmd_restore(const struct args *a);

/* admin_history.c: record history, undoing a stale device */
int cmd_user_history(const struct args *a);
int cmd_user_restore(const struct args *a);

/* admin_migrate.c */
int cmd_migrate(const struct args *a);

/* admin_server.c: schema and operator settings */
int cmd_db_init(const struct args *a);
int cmd_db_check(const struct args *a);
int cmd_backoff(const struct args *a);
int cmd_maintenance(const struct args *a);
int cmd_settings(const struct args *a);
int cmd_status(const struct args *a);
/* The installed schema against the compiled-in one: its version (0: none),
 * how many tables and indexes are missing, and the first of them. */
enum db_status schema_inspect(int64_t *version, size_t *missing, char *first, size_t cap);

/* admin_check.c: what is wrong with this installation, each with its fix */
int cmd_check(const struct args *a);
/* The checks on admin_config_path; returns the number of problems.
 * certificate (or NULL): a CA file to trust for the request through
 * public_url besides the system's. */
/* For setup: a missing mail transfer agent is a note, not a problem
 * (the server works; only reset mails wait for one). */
void check_mta_optional(bool optional);
int check_installation(const char *mail_to, const char *certificate);

/* admin_setup.c: database, weave.conf, Apache and HTTPS in one go */
int cmd_setup(const struct args *a);

/* admin_host.c: the host around the server */
/* Run argv (PATH searched, stdin /dev/null); stdout and stderr go to output
 * when given (cut at its max), else are inherited. The exit status, or -1
 * when it could not run or died of a signal. */
int run_program(const char *const argv[], struct buf *output);
bool program_exists(const char *name);
/* "apache2ctl" (Debian) or "apachectl", NULL when neither is installed. */
const char *apache_ctl(void);

struct apache_user {
	char name[64], group[64];
	unsigned uid, gid;
};
/* The user Apache runs its FastCGI programs as: given, else Debian's
 * APACHE_RUN_USER/GROUP, else www-data, apache or www. 0 or -1. */
int apache_user(const char *given, struct apache_user *u);
/* fn(ctx) in a child running as u; 0 when it returned 0. */
int as_apache_user(const struct apache_user *u, int (*fn)(void *ctx), void *ctx);

/* What Apache's loaded configuration (every included file) says about us. */
struct apache_view {
	bool configtest_ok;
	char configtest_error[320];
	char snippet[512];       /* the file with the Alias to weave.fcgi */
	char mount[256];         /* "/weave" */
	char alias_target[512];  /* the weave.fcgi it names */
	bool encoded_slashes_nodecode;
	int64_t fcgid_max_request_len; /* -1: not set (mod_fcgid's 131072) */
	char certificate[512];   /* the first SSLCertificateFile */
	char weave_config[512];  /* FcgidInitialEnv WEAVE_CONFIG, "" if none */
	char settings_file[512]; /* the file with FcgidPassHeader (the snippet), "" if none */
};
/* Ask apache2ctl -t -D DUMP_INCLUDES, then read each file; -1 when no
 * apachectl is installed. */
int apache_view_load(struct apache_view *v);

/* admin_cache.c: the host-wide caches' counts */
int cmd_cache(const struct args *a);

#endif
