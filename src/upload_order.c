/* upload_order.c - one account's uploads in arrival order (upload_order.h). */
#include "upload_order.h"

#include <limits.h>
#include <stdatomic.h>

#include "change_board.h"
#include "log.h"
#include "util.h"

/* The slot of a turn, or NULL when the board it was taken on is gone
 * (remapped: its counters start again, and nobody's turn means anything
 * there). */
static struct upload_queue_slot *slot_of(const struct upload_turn *t)
{
	if (t->epoch != change_board_epoch())
		return NULL;
	return change_board_upload_slot(t->slot);
}

bool upload_order_enter(struct upload_turn *t, const char *account, int64_t floor)
{
	*t = (struct upload_turn){ .stamp = floor };
	change_board_refresh();
	struct upload_queue_slot *slot = NULL;
	if (change_board_ready()) {
		t->slot = change_board_upload_slot_of(account);
		slot = change_board_upload_slot(t->slot);
	}
	if (slot == NULL)
		return false;
	bool others = atomic_fetch_add(&slot->active, 1) > 0;
	int64_t before = atomic_load(&slot->handed);
	int64_t mine;
	do
		mine = floor > before ? floor : before + 1;
	while (!atomic_compare_exchange_weak(&slot->handed, &before, mine));
	t->stamp = mine;
	t->before = before;
	t->epoch = change_board_epoch();
	t->entered = t->held = true;
	return others;
}

int64_t upload_order_stamp(struct upload_turn *t, int64_t floor)
{
	struct upload_queue_slot *slot = t->entered ? slot_of(t) : NULL;
	if (floor > t->stamp) {
		/* A write this host did not stamp (another web server, a
		 * delete) is newer than the stamp handed out. */
		t->stamp = floor;
		if (slot != NULL)
			change_board_raise(&slot->handed, floor);
	}
	return t->stamp;
}

/*
 * The futex bit of a waiter for the upload stamped `stamp` before it: a
 * pass wakes only the waiters it lets go (the upload right behind it, as
 * a rule), not every upload of the account in flight. With all of them
 * woken at each pass, one account at 32 connections cost 38 context
 * switches per upload against 11 over many accounts.
 */
static uint32_t bit_of(int64_t stamp)
{
	return UINT32_C(1) << ((uint64_t)stamp & 31);
}

/* The bits of the stamps in (from, to]. */
static uint32_t bits_between(int64_t from, int64_t to)
{
	if (to - from >= 32)
		return UINT32_MAX;
	uint32_t bits = 0;
	for (int64_t s = from + 1; s <= to; s++)
		bits |= bit_of(s);
	return bits;
}

void upload_order_wait(struct upload_turn *t)
{
	struct upload_queue_slot *slot = t->held ? slot_of(t) : NULL;
	if (slot == NULL)
		return;
	int64_t deadline = monotonic_ms() + UPLOAD_TURN_WAIT_MS;
	for (;;) {
		/* The word first: a pass after this load changes it, so the
		 * sleep below cannot miss it. */
		uint32_t seen = atomic_load(&slot->wake);
		if (atomic_load(&slot->passed) >= t->before)
			return;
		if (monotonic_ms() >= deadline) {
			change_board_count(BOARD_TURN_TIMEOUTS);
			log_info("upload waited %d ms for the account's upload before it "
				 "(stamp %lld) and goes on: it may have to move its stamp",
				 UPLOAD_TURN_WAIT_MS, (long long)t->before);
			return;
		}
		change_board_sleep(&slot->wake, seen, deadline, bit_of(t->before));
	}
}

void upload_order_pass(struct upload_turn *t)
{
	struct upload_queue_slot *slot = t->held ? slot_of(t) : NULL;
	t->held = false;
	if (slot == NULL)
		return;
	int64_t was = change_board_raise(&slot->passed, t->stamp);
	/* The waiters this pass lets go are those for a stamp in (was,
	 * stamp]. Only an upload in flight can be waiting, and this one
	 * still counts itself: alone, nobody needs the syscall. One that
	 * enters after this load sees passed raised before it would sleep. */
	if (was < t->stamp && atomic_load(&slot->active) > 1)
		change_board_wake(&slot->wake, INT_MAX, bits_between(was, t->stamp));
}

void upload_order_leave(struct upload_turn *t)
{
	upload_order_pass(t);
	struct upload_queue_slot *slot = t->entered ? slot_of(t) : NULL;
	t->entered = false;
	if (slot != NULL)
		atomic_fetch_sub(&slot->active, 1);
}
