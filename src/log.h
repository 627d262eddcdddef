/*
 * log.h - one-line log records on stderr (Apache's error log under
 * mod_fcgid, which adds no time of its own):
 * "2026-01-02T03:04:05.678Z weave[pid] LEVEL req=ID user=NAME addr=ADDRESS
 * METHOD PATH: message" inside a request, "... weave[pid] LEVEL: message"
 * outside one.
 *
 * The request context (id, user, client address, method, path) is set by
 * main.c for the duration of one request and cleared afterwards. The path
 * is logged without its query string (reset codes may travel there),
 * cut at 200 bytes, with control characters and blanks replaced by '?'. Never log passwords,
 * payloads or Authorization headers.
 */
#ifndef WEAVE_LOG_H
#define WEAVE_LOG_H

enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
	LOG_LEVEL__MAX
};

/* Returns 0 and sets *level for "error", "warn", "info" or "debug", else -1. */
int log_level_parse(const char *name, enum log_level *level);
void log_set_level(enum log_level level);
/* Name printed as the program in each line (default "weave"). */
void log_set_program(const char *name);

/* Request context; user may be NULL. The strings are copied. */
void log_set_request(unsigned long request_id, const char *user);
/* The client's address, the method and the request URI; any may be NULL. */
void log_set_client(const char *address, const char *method, const char *uri);
void log_clear_request(void);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
