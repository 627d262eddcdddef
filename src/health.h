/*
 * health.h - the two URLs for machines rather than clients, answered
 * before the route table (so maintenance mode and the operator settings
 * never hide them):
 *
 *   GET /weave/health (also /weave/__heartbeat__, the name Mozilla's
 *       servers used): 200 {"status":"ok",...} when the database answers
 *       and its schema is the one this build needs, else 503 with
 *       "status":"error" (or "upgrade" when only the schema is behind)
 *       and Retry-After. Carries the version; never the error text.
 *   GET /weave/metrics: the counters of metrics.h in Prometheus text
 *       format. 404 while the setting metrics is off (the default); when
 *       on, 403 unless the client address is in metrics_allow or the
 *       request carries "Authorization: Bearer <metrics_token>".
 *
 * Any other method on them is 405 with Allow: GET, HEAD.
 */
#ifndef WEAVE_HEALTH_H
#define WEAVE_HEALTH_H

#include <stdbool.h>

#include "request.h"
#include "response.h"

/* Answer req into resp if it asks for one of the URLs above; false
 * (resp untouched) for every other request. */
bool health_serve(struct request *req, struct response *resp);

#endif
