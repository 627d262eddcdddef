/* check_upload_order.c - one account's uploads on one host: which lock late, stamps in arrival order, the bounded wait for the upload before. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "change_board.h"
#include "check_suites.h"
#include "upload_order.h"

static char dir[64];
static char path[128];

static void open_board(void)
{
	char err[512];
	snprintf(dir, sizeof dir, "/tmp/check-order.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/board", dir);
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
}

static void remove_board(void)
{
	change_board_close();
	unlink(path);
	rmdir(dir);
}

static int64_t elapsed_ms(const struct timespec *since)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - since->tv_sec) * 1000 +
	       (now.tv_nsec - since->tv_nsec) / 1000000;
}

START_TEST(test_stamps_rise_above_the_floor_and_every_stamp_handed)
{
	open_board();
	struct upload_turn a, b, c, other;
	/* The first in flight locks first; the ones arriving meanwhile late. */
	ck_assert(!upload_order_enter(&a, "alice", 1000));
	ck_assert_int_eq(a.stamp, 1000);
	/* The same floor again (the same centisecond, or stamps running
	 * ahead of the clock): one above the last handed out. */
	ck_assert(upload_order_enter(&b, "alice", 1000));
	ck_assert_int_eq(b.stamp, 1001);
	ck_assert_int_eq(b.before, 1000);
	/* A later clock wins. */
	ck_assert(upload_order_enter(&c, "alice", 5000));
	ck_assert_int_eq(c.stamp, 5000);
	ck_assert_int_eq(c.before, 1001);
	/* Another account's queue is its own. */
	ck_assert(!upload_order_enter(&other, "bob", 900));
	ck_assert_int_eq(other.stamp, 900);
	/* A last_write past the stamp handed out moves it, and the next
	 * stamps follow. */
	ck_assert_int_eq(upload_order_stamp(&other, 800), 900);
	ck_assert_int_eq(upload_order_stamp(&other, 7000), 7000);
	upload_order_leave(&other);
	ck_assert(!upload_order_enter(&other, "bob", 900));
	ck_assert_int_eq(other.stamp, 7001);
	upload_order_leave(&other);
	upload_order_leave(&a);
	upload_order_leave(&b);
	upload_order_leave(&c);
	upload_order_leave(&c); /* twice is harmless */
	/* None in flight: the next locks first again. */
	ck_assert(!upload_order_enter(&a, "alice", 1000));
	ck_assert_int_eq(a.stamp, 5001);
	upload_order_leave(&a);
	remove_board();
}
END_TEST

/* Another FastCGI process: runs passes(turns) once told to go; this one
 * then sleeps in upload_order_wait(waiter). Returns how long it waited. */
static int64_t wait_while_another_passes(void (*passes)(struct upload_turn *),
					 struct upload_turn *turns, struct upload_turn *waiter)
{
	int to_child[2];
	ck_assert_int_eq(pipe(to_child), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char go;
		close(to_child[1]);
		if (read(to_child[0], &go, 1) != 1)
			_exit(2);
		passes(turns);
		_exit(0);
	}
	close(to_child[0]);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(write(to_child[1], "g", 1), 1);
	upload_order_wait(waiter);
	int64_t waited = elapsed_ms(&t0);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(to_child[1]);
	return waited;
}

/* Holds the first turn a while. */
static void pass_the_first_late(struct upload_turn *turns)
{
	usleep(150 * 1000);
	upload_order_pass(&turns[0]);
}

START_TEST(test_an_upload_waits_for_the_one_before_in_another_process)
{
	open_board();
	struct upload_turn t[2];
	upload_order_enter(&t[0], "alice", 1000);
	upload_order_enter(&t[1], "alice", 1000);
	int64_t waited = wait_while_another_passes(pass_the_first_late, t, &t[1]);
	/* Woken by the pass, not by the bound. */
	ck_assert_int_ge(waited, 100);
	ck_assert_int_lt(waited, UPLOAD_TURN_WAIT_MS);
	upload_order_leave(&t[1]);
	remove_board();
}
END_TEST

/* The first passes after 100 ms; 150 ms later a newer write seen under
 * the lock moves the second's stamp 40 up (past every futex bit) before
 * it passes. */
static void pass_two_the_second_moved(struct upload_turn *turns)
{
	usleep(100 * 1000);
	upload_order_pass(&turns[0]);
	usleep(150 * 1000);
	upload_order_stamp(&turns[1], turns[1].stamp + 40);
	upload_order_pass(&turns[1]);
}

/* Each waiter sleeps on a futex bit of the stamp it waits for: a pass
 * must wake the upload it lets go, also when its own stamp moved after
 * that one took its turn, and must not let go the ones further back. */
START_TEST(test_a_pass_lets_go_only_the_upload_right_behind)
{
	open_board();
	struct upload_turn t[3];
	for (int i = 0; i < 3; i++)
		upload_order_enter(&t[i], "alice", 1000);
	ck_assert_int_eq(t[2].before, t[1].stamp);
	int64_t waited = wait_while_another_passes(pass_two_the_second_moved, t, &t[2]);
	ck_assert_int_ge(waited, 200);
	ck_assert_int_lt(waited, UPLOAD_TURN_WAIT_MS);
	for (int i = 0; i < 3; i++)
		upload_order_leave(&t[i]);
	remove_board();
}
END_TEST

START_TEST(test_the_wait_is_bounded_when_the_one_before_never_passes)
{
	open_board();
	struct upload_turn lost, next, after;
	upload_order_enter(&lost, "alice", 1000); /* its process died: never passes */
	upload_order_enter(&next, "alice", 1000);
	uint64_t timeouts = change_board_counter(BOARD_TURN_TIMEOUTS);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	upload_order_wait(&next);
	ck_assert_int_ge(elapsed_ms(&t0), UPLOAD_TURN_WAIT_MS - 10);
	ck_assert_uint_eq(change_board_counter(BOARD_TURN_TIMEOUTS), timeouts + 1);
	upload_order_leave(&next);
	/* The queue goes on past the lost turn at once; the lost one still
	 * counts as in flight, so the next one locks late. */
	ck_assert(upload_order_enter(&after, "alice", 1000));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	upload_order_wait(&after);
	ck_assert_int_lt(elapsed_ms(&t0), 100);
	upload_order_leave(&after);
	remove_board();
}
END_TEST

START_TEST(test_without_a_board_nothing_is_ordered)
{
	change_board_close();
	struct upload_turn a, b;
	ck_assert(!upload_order_enter(&a, "alice", 1000));
	ck_assert(!upload_order_enter(&b, "alice", 1000));
	ck_assert_int_eq(upload_order_stamp(&b, 1000), 1000);
	ck_assert(!b.held);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	upload_order_wait(&b);
	ck_assert_int_lt(elapsed_ms(&t0), 50);
	upload_order_leave(&a);
	upload_order_leave(&b);
}
END_TEST

Suite *upload_order_suite(void)
{
	Suite *s = suite_create("upload_order");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_stamps_rise_above_the_floor_and_every_stamp_handed);
	tcase_add_test(tc, test_an_upload_waits_for_the_one_before_in_another_process);
	tcase_add_test(tc, test_a_pass_lets_go_only_the_upload_right_behind);
	tcase_add_test(tc, test_the_wait_is_bounded_when_the_one_before_never_passes);
	tcase_add_test(tc, test_without_a_board_nothing_is_ordered);
	suite_add_tcase(s, tc);
	return s;
}
