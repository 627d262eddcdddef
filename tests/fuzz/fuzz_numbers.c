/*
 * fuzz_numbers.c - the number parsers every numeric client value goes
 * through (src/util.c): parse_int64 (Content-Length, limit, offset,
 * index_above/below) and parse_timestamp (newer, older,
 * X-If-Unmodified-Since). A parsed value printed back must parse to
 * itself.
 */
#include "fuzz.h"

#include <inttypes.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	char text[32];
	int64_t v, again;

	if (parse_int64(s, INT64_MIN, INT64_MAX, &v) == 0) {
		snprintf(text, sizeof text, "%" PRId64, v);
		FUZZ_ASSERT(parse_int64(text, INT64_MIN, INT64_MAX, &again) == 0);
		FUZZ_ASSERT(again == v);
		/* Bounds hold. */
		if (parse_int64(s, 0, INT32_MAX, &again) == 0)
			FUZZ_ASSERT(again >= 0 && again <= INT32_MAX && again == v);
		else
			FUZZ_ASSERT(v < 0 || v > INT32_MAX);
	}
	if (parse_timestamp(s, &v) == 0) {
		FUZZ_ASSERT(v >= 0);
		format_timestamp(v, text, sizeof text);
		FUZZ_ASSERT(parse_timestamp(text, &again) == 0);
		FUZZ_ASSERT(again == v);
	}
	free(s);
	return 0;
}
