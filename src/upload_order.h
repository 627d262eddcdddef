/*
 * upload_order.h - one account's uploads that lock late, stamped and
 * locked in the order they logged in.
 *
 * With late_write_lock on, an upload writes its records under a
 * provisional stamp and locks its account only at the end (write_lock.h).
 * If a later-stamped upload of the same account locks first, the earlier
 * one finds last_write past its stamp and must rewrite its rows' modified
 * under the lock: with several uploads in flight nearly every one did
 * (docs/performance.md, "late_write_lock: one account's overlapping
 * uploads all restamp").
 *
 * So the host hands the stamps out itself: each upload's provisional
 * stamp is above the one handed out before it for its account slot (on
 * the shared board, change_board.h), and before it asks for the account's
 * row lock it waits until the upload before it holds that lock (or is
 * gone). InnoDB then grants the lock in the same order, each upload finds
 * last_write below its own stamp and keeps it: no restamp. The records
 * themselves are still written side by side.
 *
 * The order is only an optimisation: the stamp stays decided under the
 * row lock (write_lock.c), so an upload that stops waiting (a bounded
 * wait: the one before crashed, is stuck on a record this one holds, or
 * runs on another web server) only pays a restamp. Without a board
 * nothing is ordered and nobody waits.
 */
#ifndef WEAVE_UPLOAD_ORDER_H
#define WEAVE_UPLOAD_ORDER_H

#include <stdbool.h>
#include <stdint.h>

/* An upload's place in its account slot's queue. */
struct upload_turn {
	int64_t user_id;
	int64_t stamp;  /* handed to this upload */
	int64_t before; /* handed to the one before it */
	uint64_t epoch; /* the board's mapping the stamps come from */
	bool held;      /* taken, not yet passed */
};

/* How long an upload waits for the one before it, at most. */
#define UPLOAD_TURN_WAIT_MS 250

/*
 * A provisional stamp for an upload of user_id: at least floor (above
 * the account's last_write and this host's clock), above every stamp
 * handed out before on this host for the slot. Takes a turn (*t).
 */
int64_t upload_order_take(struct upload_turn *t, int64_t user_id, int64_t floor);

/* Before the row lock: wait (at most UPLOAD_TURN_WAIT_MS) until the
 * upload before this one has passed. Nothing if no turn is held. */
void upload_order_wait(struct upload_turn *t);

/* The row lock is held, or the upload ends without it: let the next one
 * go. Safe to call again, and without a turn. */
void upload_order_pass(struct upload_turn *t);

#endif
