/*
 * db_changes.h - SQL for the account_changes table: a log, filled by
 * triggers on users (sql/schema.sql), of every account a statement
 * changed, whoever ran it (this server, another web server on the same
 * database, weave-admin, SQL typed by hand). change_log.c reads it to
 * tell this host's processes (change_board.h).
 */
#ifndef WEAVE_DB_CHANGES_H
#define WEAVE_DB_CHANGES_H

#include <stdint.h>

#include "db.h"

/* The database server's clock, in centiseconds. */
enum db_status db_changes_now(int64_t *centiseconds);

/* Calls fn(ctx, seq, user_id) for every change stamped at or after since
 * (centiseconds, database clock), in seq order. */
enum db_status db_changes_since(int64_t since,
				void (*fn)(void *ctx, uint64_t seq, int64_t user_id),
				void *ctx);

/* Deletes up to limit changes stamped before cutoff; *deleted gets the
 * count. */
enum db_status db_changes_forget(int64_t cutoff, int64_t limit, uint64_t *deleted);

#endif
