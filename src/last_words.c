/* last_words.c - log what weave.fcgi was doing when a signal or exit() ends it (last_words.h). */
#include "last_words.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define URI_MAX 200
#define METHOD_MAX 16

static volatile sig_atomic_t in_request;
static bool tell_idle_deaths;
static unsigned long request_id;
static char request_method[METHOD_MAX + 1];
static char request_path[URI_MAX + 1];
static struct timespec request_start;
static const char *volatile current_phase = "starting";

/* A bounded copy without control bytes, cut at stop (if not NUL). */
static void copy_clean(char *dst, size_t cap, const char *src, char stop)
{
	size_t n = 0;
	for (; src != NULL && src[n] != '\0' && src[n] != stop && n + 1 < cap; n++)
		dst[n] = (unsigned char)src[n] < 0x20 || src[n] == 0x7f ? '?' : src[n];
	dst[n] = '\0';
}

void last_words_request(unsigned long id, const char *method, const char *uri)
{
	in_request = 0; /* a signal meanwhile sees no half-written request */
	request_id = id;
	copy_clean(request_method, sizeof request_method, method ? method : "?", '\0');
	copy_clean(request_path, sizeof request_path, uri ? uri : "", '?');
	clock_gettime(CLOCK_MONOTONIC, &request_start);
	current_phase = "handling the request";
	in_request = 1;
}

const char *last_words_phase(const char *phase)
{
	const char *before = current_phase;
	current_phase = phase;
	return before;
}

void last_words_idle(void)
{
	in_request = 0;
	current_phase = "waiting for a request";
}

/* ---- async-signal-safe formatting into a fixed line */

struct line {
	char text[512];
	size_t len;
};

static void put(struct line *l, const char *s)
{
	while (*s != '\0' && l->len + 1 < sizeof l->text)
		l->text[l->len++] = *s++;
}

static void put_uint(struct line *l, uint64_t v, int width)
{
	char digits[24];
	int n = 0;
	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0 && n < (int)sizeof digits);
	while (n < width && n < (int)sizeof digits)
		digits[n++] = '0';
	while (n > 0 && l->len + 1 < sizeof l->text)
		l->text[l->len++] = digits[--n];
}

/* The time as log.c writes it, 2026-12-04T18:40:00Z, from days since
 * 1970 by the civil-from-days rule (no gmtime_r in a signal handler). */
static void put_time(struct line *l)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t secs = ts.tv_sec, days = secs / 86400, rem = secs % 86400;
	int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
	int64_t day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
	int64_t year = yoe + era * 400 + (month <= 2);
	put_uint(l, (uint64_t)year, 4), put(l, "-"), put_uint(l, (uint64_t)month, 2);
	put(l, "-"), put_uint(l, (uint64_t)day, 2), put(l, "T");
	put_uint(l, (uint64_t)(rem / 3600), 2), put(l, ":");
	put_uint(l, (uint64_t)(rem / 60 % 60), 2), put(l, ":");
	put_uint(l, (uint64_t)(rem % 60), 2), put(l, "Z");
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGTERM: return "SIGTERM";
	case SIGINT: return "SIGINT";
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	default: return "a signal";
	}
}

static void say_last_words(const char *how)
{
	struct line l = { .len = 0 };
	put_time(&l);
	put(&l, " weave["), put_uint(&l, (uint64_t)getpid(), 0);
	if (!in_request) {
		if (!tell_idle_deaths)
			return;
		put(&l, "] info: "), put(&l, how), put(&l, " while waiting for a request\n");
	} else {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t ms = (now.tv_sec - request_start.tv_sec) * 1000 +
			     (now.tv_nsec - request_start.tv_nsec) / 1000000;
		put(&l, "] error req="), put_uint(&l, request_id, 0);
		put(&l, ": "), put(&l, how), put(&l, " while "), put(&l, current_phase);
		put(&l, ", "), put_uint(&l, (uint64_t)(ms > 0 ? ms : 0), 0);
		put(&l, " ms into "), put(&l, request_method), put(&l, " ");
		put(&l, request_path), put(&l, "\n");
	}
	ssize_t ignored = write(STDERR_FILENO, l.text, l.len);
	(void)ignored;
}

static void on_signal(int sig)
{
	struct line how = { .len = 0 };
	put(&how, "ended by "), put(&how, signal_name(sig));
	say_last_words(how.text);
	/* Die of the signal itself, so mod_fcgid and a core dump see it. */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_exit_hook(void)
{
	if (in_request)
		say_last_words("exit() called");
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define SANITIZED 1
#endif
#endif

void last_words_install(bool tell_idle)
{
	tell_idle_deaths = tell_idle;
	/* A stack overflow's SIGSEGV needs a stack of its own to be told. */
	static char alt_stack[64 * 1024];
	stack_t ss = { .ss_sp = alt_stack, .ss_size = sizeof alt_stack, .ss_flags = 0 };
	sigaltstack(&ss, NULL);
	int signals[] = { SIGTERM, SIGINT, SIGABRT,
#ifndef SANITIZED
			  SIGSEGV, SIGBUS, SIGFPE, SIGILL,
#endif
	};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
		sigaction(signals[i], &sa, NULL);
	atexit(on_exit_hook);
}
