/* log.c - leveled one-line log records with request context on stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char *const level_names[LOG_LEVEL__MAX] = {
	[LOG_LEVEL_ERROR] = "error",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_DEBUG] = "debug",
};

static enum log_level current_level = LOG_LEVEL_INFO;
static const char *program = "weave";
static unsigned long current_request;
static char current_user[64];
static char current_client[300]; /* "METHOD PATH" */
static char current_address[64];

int log_level_parse(const char *name, enum log_level *level)
{
	for (int i = 0; i < LOG_LEVEL__MAX; i++) {
		if (strcmp(name, level_names[i]) == 0) {
			*level = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_set_level(enum log_level level)
{
	current_level = level;
}

void log_set_program(const char *name)
{
	program = name;
}

void log_set_request(unsigned long request_id, const char *user)
{
	current_request = request_id;
	current_user[0] = '\0';
	if (user != NULL)
		copy_string(current_user, sizeof current_user, user);
}

/* Copy text into out as one token: blanks and control bytes become '?'. */
static void copy_token(char *out, size_t cap, const char *text, size_t max)
{
	size_t n = 0;
	for (; text != NULL && text[n] != '\0' && n < max && n + 1 < cap; n++) {
		unsigned char c = (unsigned char)text[n];
		out[n] = c <= ' ' || c == 0x7f ? '?' : (char)c;
	}
	out[n] = '\0';
}

void log_set_client(const char *address, const char *method, const char *uri)
{
	char m[16], path[201];
	copy_token(current_address, sizeof current_address, address ? address : "-",
		   sizeof current_address - 1);
	copy_token(m, sizeof m, method ? method : "-", sizeof m - 1);
	size_t len = uri != NULL ? strcspn(uri, "?") : 0;
	copy_token(path, sizeof path, uri != NULL ? uri : "-", len > 0 ? len : 1);
	/* "METHOD PATH", as snprintf would put it, without its machinery:
	 * this runs for every request, logged or not. */
	size_t at = copy_string(current_client, sizeof current_client, m);
	if (at + 1 < sizeof current_client) {
		current_client[at++] = ' ';
		copy_string(current_client + at, sizeof current_client - at, path);
	}
}

void log_clear_request(void)
{
	current_request = 0;
	current_user[0] = '\0';
	current_address[0] = '\0';
	current_client[0] = '\0';
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	if (level > current_level)
		return;
	va_start(ap, fmt);
	vsnprintf(message, sizeof message, fmt, ap);
	va_end(ap);
	/* Keep one record per line whatever the message holds. */
	for (char *p = message; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	/* A time of our own: mod_fcgid hands our stderr to Apache's error log
	 * as it is, with no time of Apache's in front. */
	char when[40] = "";
	struct timespec ts;
	struct tm tm;
	if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && gmtime_r(&ts.tv_sec, &tm) != NULL) {
		size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000);
	}
	if (current_request != 0)
		fprintf(stderr, "%s %s[%ld] %s req=%lu user=%s addr=%s %s: %s\n", when, program,
			(long)getpid(), level_names[level], current_request,
			current_user[0] ? current_user : "-",
			current_address[0] ? current_address : "-",
			current_client[0] ? current_client : "- -", message);
	else
		fprintf(stderr, "%s %s[%ld] %s: %s\n", when, program, (long)getpid(),
			level_names[level], message);
	fflush(stderr);
}
