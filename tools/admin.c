/* admin.c - weave-admin's shared helpers: messages, names, passwords, output, progress. */
#include "admin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/crypto.h>

#include "account_name.h"
#include "auth.h"
#include "password.h"
#include "util.h"

struct config admin_cfg;
const char *admin_config_path;
static const struct command *current;

void admin_set_command(const struct command *c)
{
	current = c;
}

const struct command *admin_command(void)
{
	return current;
}

/* ---- messages ------------------------------------------------------------ */

int fail(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("weave-admin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("weave-admin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (current != NULL)
		fprintf(stderr, "\nUsage: weave-admin %s %s\nTry 'weave-admin %s --help'.\n",
			current->words, current->synopsis, current->words);
	else
		fputs("\nTry 'weave-admin --help'.\n", stderr);
	return EXIT_USAGE;
}

int db_fail(enum db_status st, const char *what)
{
	size_t place = db_current();
	if (st == DB_UNAVAILABLE && place != DB_ACCOUNTS) {
		const struct config_node *n = &admin_cfg.nodes[place - 1];
		return fail(EXIT_DATABASE,
			    "cannot reach storage node %s's database %s at %s:%lld (%s): %s",
			    n->name, n->db_name, n->db_socket ? n->db_socket : n->db_host,
			    (long long)n->db_port, what, db_last_error());
	}
	if (st == DB_UNAVAILABLE)
		return fail(EXIT_DATABASE,
			    "cannot reach the database %s at %s:%lld (%s): %s",
			    admin_cfg.db_name,
			    admin_cfg.db_socket ? admin_cfg.db_socket : admin_cfg.db_host,
			    (long long)admin_cfg.db_port, what, db_last_error());
	if (st == DB_RETRY)
		return fail(EXIT_DATABASE, "the database reported a deadlock or lock "
					   "timeout while %s; run the command again", what);
	/* Before 'db init' every statement names a missing table. */
	if (strstr(db_last_error(), "Table '") != NULL &&
	    strstr(db_last_error(), "doesn't exist") != NULL)
		return fail(EXIT_DATABASE, "database %s has no weave schema, or lacks part of "
			    "it (%s): run 'weave-admin db init'", admin_cfg.db_name,
			    db_last_error());
	return fail(EXIT_DATABASE, "database error while %s: %s", what,
		    db_last_error());
}

/* ---- arguments ------------------------------------------------------------- */

int parse_number_arg(const char *s, int64_t min, int64_t max, const char *what,
		     int64_t *out)
{
	if (parse_int64(s, min, max, out) < 0)
		return usage_error("%s must be a whole number from %" PRId64 " to %" PRId64
				   ", not '%s'", what, min, max, s);
	return EXIT_OK;
}

int account_name(const char *name, char out[USERNAME_MAX + 1],
		 const char **email_out)
{
	size_t len = strlen(name);
	bool email = account_name_is_email(name, len);
	if (!account_name_normalise(name, len, out)) {
		if (email)
			return usage_error("'%s' is too long for an e-mail login", name);
		return usage_error("invalid user name '%s': use 1-32 of A-Z a-z 0-9 . _ -",
				   name);
	}
	if (email && email_out != NULL)
		*email_out = name;
	return EXIT_OK;
}

int find_user(const char *name, struct user *u)
{
	char stored[USERNAME_MAX + 1];
	int rc = account_name(name, stored, NULL);
	memset(u, 0, sizeof *u);
	if (rc != EXIT_OK)
		return rc;
	enum db_status st = db_user_get(stored, USER_LOCK_NONE, u);
	if (st == DB_NOT_FOUND)
		return fail(EXIT_FAILED, "no such user: %s", stored);
	if (st != DB_OK)
		return db_fail(st, "looking up the user");
	return EXIT_OK;
}

size_t records_place(const struct user *u)
{
	return config_node_place(&admin_cfg, u->node);
}

enum db_status records_begin(size_t place)
{
	db_use(place);
	return place == DB_ACCOUNTS ? DB_OK : db_begin();
}

enum db_status records_commit(size_t place)
{
	enum db_status st = DB_OK;
	if (place != DB_ACCOUNTS) {
		db_use(place);
		st = db_commit();
	}
	db_use(DB_ACCOUNTS);
	return st;
}

void records_rollback(void)
{
	db_rollback();
	db_use(DB_ACCOUNTS);
}

int node_url_normalise(const char *in, char *out, size_t cap)
{
	size_t len = strlen(in);
	size_t scheme = strncmp(in, "https://", 8) == 0 ? 8
			: strncmp(in, "http://", 7) == 0 ? 7
							  : 0;
	if (scheme == 0 || len <= scheme || in[scheme] == '/')
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' ||
		    c == '<' || c == '>')
			return -1;
	}
	bool slash = in[len - 1] == '/';
	if (len + (slash ? 0 : 1) + 1 > cap || len + (slash ? 0 : 1) > NODE_URL_MAX)
		return -1;
	memcpy(out, in, len);
	if (!slash)
		out[len++] = '/';
	out[len] = '\0';
	return 0;
}

bool confirm(const char *question)
{
	char answer[16];
	fputs(question, stderr);
	fflush(stderr);
	if (fgets(answer, sizeof answer, stdin) == NULL)
		return false;
	return answer[0] == 'y' || answer[0] == 'Y';
}

/* ---- passwords ---------------------------------------------------------------- */

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

int read_secret_file(const char *path, struct buf *pw)
{
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *f = is_stdin ? stdin : fopen(path, "r");
	if (f == NULL)
		return fail(EXIT_FAILED, "cannot open password file %s: %s", path,
			    strerror(errno));
	int rc = read_line(f, pw);
	if (!is_stdin)
		fclose(f);
	if (rc < 0 || pw->len == 0)
		return fail(EXIT_FAILED, "no password in %s",
			    is_stdin ? "standard input" : path);
	return EXIT_OK;
}

int get_new_password(const struct args *a, struct buf *pw)
{
	if (has_opt(a, OPT_PASSWORD_FILE))
		return read_secret_file(a->opt[OPT_PASSWORD_FILE], pw);
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

int hash_new_password(const char *username, struct buf *pw, char *hash)
{
	enum new_password_verdict verdict =
		password_check_new(pw->data, pw->len, username);
	if (verdict != NEW_PASSWORD_OK)
		return fail(EXIT_FAILED, "%s", password_check_text(verdict));
	char utf8[AUTH_PASSWORD_MAX * 2 + 1];
	size_t len = auth_password_to_utf8(pw->data, pw->len, utf8);
	int rc = password_hash(utf8, len, (int)admin_cfg.password_cost, hash,
			       PASSWORD_HASH_MAX);
	OPENSSL_cleanse(utf8, sizeof utf8);
	if (rc < 0)
		return fail(EXIT_FAILED, "cannot hash the password (OpenSSL failed)");
	return EXIT_OK;
}

/* ---- output ------------------------------------------------------------------- */

void json_print(struct json_object *o)
{
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

struct json_object *json_string_or_null(const char *s)
{
	return s != NULL ? json_object_new_string(s) : NULL;
}

struct json_object *json_stamp(int64_t centiseconds)
{
	char text[32];
	if (centiseconds <= 0)
		return NULL;
	format_timestamp(centiseconds, text, sizeof text);
	/* The text is what gets printed: exact, never through a double. */
	return json_object_new_double_s((double)centiseconds / 100.0, text);
}

void format_utc(int64_t seconds, char *out, size_t cap)
{
	struct tm tm;
	time_t t = (time_t)seconds;
	if (seconds <= 0 || gmtime_r(&t, &tm) == NULL) {
		snprintf(out, cap, "never");
		return;
	}
	strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

void format_bytes(int64_t bytes, char *out, size_t cap)
{
	static const char *const units[] = { "KB", "MB", "GB", "TB" };
	if (bytes < 1024) {
		snprintf(out, cap, "%" PRId64 " B", bytes);
		return;
	}
	double v = (double)bytes / 1024.0;
	size_t u = 0;
	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	snprintf(out, cap, "%.1f %s", v, units[u]);
}

/* ---- progress --------------------------------------------------------------------- */

#define BAR_WIDTH 24

double monotonic_seconds(void)
{
	return (double)monotonic_micros() / 1e6;
}


static void format_duration(double seconds, char *out, size_t cap)
{
	int64_t s = seconds < 0 ? 0 : (int64_t)(seconds + 0.5);
	if (s >= 3600)
		snprintf(out, cap, "%" PRId64 ":%02" PRId64 ":%02" PRId64, s / 3600,
			 s / 60 % 60, s % 60);
	else
		snprintf(out, cap, "%" PRId64 ":%02" PRId64, s / 60, s % 60);
}

/* Columns of the terminal on stderr (80 when it does not say). */
static int terminal_columns(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

/* A count in the bar's unit: bytes as "1.2 MB", anything else as a number. */
static void format_amount(const struct progress *p, double n, char *out, size_t cap)
{
	if (strcmp(p->unit, "bytes") == 0)
		format_bytes((int64_t)n, out, cap);
	else
		snprintf(out, cap, "%.0f", n);
}

/* One line, never wider than the terminal: a line that wraps is redrawn
 * below itself instead of over itself. */
static void progress_draw(struct progress *p, double now)
{
	char bar[BAR_WIDTH + 1] = "", eta[32] = "", elapsed[32], done_s[32], total_s[32],
	     rate_s[32], tail[200], line[400];
	double took = now - p->started;
	double rate = took > 0.05 ? (double)p->done / took : 0.0;
	bool bytes = strcmp(p->unit, "bytes") == 0;
	const char *unit = bytes ? "" : p->unit;

	p->drawn = now;
	format_duration(took, elapsed, sizeof elapsed);
	format_amount(p, (double)p->done, done_s, sizeof done_s);
	format_amount(p, rate, rate_s, sizeof rate_s);
	int columns = terminal_columns();
	if (p->total > 0) {
		int64_t done = p->done > p->total ? p->total : p->done;
		format_amount(p, (double)p->total, total_s, sizeof total_s);
		if (rate > 0 && done < p->total)
			format_duration((double)(p->total - done) / rate, eta, sizeof eta);
		snprintf(tail, sizeof tail, "%3d%% %s/%s %s  %s/s  %s%s",
			 (int)(done * 100 / p->total), done_s, total_s, unit, rate_s,
			 eta[0] ? "ETA " : "elapsed ", eta[0] ? eta : elapsed);
		/* The bar takes what is left of the line, up to BAR_WIDTH. */
		int room = columns - 1 - (int)strlen(p->label) - (int)strlen(tail) - 4;
		int width = room < BAR_WIDTH ? room : BAR_WIDTH;
		if (width >= 5) {
			int fill = (int)(done * width / p->total);
			for (int i = 0; i < width; i++)
				bar[i] = i < fill ? '#' : '-';
			bar[width] = '\0';
			snprintf(line, sizeof line, "%s [%s] %s", p->label, bar, tail);
		} else {
			snprintf(line, sizeof line, "%s %s", p->label, tail);
		}
	} else {
		snprintf(line, sizeof line, "%s %s %s  %s/s  elapsed %s", p->label, done_s, unit,
			 rate_s, elapsed);
	}
	if ((int)strlen(line) > columns - 1)
		line[columns - 1] = '\0';
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
}

bool progress_shown(void)
{
	return isatty(STDERR_FILENO) != 0;
}

void progress_start(struct progress *p, const char *label, const char *unit,
		    int64_t total)
{
	memset(p, 0, sizeof *p);
	p->on = progress_shown();
	p->label = label;
	p->unit = unit;
	p->total = total;
	p->started = monotonic_seconds();
	if (p->on)
		progress_draw(p, p->started);
}

void progress_update(struct progress *p, int64_t done)
{
	p->done = done;
	if (!p->on)
		return;
	double now = monotonic_seconds();
	if (now - p->drawn >= 0.1)
		progress_draw(p, now);
}

void progress_end(struct progress *p)
{
	if (!p->on)
		return;
	progress_draw(p, monotonic_seconds());
	fputc('\n', stderr);
	p->on = false;
}
