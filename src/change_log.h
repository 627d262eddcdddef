/*
 * change_log.h - brings changes made through other hosts to this host's
 * change board.
 *
 * Triggers on the users table log every changed account in
 * account_changes (sql/schema.sql), in the same transaction as the
 * change, whoever made it: another web server, weave-admin on another
 * machine, SQL typed by hand. About once a second one process of this
 * host (whichever first finds the last look a second old) reads the
 * changes of the last seconds and bumps each account on the board, so
 * every process here drops its kept row and credentials of that account
 * (change_board.h). A change made anywhere thus reaches every process
 * here within about a second of its commit, while the sync poll itself
 * still runs no statement.
 *
 * The state shared by this host's processes (when the last look was,
 * which changes it saw) lives in a small file beside the board; a
 * process looks under an exclusive flock(2) on it, so a process that
 * dies while looking leaves nothing held.
 */
#ifndef WEAVE_CHANGE_LOG_H
#define WEAVE_CHANGE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How often a host looks, and how far back each look reaches beyond the
 * last one: transactions that commit late and database clocks that
 * differ by a few seconds stay inside it. Centiseconds. */
#define CHANGE_LOG_INTERVAL 100
#define CHANGE_LOG_OVERLAP 1000
/* Changes older than this are deleted (by whoever looks), seconds. */
#define CHANGE_LOG_KEEP_SECONDS 600

/*
 * Open (creating, mode 0600) the shared state at board_path + ".changes".
 * keep_seconds is account_cache_seconds: the first look reaches that far
 * back. 0, or -1 with why in err (the process then never looks, and
 * relies on account_cache_seconds alone).
 */
int change_log_open(const char *board_path, int64_t keep_seconds, char *err,
		    size_t cap);

/* Look for changes if a second has passed since this host's last look.
 * now is this host's clock in centiseconds. Call between requests. */
void change_log_catch_up(int64_t now);

/* Look now, whatever the time (tests, weave-admin). false if it could
 * not (no file, database unavailable). */
bool change_log_look(int64_t now);

void change_log_close(void);

#endif
