/*
 * fuzz_query.c - the selection parameters of GET and DELETE
 * storage/<coll> (src/query.c), from a raw query string decoded by
 * request_parse_uri (src/request.c). Input: the query string.
 */
#include "fuzz.h"

#include "query.h"
#include "request.h"
#include "validate.h"

#define FUZZ_MAX_IDS 100

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *query = fuzz_string(data, size);
	struct request req;
	struct wbo_query q;
	const char *bad = NULL;

	request_init(&req, 1, NULL);
	if (request_parse_uri(&req, NULL, NULL, "/1.0/u/storage/c", query) ==
	    REQUEST_OK) {
		enum query_error e = query_parse(&req, FUZZ_MAX_IDS, &q, &bad);
		FUZZ_ASSERT(e < QUERY_ERROR__MAX);
		if (e == QUERY_OK) {
			FUZZ_ASSERT(bad == NULL);
			FUZZ_ASSERT(q.nids <= FUZZ_MAX_IDS);
			for (size_t i = 0; i < q.nids; i++)
				FUZZ_ASSERT(validate_wbo_id(q.ids[i], q.id_lens[i]));
			FUZZ_ASSERT(q.limit >= 0 && q.offset >= 0);
			FUZZ_ASSERT(q.sort < SORT__MAX);
			(void)query_has_selector(&q);
		} else {
			FUZZ_ASSERT(bad != NULL);
		}
		query_free(&q);
	}
	request_free(&req);
	free(query);
	return 0;
}
