/* upload_order.c - late-locking uploads in login order (upload_order.h). */
#include "upload_order.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "change_board.h"
#include "log.h"

/* The slot of a turn, or NULL when the board it was taken on is gone
 * (remapped: its counters start again, and nobody's turn means anything
 * there). */
static struct upload_queue_slot *slot_of(const struct upload_turn *t)
{
	if (t->epoch != change_board_epoch())
		return NULL;
	return change_board_upload_slot(t->user_id);
}

int64_t upload_order_take(struct upload_turn *t, int64_t user_id, int64_t floor)
{
	*t = (struct upload_turn){ .user_id = user_id, .stamp = floor };
	change_board_refresh();
	struct upload_queue_slot *slot = change_board_upload_slot(user_id);
	if (slot == NULL)
		return floor;
	int64_t before = atomic_load(&slot->handed);
	int64_t mine;
	do
		mine = floor > before ? floor : before + 1;
	while (!atomic_compare_exchange_weak(&slot->handed, &before, mine));
	t->stamp = mine;
	t->before = before;
	t->epoch = change_board_epoch();
	t->held = true;
	return mine;
}

static int64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleep while *word still holds seen, at most ms. The word is in a file
 * every process maps shared, so the futex is a shared (not private) one. */
static void sleep_on(_Atomic uint32_t *word, uint32_t seen, int64_t ms)
{
	struct timespec limit = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &limit, NULL, 0);
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
		int64_t left = deadline - monotonic_ms();
		if (left <= 0) {
			change_board_count(BOARD_TURN_TIMEOUTS);
			log_info("upload waited %d ms for the account's upload before it "
				 "(stamp %lld) and goes on: it may have to move its stamp",
				 UPLOAD_TURN_WAIT_MS, (long long)t->before);
			return;
		}
		sleep_on(&slot->wake, seen, left);
	}
}

void upload_order_pass(struct upload_turn *t)
{
	struct upload_queue_slot *slot = t->held ? slot_of(t) : NULL;
	t->held = false;
	if (slot == NULL)
		return;
	int64_t seen = atomic_load(&slot->passed);
	while (seen < t->stamp && !atomic_compare_exchange_weak(&slot->passed, &seen, t->stamp))
		;
	atomic_fetch_add(&slot->wake, 1);
	syscall(SYS_futex, (uint32_t *)&slot->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
