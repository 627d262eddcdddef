/*
 * fuzz.h - what the libFuzzer harnesses of tests/fuzz/ share: the entry
 * points' prototypes, copies of the input as C strings, and property
 * checks that abort (libFuzzer reports an abort as a crash and keeps
 * the input).
 *
 * Each harness feeds one parser the bytes a client (or an operator, for
 * weave.conf) controls, calls the real functions of src/, and frees
 * everything it made: LeakSanitizer runs after every input.
 */
#ifndef WEAVE_FUZZ_H
#define WEAVE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A property of the code under test failed: report it as a crash. */
#define FUZZ_ASSERT(cond)                                                    \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: property failed: %s\n",      \
				__FILE__, __LINE__, #cond);                  \
			abort();                                             \
		}                                                            \
	} while (0)

/*
 * The input as a NUL-terminated string, the way the server gets header
 * and environment values (an embedded NUL ends it early there too).
 */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	return xstrndup((const char *)data, size);
}

/*
 * Split the input at its first '\n' into two new strings; with no '\n'
 * the whole input is the first and the second is empty.
 */
static inline void fuzz_split(const uint8_t *data, size_t size, char **first,
			      char **second)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t n = nl ? (size_t)(nl - data) : size;
	*first = xstrndup((const char *)data, n);
	*second = nl ? xstrndup((const char *)nl + 1, size - n - 1) : xstrdup("");
}

/*
 * A fresh request whose body is the input, every byte of it (NULs
 * included), NUL-terminated as read_body() leaves it; request_free()
 * frees it.
 */
static inline void fuzz_request_with_body(struct request *req, const uint8_t *data,
					  size_t size)
{
	request_init(req, 1, NULL);
	req->body = xmalloc(size + 1);
	memcpy(req->body, data, size);
	req->body[size] = '\0';
	req->body_len = size;
}

#endif
