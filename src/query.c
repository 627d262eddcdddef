/* query.c - parse and validate storage/<coll> selection parameters. */
#include "query.h"

#include <stdlib.h>
#include <string.h>

#include "request.h"
#include "util.h"
#include "validate.h"

static enum query_error parse_ids(const struct query_param *p, size_t max_ids,
				  struct wbo_query *q)
{
	size_t count = 1;
	for (size_t i = 0; i < p->value_len; i++)
		if (p->value[i] == ',')
			count++;
	if (count > max_ids)
		return QUERY_TOO_MANY_IDS;
	q->ids = xcalloc(count, sizeof *q->ids);
	q->id_lens = xcalloc(count, sizeof *q->id_lens);
	q->has_ids = true;
	const char *s = p->value;
	const char *end = p->value + p->value_len;
	while (s <= end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		size_t len = comma ? (size_t)(comma - s) : (size_t)(end - s);
		/* Tolerate an empty list or a trailing comma. An id no record
		 * can have (too long, a bad byte) matches nothing, as an
		 * unknown one does: both Mozilla servers answered 200. */
		if (len > 0 && validate_wbo_id(s, len)) {
			q->ids[q->nids] = s;
			q->id_lens[q->nids] = len;
			q->nids++;
		}
		if (comma == NULL)
			break;
		s = comma + 1;
	}
	return QUERY_OK;
}

static bool parse_index(const char *v, int64_t *out)
{
	return parse_int64(v, -2000000000, 2000000000, out) == 0;
}

/* limit and offset: an integer; a negative one means none, as on both
 * Mozilla servers (server-storage: "int(limit) > 0"). */
static bool parse_count(const char *v, int64_t *out)
{
	if (parse_int64(v, INT64_MIN, INT32_MAX, out) < 0)
		return false;
	if (*out < 0)
		*out = 0;
	return true;
}

enum query_error query_parse(const struct request *req, size_t max_ids,
			     struct wbo_query *q, const char **bad)
{
	const struct query_param *p;
	enum query_error e;

	memset(q, 0, sizeof *q);
	*bad = NULL;

	if ((p = request_param(req, "ids")) != NULL) {
		*bad = "ids";
		if ((e = parse_ids(p, max_ids, q)) != QUERY_OK)
			return e;
	}
	if ((p = request_param(req, "parentid")) != NULL) {
		*bad = "parentid";
		if (!validate_wbo_id(p->value, p->value_len))
			return QUERY_BAD_ID;
		q->parentid = p->value;
		q->parentid_len = p->value_len;
	}
	if ((p = request_param(req, "predecessorid")) != NULL) {
		*bad = "predecessorid";
		if (!validate_wbo_id(p->value, p->value_len))
			return QUERY_BAD_ID;
		q->predecessorid = p->value;
		q->predecessorid_len = p->value_len;
	}
	if ((p = request_param(req, "newer")) != NULL) {
		*bad = "newer";
		if (parse_timestamp(p->value, &q->newer) < 0)
			return QUERY_BAD_VALUE;
		q->has_newer = true;
	}
	if ((p = request_param(req, "older")) != NULL) {
		*bad = "older";
		if (parse_timestamp(p->value, &q->older) < 0)
			return QUERY_BAD_VALUE;
		q->has_older = true;
	}
	if ((p = request_param(req, "index_above")) != NULL) {
		*bad = "index_above";
		if (!parse_index(p->value, &q->index_above))
			return QUERY_BAD_VALUE;
		q->has_index_above = true;
	}
	if ((p = request_param(req, "index_below")) != NULL) {
		*bad = "index_below";
		if (!parse_index(p->value, &q->index_below))
			return QUERY_BAD_VALUE;
		q->has_index_below = true;
	}
	if ((p = request_param(req, "full")) != NULL)
		q->full = strcmp(p->value, "0") != 0; /* full=0 means off, as in PHP */
	if ((p = request_param(req, "limit")) != NULL) {
		*bad = "limit";
		if (!parse_count(p->value, &q->limit))
			return QUERY_BAD_VALUE;
	}
	if ((p = request_param(req, "offset")) != NULL) {
		*bad = "offset";
		if (!parse_count(p->value, &q->offset))
			return QUERY_BAD_VALUE;
	}
	if ((p = request_param(req, "sort")) != NULL) {
		*bad = "sort";
		if (strcmp(p->value, "oldest") == 0)
			q->sort = SORT_OLDEST;
		else if (strcmp(p->value, "newest") == 0)
			q->sort = SORT_NEWEST;
		else if (strcmp(p->value, "index") == 0)
			q->sort = SORT_INDEX;
		else
			return QUERY_BAD_VALUE;
	}
	*bad = NULL;
	return QUERY_OK;
}

bool query_has_selector(const struct wbo_query *q)
{
	return q->has_ids || q->parentid || q->predecessorid || q->has_newer ||
	       q->has_older || q->has_index_above || q->has_index_below ||
	       q->limit > 0 || q->offset > 0;
}

void query_free(struct wbo_query *q)
{
	free(q->ids);
	free(q->id_lens);
	q->ids = NULL;
	q->id_lens = NULL;
	q->nids = 0;
}
