/*
 * last_words.h - one log line when weave.fcgi dies, saying what it was doing.
 *
 * A FastCGI process can end without a word: mod_fcgid sends SIGTERM (its
 * idle or busy timeout, a restart, Apache stopping) and then SIGKILL; a bug
 * ends it with SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT; exit() ends it
 * on out of memory. Each of these leaves one line in Apache's error log
 * with the request id, method, path (never the query string, which may
 * carry a reset code), the phase and how long the request had run.
 * SIGKILL cannot be caught; the line of the SIGTERM before it is the one.
 * SIGPIPE stays ignored (main.c): a client gone away is a failed write.
 *
 * The state lives in static buffers written outside the handler, and the
 * handler only formats them with write(2): it is async-signal-safe.
 * Nothing here allocates or fails.
 */
#ifndef WEAVE_LAST_WORDS_H
#define WEAVE_LAST_WORDS_H

#include <stdbool.h>

/* Install the signal handlers and the atexit() hook (once, at start).
 * Under ASan/UBSan the fault signals stay the sanitizer's. tell_idle:
 * also log (at info) a death between requests, mod_fcgid's usual end. */
void last_words_install(bool tell_idle);

/* A request begins: its id, method and REQUEST_URI (either may be NULL;
 * both are copied, bounded, query string dropped). */
void last_words_request(unsigned long id, const char *method, const char *uri);

/*
 * What the process does now: a string literal ("waiting for the
 * database"), kept by pointer. Returns the phase it replaces, so that a
 * caller can put it back.
 */
const char *last_words_phase(const char *phase);

/* Between requests: a death now is no request's. */
void last_words_idle(void);

#endif
