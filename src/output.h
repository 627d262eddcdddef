/*
 * output.h - the three list encodings of multi-record GETs
 * (docs/protocol.md, Output formats): a JSON array; application/newlines
 * (each item followed by '\n', the last one too, never a blank line);
 * application/whoisi (each item preceded by its length as a 32-bit
 * big-endian integer).
 *
 * Usage: output_begin(), then for each item output_item_begin(), append
 * the item's JSON to list->body, output_item_end(); then output_end().
 * Every function returns 0, or -1 when the body would pass its maximum.
 */
#ifndef WEAVE_OUTPUT_H
#define WEAVE_OUTPUT_H

#include <stddef.h>

#include "buf.h"

enum output_format { OUTPUT_JSON, OUTPUT_NEWLINES, OUTPUT_WHOISI, OUTPUT__MAX };

/*
 * Pick the format from an Accept header by quality values: an explicit
 * media type beats a wildcard of the same quality, and JSON wins ties
 * (a browser's default Accept, with its wildcard, gets JSON).
 */
enum output_format output_choose(const char *accept);

const char *output_content_type(enum output_format f);

struct output_list {
	enum output_format format;
	struct buf *body;
	size_t count;
	size_t item_start;
};

int output_begin(struct output_list *list, enum output_format format,
		 struct buf *body);
int output_item_begin(struct output_list *list);
int output_item_end(struct output_list *list);
int output_end(struct output_list *list);

#endif
