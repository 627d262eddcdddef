/*
 * time_arg.h - points in time as an administrator types and reads them:
 * a Weave timestamp ("1265402837.12", seconds since the epoch) or an ISO
 * 8601 date-time ("2026-12-04T07:00:00Z", "2026-12-04 08:00+01:00",
 * "2026-12-04"). Pure functions; weave-admin's --since and --as-of use
 * them.
 */
#ifndef WEAVE_TIME_ARG_H
#define WEAVE_TIME_ARG_H

#include <stddef.h>
#include <stdint.h>

/*
 * s as centiseconds since the epoch. An ISO date-time without an offset
 * is UTC (what weave-admin prints); seconds may carry up to two
 * decimals; a date alone is its midnight UTC. Years 1970-9999.
 * 0 with *out set, or -1 (nothing else accepted: no surrounding blanks).
 */
int time_arg_parse(const char *s, int64_t *out);

/* "2026-12-04T07:00:00.12Z"; the decimals are left out when zero. */
void time_arg_format(int64_t centiseconds, char *out, size_t cap);

#endif
