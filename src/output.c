/* output.c - JSON array, newlines and whoisi list encoders. */
#include "output.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static const char *const content_types[OUTPUT__MAX] = {
	[OUTPUT_JSON] = "application/json",
	[OUTPUT_NEWLINES] = "application/newlines",
	[OUTPUT_WHOISI] = "application/whoisi",
};

const char *output_content_type(enum output_format f)
{
	return f < OUTPUT__MAX ? content_types[f] : content_types[OUTPUT_JSON];
}

/* Quality of one media range ("type/sub;q=0.5"), 0..1000. */
static int range_quality(const char *params, size_t len)
{
	const char *q = NULL;
	for (size_t i = 0; i + 1 < len; i++) {
		if ((params[i] == 'q' || params[i] == 'Q') && params[i + 1] == '=' &&
		    (i == 0 || params[i - 1] == ';' || params[i - 1] == ' ')) {
			q = params + i + 2;
			break;
		}
	}
	if (q == NULL)
		return 1000;
	int value = 0, digits = 0;
	const char *end = params + len;
	if (q < end && *q == '1')
		return 1000;
	if (q < end && *q == '0')
		q++;
	if (q < end && *q == '.') {
		for (q++; q < end && *q >= '0' && *q <= '9' && digits < 3; q++, digits++)
			value = value * 10 + (*q - '0');
	}
	while (digits++ < 3)
		value *= 10;
	return value;
}

enum output_format output_choose(const char *accept)
{
	/* score = quality * 4 + specificity, so explicit beats wildcard. */
	int score[OUTPUT__MAX] = { 0 };
	if (accept == NULL || *accept == '\0')
		return OUTPUT_JSON;
	const char *p = accept;
	while (*p != '\0') {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		/* Taken now: skipping blanks below shortens len, and an all-blank
		 * last item would otherwise leave p where it is, for ever. */
		const char *next = comma ? comma + 1 : p + len;
		const char *item = p;
		while (len > 0 && (*item == ' ' || *item == '\t')) {
			item++;
			len--;
		}
		const char *semi = memchr(item, ';', len);
		size_t type_len = semi ? (size_t)(semi - item) : len;
		while (type_len > 0 && item[type_len - 1] == ' ')
			type_len--;
		int quality = semi ? range_quality(semi, len - (size_t)(semi - item))
				   : 1000;
		for (int f = 0; f < OUTPUT__MAX; f++) {
			int specificity = -1;
			const char *ct = content_types[f];
			if (type_len == strlen(ct) && strncasecmp(item, ct, type_len) == 0)
				specificity = 3;
			else if (type_len == 13 && strncasecmp(item, "application/*", 13) == 0)
				specificity = 2;
			else if (type_len == 3 && strncmp(item, "*/*", 3) == 0)
				specificity = 1;
			if (specificity > 0 && quality > 0 &&
			    quality * 4 + specificity > score[f])
				score[f] = quality * 4 + specificity;
		}
		p = next;
	}
	/* A wildcard match of equal quality does not beat an explicit one. */
	enum output_format best = OUTPUT_JSON;
	for (int f = 1; f < OUTPUT__MAX; f++)
		if (score[f] / 4 > score[best] / 4 ||
		    (score[f] / 4 == score[best] / 4 && score[f] > score[best]))
			best = (enum output_format)f;
	return best;
}

int output_begin(struct output_list *list, enum output_format format,
		 struct buf *body)
{
	list->format = format;
	list->body = body;
	list->count = 0;
	return format == OUTPUT_JSON ? buf_putc(body, '[') : 0;
}

int output_item_begin(struct output_list *list)
{
	switch (list->format) {
	case OUTPUT_JSON:
		return list->count > 0 ? buf_putc(list->body, ',') : 0;
	case OUTPUT_WHOISI:
		list->item_start = list->body->len;
		return buf_append(list->body, "\0\0\0\0", 4);
	default:
		return 0;
	}
}

int output_item_end(struct output_list *list)
{
	list->count++;
	if (list->format == OUTPUT_NEWLINES)
		return buf_putc(list->body, '\n');
	if (list->format == OUTPUT_WHOISI) {
		uint32_t n = (uint32_t)(list->body->len - list->item_start - 4);
		unsigned char *at = (unsigned char *)list->body->data + list->item_start;
		at[0] = (unsigned char)(n >> 24);
		at[1] = (unsigned char)(n >> 16);
		at[2] = (unsigned char)(n >> 8);
		at[3] = (unsigned char)n;
	}
	return 0;
}

int output_end(struct output_list *list)
{
	return list->format == OUTPUT_JSON ? buf_putc(list->body, ']') : 0;
}
