/*
 * upload_order.h - one account's uploads on this host: which lock late,
 * and stamps and locks in the order they arrived.
 *
 * Normally a write locks its account's users row at its login and holds
 * it to the commit, so one account's uploads run one at a time for their
 * whole length (docs/performance.md, "Uploads to one account"). With
 * late_write_lock on (the default), an upload that arrives while another
 * upload of its account is in flight on this host writes its records
 * first, under a provisional stamp, and locks the row only at the end
 * (write_lock.h), so the records of one account's uploads are written
 * side by side. An upload with none in flight (the usual case: a client
 * sends its batches one after another) locks at its login as before,
 * which costs one statement less.
 *
 * If a later-stamped upload of the account locked first, an earlier one
 * would find last_write past its stamp and have to rewrite its rows'
 * modified under the lock: with several uploads in flight nearly every
 * one did. So the host hands the stamps out itself: each upload's stamp
 * is above the one handed out before it for its account (a queue per
 * slot of the shared board, change_board.h, found by the account's name),
 * and before an upload that locks late asks for the row lock it waits
 * until the upload before it holds that lock (or is gone). InnoDB then
 * grants the lock in the same order, each upload finds last_write below
 * its own stamp and keeps it. The sleepers of a slot share one futex
 * word, each on the bit of the stamp it waits for, so a pass wakes the
 * upload right behind it and not the whole queue.
 *
 * The order is only an optimisation: the stamp stays decided under the
 * row lock (write_lock.c), so an upload that stops waiting (a bounded
 * wait: the one before crashed, is stuck on a record this one holds, or
 * runs on another web server) only pays a restamp. Without a board
 * nothing is ordered, nobody waits, and every upload locks first.
 */
#ifndef WEAVE_UPLOAD_ORDER_H
#define WEAVE_UPLOAD_ORDER_H

#include <stdbool.h>
#include <stdint.h>

/* An upload's place in its account slot's queue. */
struct upload_turn {
	uint64_t slot;   /* the account's slot */
	int64_t stamp;   /* handed to this upload */
	int64_t before;  /* handed to the one before it */
	uint64_t epoch;  /* the board's mapping the stamps come from */
	bool entered;    /* counted in flight, not yet left */
	bool held;       /* its turn not yet passed */
};

/* How long an upload waits for the one before it, at most. */
#define UPLOAD_TURN_WAIT_MS 1000

/*
 * An upload of account arrives (before its login): count it in flight
 * and hand it a stamp above every one handed out before for the slot and
 * at least floor (one above this host's clock). True if another upload
 * of the slot was in flight: this one should lock late.
 */
bool upload_order_enter(struct upload_turn *t, const char *account, int64_t floor);

/*
 * The upload's stamp once its login read last_write: the one handed out,
 * or floor (above last_write) if that is higher, which later uploads'
 * stamps then follow. Without a turn (no board): floor.
 */
int64_t upload_order_stamp(struct upload_turn *t, int64_t floor);

/* Before the row lock: wait (at most UPLOAD_TURN_WAIT_MS) until the
 * upload before this one has passed. Nothing if no turn is held. */
void upload_order_wait(struct upload_turn *t);

/* The row lock is held, or the upload ends without it: let the next one
 * go. Safe to call again, and without a turn. */
void upload_order_pass(struct upload_turn *t);

/* The upload is over (committed or not): pass, and no longer count it in
 * flight. Safe to call again, and without entering. */
void upload_order_leave(struct upload_turn *t);

#endif
