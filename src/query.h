/*
 * query.h - the selection parameters of GET and DELETE storage/<coll>
 * (docs/protocol.md, Query parameters): ids, parentid, predecessorid,
 * newer, older, index_above, index_below, full, limit, offset, sort.
 *
 * Unknown parameters are ignored (clients add v=, client=); a known one
 * with a bad value is an error, never a silent default.
 *
 * Ownership: string members point into the request's parameters; ids is
 * allocated and freed by query_free().
 */
#ifndef WEAVE_QUERY_H
#define WEAVE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct request;

enum query_sort { SORT_NONE, SORT_OLDEST, SORT_NEWEST, SORT_INDEX, SORT__MAX };

struct wbo_query {
	const char **ids;
	size_t *id_lens;
	size_t nids;
	bool has_ids;
	const char *parentid;
	size_t parentid_len;
	const char *predecessorid;
	size_t predecessorid_len;
	bool has_newer, has_older, has_index_above, has_index_below;
	int64_t newer, older; /* centiseconds */
	int64_t index_above, index_below;
	bool full;
	int64_t limit;  /* 0 = no limit */
	int64_t offset; /* 0 = none */
	enum query_sort sort;
};

enum query_error {
	QUERY_OK,
	QUERY_BAD_ID,     /* parentid or predecessorid: 400 8 (in ids= a bad
			   * id is no error: it matches nothing) */
	QUERY_TOO_MANY_IDS, /* over max_ids: 400 17 */
	QUERY_BAD_VALUE,  /* a number or sort that does not parse: 400 1 */
	QUERY_ERROR__MAX
};

/* Parse the request's parameters; the failing parameter's name goes to *bad. */
enum query_error query_parse(const struct request *req, size_t max_ids,
			     struct wbo_query *q, const char **bad);

/* True when something narrows the selection (DELETE without any deletes all). */
bool query_has_selector(const struct wbo_query *q);

void query_free(struct wbo_query *q);

#endif
