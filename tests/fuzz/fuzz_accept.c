/* fuzz_accept.c - the Accept header of list GETs (src/output.c). */
#include "fuzz.h"

#include "output.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *accept = fuzz_string(data, size);
	enum output_format f = output_choose(accept);
	FUZZ_ASSERT(f < OUTPUT__MAX);
	FUZZ_ASSERT(output_content_type(f) != NULL);

	/* Encode two items in the chosen format: the framing must hold. */
	struct buf body;
	struct output_list list;
	buf_init(&body, 4096);
	FUZZ_ASSERT(output_begin(&list, f, &body) == 0);
	for (int i = 0; i < 2; i++) {
		FUZZ_ASSERT(output_item_begin(&list) == 0);
		FUZZ_ASSERT(buf_puts(&body, "\"abc\"") == 0);
		FUZZ_ASSERT(output_item_end(&list) == 0);
	}
	FUZZ_ASSERT(output_end(&list) == 0);
	static const char *const expect[OUTPUT__MAX] = {
		[OUTPUT_JSON] = "[\"abc\",\"abc\"]",
		[OUTPUT_NEWLINES] = "\"abc\"\n\"abc\"\n",
		[OUTPUT_WHOISI] = "\0\0\0\5\"abc\"\0\0\0\5\"abc\"",
	};
	size_t want = f == OUTPUT_WHOISI ? 18 : strlen(expect[f]);
	FUZZ_ASSERT(body.len == want && memcmp(body.data, expect[f], want) == 0);
	buf_free(&body);
	free(accept);
	return 0;
}
