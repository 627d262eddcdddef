/*
 * db_captcha.h - the captcha_used table: nonces of challenges that
 * already verified, kept until they expire. No HTTP here.
 */
#ifndef WEAVE_DB_CAPTCHA_H
#define WEAVE_DB_CAPTCHA_H

#include <stddef.h>
#include <stdint.h>

#include "db.h"

/*
 * Record that the challenge with this nonce (len bytes, at most 16) was
 * used; expires is its expiry in seconds. First deletes up to 100 rows
 * whose expiry is before now (seconds), so the table stays small without
 * a cron job. Returns DB_OK the first time, DB_CONFLICT when the nonce
 * is already recorded, or the db_run() failure (DB_RETRY,
 * DB_UNAVAILABLE, DB_ERROR); DB_ERROR also for a bad nonce length.
 * Runs inside the caller's transaction when one is open.
 */
enum db_status db_captcha_mark_used(const unsigned char *nonce, size_t len,
				    int64_t expires, int64_t now);

#endif
