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
	OPT_FORMAT,        /* --format minimal|fsyncms|php */
	OPT_DRY_RUN,       /* --dry-run, -n */
	OPT_BATCH,         /* --batch N */
	OPT_PAUSE,         /* --pause MILLISECONDS */
	OPT_TOP,           /* --top N */
	OPT_REPLACE,       /* --replace */
	OPT__MAX
};

#define OPT(o) (UINT32_C(1) << (o))
#define ARGS_MAX 4

struct args {
	const char *pos[ARGS_MAX]; /* positional arguments after the command words */
	int npos;
	const char *opt[OPT__MAX]; /* the value, "" for a flag, NULL when absent */
};

struct command {
	const char *words;    /* "user add" */
	int min_args, max_args;
	uint32_t options;     /* OPT() bits accepted besides --config and --help */
	int (*run)(const struct args *a);
	const char *synopsis; /* what follows the words in a usage line */
	const char *summary;  /* one line for the overview */
	const char *help;     /* the rest of COMMAND --help */
};

/* weave.conf as loaded by main(). */
extern struct config admin_cfg;

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
 * NAME as stored: lower case; a NAME containing '@' is an e-mail login
 * and maps to its Sync 1.1 hashed name (*email_out, if given, gets the
 * address). EXIT_OK, or EXIT_USAGE with a message for a malformed name.
 */
int account_name(const char *name, char out[USERNAME_MAX + 1],
		 const char **email_out);

/* account_name() + db_user_get(): EXIT_OK with *u filled (user_free() it),
 * EXIT_FAILED "no such user", or EXIT_DATABASE. */
int find_user(const char *name, struct user *u);

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

/* admin_throttle.c: failed-login and reset-request counters */
int cmd_user_unlock(const struct args *a);
int cmd_throttle_list(const struct args *a);
int cmd_throttle_clear(const struct args *a);

/* admin_nodes.c */
int cmd_node_add(const struct args *a);
int cmd_node_list(const struct args *a);
int cmd_node_remove(const struct args *a);
int cmd_node_assign(const struct args *a);
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

/* admin_migrate.c */
int cmd_migrate(const struct args *a);

/* admin_server.c: schema and operator settings */
int cmd_db_init(const struct args *a);
int cmd_db_check(const struct args *a);
int cmd_backoff(const struct args *a);
int cmd_maintenance(const struct args *a);
int cmd_settings(const struct args *a);

/* admin_cache.c: the host-wide caches' counts */
int cmd_cache(const struct args *a);

#endif
