/*
 * metrics.h - what the server did, host-wide, in Prometheus text format.
 *
 * Counters live in one small file every FastCGI process of the host maps
 * (METRICS file: the account cache file's path with ".metrics", about
 * 40 KiB, mode 0600, made by the first process), so any process answers
 * for the whole host. Each counter is a 64-bit atomic add: no lock, and a
 * process killed mid-request loses at most its own count.
 *
 * Counted per request (metrics_request): requests by route, method and
 * status; a latency histogram per route. Counted where they happen:
 * database failures (metrics_db_error). Read from the account cache
 * file when it is open: KDF runs and cache hits (change_board.h).
 *
 * Without the file (metrics_open failed, or never called) every call is
 * a no-op and metrics_render() says the counters are unavailable.
 */
#ifndef WEAVE_METRICS_H
#define WEAVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "request.h"

/* Path of the metrics file for cfg into out; -1 when it does not fit. */
int metrics_path(const struct config *cfg, char *out, size_t cap);

/*
 * Map the file at path, creating or resetting it when its layout is not
 * this build's. 0 on success; -1 with a message in err.
 */
int metrics_open(const char *path, char *err, size_t cap);

/* Count one answered request: its route (from req's path), method and
 * status, and its time in microseconds. */
void metrics_request(const struct request *req, int status, int64_t micros);

/* Count one database failure answered as 503. */
void metrics_db_error(void);

/* The route label a request counts under ("collection", "record", ...). */
const char *metrics_route_name(const struct request *req);

/* Append every metric in Prometheus text format (version 0.0.4). */
void metrics_render(struct buf *out);

#endif
