/* check_shared_table.c - the lock-free shared table and the host-wide
 * caches built on it, with real processes sharing real mappings. */
#include <check.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "account_cache.h"
#include "cache_key.h"
#include "change_board.h"
#include "check_suites.h"
#include "shared_table.h"
#include "kdf_gate.h"
#include "util.h"

#define WORDS 8
#define NOW 1000000

/* A table in memory that forked children share. */
static struct shared_table shared_new(uint32_t sets, uint32_t ways)
{
	struct shared_table t;
	size_t bytes = shared_table_bytes(sets, ways, WORDS);
	void *region = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(region, MAP_FAILED);
	shared_table_attach(&t, region, sets, ways, WORDS);
	return t;
}

static void shared_free(struct shared_table *t)
{
	munmap(t->region, shared_table_bytes(t->sets, t->ways, t->words));
}

/* Payload of version v of tag: every word follows from both, so a copy
 * mixing two writes shows. */
static void payload(uint64_t tag, uint64_t v, uint64_t *p)
{
	for (int i = 0; i < WORDS; i++)
		p[i] = (tag * 31 + v) * (uint64_t)(i + 1);
}

static bool consistent(uint64_t tag, const uint64_t *p)
{
	if (p[0] < tag * 31)
		return false;
	uint64_t v = p[0] - tag * 31;
	uint64_t want[WORDS];
	payload(tag, v, want);
	return memcmp(p, want, sizeof want) == 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

START_TEST(test_put_get_expire_remove)
{
	struct shared_table t = shared_new(16, 4);
	uint64_t in[WORDS], out[WORDS];
	payload(77, 1, in);
	ck_assert(!shared_table_get(&t, 77, NOW, out));
	ck_assert(shared_table_put(&t, 77, NOW + 10, NOW, in));
	ck_assert(shared_table_get(&t, 77, NOW, out));
	ck_assert_mem_eq(in, out, sizeof in);
	ck_assert(!shared_table_get(&t, 78, NOW, out));
	/* Expired at its time. */
	ck_assert(shared_table_get(&t, 77, NOW + 9, out));
	ck_assert(!shared_table_get(&t, 77, NOW + 10, out));
	/* A new value replaces the old in place. */
	payload(77, 2, in);
	ck_assert(shared_table_put(&t, 77, NOW + 10, NOW, in));
	ck_assert(shared_table_get(&t, 77, NOW, out));
	ck_assert_mem_eq(in, out, sizeof in);
	ck_assert_uint_eq(shared_table_count(&t, NOW), 1);
	shared_table_remove(&t, 77);
	ck_assert(!shared_table_get(&t, 77, NOW, out));
	ck_assert_uint_eq(shared_table_count(&t, NOW), 0);
	/* Tag 0 marks empty entries: never stored, never found. */
	ck_assert(!shared_table_put(&t, 0, NOW + 10, NOW, in));
	ck_assert(!shared_table_get(&t, 0, NOW, out));
	shared_free(&t);
}
END_TEST

START_TEST(test_eviction_takes_expired_then_least_recently_used)
{
	struct shared_table t = shared_new(1, 4); /* one set: every tag meets */
	uint64_t in[WORDS], out[WORDS];
	for (uint64_t tag = 1; tag <= 4; tag++) {
		payload(tag, 0, in);
		ck_assert(shared_table_put(&t, tag, tag == 2 ? NOW + 1 : NOW + 100, NOW, in));
		sleep_ms(3);
	}
	/* At NOW + 5, tag 2 has expired: a fifth tag takes its place. */
	payload(5, 0, in);
	ck_assert(shared_table_put(&t, 5, NOW + 100, NOW + 5, in));
	for (uint64_t tag = 1; tag <= 5; tag++)
		ck_assert_int_eq(shared_table_get(&t, tag, NOW + 5, out), tag != 2);
	/* Tag 1 is read again (a second later, when reads note their use):
	 * the least recently used is now 3. */
	sleep_ms(1100);
	ck_assert(shared_table_get(&t, 1, NOW + 5, out));
	payload(6, 0, in);
	ck_assert(shared_table_put(&t, 6, NOW + 100, NOW + 5, in));
	ck_assert(shared_table_get(&t, 1, NOW + 5, out));
	ck_assert(!shared_table_get(&t, 3, NOW + 5, out));
	ck_assert(shared_table_get(&t, 4, NOW + 5, out));
	ck_assert(shared_table_get(&t, 6, NOW + 5, out));
	ck_assert_uint_eq(shared_table_count(&t, NOW + 5), 4);
	shared_free(&t);
}
END_TEST

/*
 * Processes writing and reading a tiny table (every put evicts or
 * overwrites) at once: a reader must never get a copy that mixes two
 * writes.
 */
START_TEST(test_no_torn_reads_between_processes)
{
	struct shared_table t = shared_new(2, 2);
	enum { PROCS = 4, ROUNDS = 200000 };
	pid_t pids[PROCS];
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		ck_assert_int_ge(pids[p], 0);
		if (pids[p] != 0)
			continue;
		uint64_t buf[WORDS];
		long hits = 0, torn = 0;
		for (uint64_t i = 0; i < ROUNDS; i++) {
			uint64_t tag = 1 + (i * 7 + (uint64_t)p) % 6;
			if (i % 3 == (uint64_t)p % 3) {
				payload(tag, i, buf);
				shared_table_put(&t, tag, NOW + 100, NOW, buf);
			} else if (shared_table_get(&t, tag, NOW, buf)) {
				hits++;
				torn += !consistent(tag, buf);
			}
		}
		_exit(torn != 0 ? 1 : hits == 0 ? 2 : 0);
	}
	for (int p = 0; p < PROCS; p++) {
		int status;
		ck_assert_int_eq(waitpid(pids[p], &status, 0), pids[p]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "process %d: exit %d (1: torn read, 2: no hit)", p,
			      WEXITSTATUS(status));
	}
	shared_free(&t);
}
END_TEST

/* A table of one set of ways entries, claims stale after claim_ms, that
 * holds tag 9. */
static struct shared_table one_set_holding_9(uint32_t ways, uint32_t claim_ms)
{
	struct shared_table t = shared_new(1, ways);
	t.claim_timeout_ms = claim_ms;
	uint64_t in[WORDS];
	payload(9, 1, in);
	ck_assert(shared_table_put(&t, 9, NOW + 100, NOW, in));
	return t;
}

/* A writer of tag killed mid-write, in another process: its entry is
 * left odd, half written, its claim fresh. */
static void abandon_a_write_in_a_child(struct shared_table *t, uint64_t tag)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint64_t half[WORDS];
		payload(tag, 2, half);
		_exit(shared_table_test_abandon_write(t, tag, NOW, half) ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A writer killed mid-write: its entry is a miss, not a wait, and its
 * claim is taken over once it is stale. */
START_TEST(test_a_dead_writer_is_recovered_from)
{
	struct shared_table t = one_set_holding_9(1, 100);
	uint64_t in[WORDS], out[WORDS];
	abandon_a_write_in_a_child(&t, 9);
	/* Readers do not wait for it: a miss at once. */
	ck_assert(!shared_table_get(&t, 9, NOW, out));
	/* A fresh claim is respected ... */
	payload(9, 3, in);
	ck_assert(!shared_table_put(&t, 9, NOW + 100, NOW, in));
	/* ... a stale one is taken over, and the entry is whole again. */
	sleep_ms(150);
	ck_assert(shared_table_put(&t, 9, NOW + 100, NOW, in));
	ck_assert(shared_table_get(&t, 9, NOW, out));
	ck_assert_mem_eq(in, out, sizeof in);
	/* A read-modify-write waits out the dead writer's claim (no longer
	 * than the timeout), then finds its half-written entry absent. */
	abandon_a_write_in_a_child(&t, 9);
	int64_t t0 = monotonic_ms();
	bool found = true;
	struct shared_write w;
	ck_assert(shared_table_begin(&t, 9, NOW, out, &found, &w));
	ck_assert_int_ge(monotonic_ms() - t0, 50);
	ck_assert_int_lt(monotonic_ms() - t0, 1000);
	ck_assert(!found);
	shared_table_commit(&t, &w, NOW + 100, in);
	ck_assert(shared_table_get(&t, 9, NOW, out));
	ck_assert_mem_eq(in, out, sizeof in);
	shared_free(&t);
}
END_TEST

/* A reader about to do something costly waits out a write in progress,
 * and only that: a write left by a dead writer holds it up to the claim
 * timeout, a whole entry or an absent tag not at all. */
START_TEST(test_a_settled_read_waits_only_for_a_live_write)
{
	struct shared_table t = one_set_holding_9(2, 200);
	uint64_t out[WORDS];
	int64_t t0 = monotonic_ms();
	ck_assert(shared_table_get_settled(&t, 9, NOW, out));
	ck_assert(!shared_table_get_settled(&t, 4, NOW, out));
	ck_assert_int_lt(monotonic_ms() - t0, 50);
	abandon_a_write_in_a_child(&t, 9);
	t0 = monotonic_ms();
	ck_assert(!shared_table_get(&t, 9, NOW, out));
	ck_assert_int_lt(monotonic_ms() - t0, 50);
	/* The writer's claim looks live for 200 ms: the settled read waits
	 * that long, then finds the write abandoned and misses. */
	ck_assert(!shared_table_get_settled(&t, 9, NOW, out));
	ck_assert_int_ge(monotonic_ms() - t0, 150);
	shared_free(&t);
}
END_TEST

/* A writer whose claim was stolen while it stalled, and which then writes
 * on: its late stores land while the sequence is even. The checksum turns
 * that into a miss, and the next put repairs the entry. */
START_TEST(test_late_stores_of_a_stalled_writer_are_a_miss)
{
	struct shared_table t = shared_new(1, 1);
	uint64_t in[WORDS], out[WORDS];
	payload(5, 1, in);
	ck_assert(shared_table_put(&t, 5, NOW + 100, NOW, in));
	_Atomic uint64_t *words = t.region;
	/* One set of one way: its tag hint, the entry's header, the payload. */
	atomic_fetch_xor(&words[1 + SHARED_TABLE_HEADER_WORDS + 3], 0x100);
	ck_assert(!shared_table_get(&t, 5, NOW, out));
	ck_assert(shared_table_put(&t, 5, NOW + 100, NOW, in));
	ck_assert(shared_table_get(&t, 5, NOW, out));
	ck_assert_mem_eq(in, out, sizeof in);
	shared_free(&t);
}
END_TEST

/* Fork n children (pids) that start together, once start_together_go()
 * writes to go[1]: the child's number in a child, -1 in the parent. */
static int fork_to_start_together(pid_t *pids, int n, int go[2])
{
	ck_assert_int_eq(pipe(go), 0);
	for (int p = 0; p < n; p++) {
		pids[p] = fork();
		ck_assert_int_ge(pids[p], 0);
		if (pids[p] != 0)
			continue;
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		return p;
	}
	return -1;
}

static void start_together_go(int n, int go[2])
{
	for (int p = 0; p < n; p++)
		ck_assert_int_eq(write(go[1], "x", 1), 1);
}

/* Of processes adding the same tag at once, exactly one succeeds; an
 * expired entry of the tag does not count. */
START_TEST(test_add_is_exclusive)
{
	struct shared_table t = shared_new(256, 8); /* room for every tag */
	uint64_t in[WORDS];
	payload(31, 1, in);
	ck_assert_int_eq(shared_table_add(&t, 31, NOW + 10, NOW, in), SHARED_ADDED);
	ck_assert_int_eq(shared_table_add(&t, 31, NOW + 10, NOW, in), SHARED_EXISTS);
	ck_assert_int_eq(shared_table_add(&t, 31, NOW + 20, NOW + 10, in), SHARED_ADDED);
	enum { PROCS = 6, TAGS = 200 };
	int go[2];
	pid_t pids[PROCS];
	int p = fork_to_start_together(pids, PROCS, go);
	if (p >= 0) {
		int added = 0;
		for (uint64_t tag = 1000; tag < 1000 + TAGS; tag++) {
			uint64_t mine[WORDS];
			payload(tag, (uint64_t)p, mine);
			enum shared_add r;
			while ((r = shared_table_add(&t, tag, NOW + 100, NOW, mine)) == SHARED_BUSY)
				;
			added += r == SHARED_ADDED;
		}
		_exit(added);
	}
	start_together_go(PROCS, go);
	int total = 0;
	for (p = 0; p < PROCS; p++) {
		int status;
		ck_assert_int_eq(waitpid(pids[p], &status, 0), pids[p]);
		ck_assert(WIFEXITED(status));
		total += WEXITSTATUS(status);
	}
	ck_assert_int_eq(total, TAGS); /* each tag by exactly one process */
	close(go[0]);
	close(go[1]);
	shared_free(&t);
}
END_TEST

/* ---- the caches on a real board file, shared by forked processes ---- */

static char dir[64], path[128], err[512];

static void board_up(void)
{
	snprintf(dir, sizeof dir, "/tmp/check-shared.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/board", dir);
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	/* Forked children keep the key: processes of one weave.conf. */
	ck_assert_int_eq(cache_key_init("unit-test-cache-secret"), 0);
	account_cache_init(30, 86400);
	kdf_gate_init(2);
}

static void board_down(void)
{
	change_board_close();
	account_cache_init(0, 0);
	unlink(path);
	rmdir(dir);
}

static int child_exit(pid_t pid)
{
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* Processes changing different words of one entry at once, each by a
 * read-modify-write (begin, commit): no change is lost. A process whose
 * begin gave up (busy past the timeout) counts that change as not made. */
START_TEST(test_changes_of_one_entry_all_land)
{
	enum { PROCS = WORDS, ROUNDS = 4000 };
	struct shared_table t = shared_new(1, 4);
	int go[2], done[2];
	ck_assert_int_eq(pipe(done), 0);
	pid_t pids[PROCS];
	int p = fork_to_start_together(pids, PROCS, go);
	if (p >= 0) {
		uint32_t made = 0;
		for (int i = 0; i < ROUNDS; i++) {
			uint64_t w[WORDS];
			bool found;
			struct shared_write sw;
			if (!shared_table_begin(&t, 77, NOW, w, &found, &sw))
				continue;
			if (!found && made > 0)
				_exit(4); /* a live entry read as absent */
			w[p]++;
			shared_table_commit(&t, &sw, NOW + 100, w);
			made++;
		}
		_exit(write(done[1], &made, sizeof made) == sizeof made ? 0 : 5);
	}
	start_together_go(PROCS, go);
	uint64_t made_by[PROCS] = { 0 };
	for (p = 0; p < PROCS; p++)
		ck_assert_int_eq(child_exit(pids[p]), 0);
	for (p = 0; p < PROCS; p++) {
		uint32_t made;
		ck_assert_int_eq(read(done[0], &made, sizeof made), sizeof made);
		made_by[p] = made;
	}
	uint64_t got[WORDS], total_made = 0, total_got = 0;
	ck_assert(shared_table_get(&t, 77, NOW, got));
	for (p = 0; p < PROCS; p++) {
		total_made += made_by[p];
		total_got += got[p];
	}
	ck_assert_uint_ge(total_made, ROUNDS); /* not a test if all gave up */
	ck_assert_uint_eq(total_got, total_made);
	/* An abandoned change leaves the entry as it was, and free. */
	uint64_t w[WORDS];
	bool found;
	struct shared_write sw;
	ck_assert(shared_table_begin(&t, 77, NOW, w, &found, &sw) && found);
	w[0] = 999999;
	shared_table_abandon(&sw);
	ck_assert(shared_table_get(&t, 77, NOW, w));
	ck_assert_uint_eq(w[0], got[0]);
	ck_assert(shared_table_begin(&t, 77, NOW, w, &found, &sw));
	shared_table_abandon(&sw);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	shared_free(&t);
}
END_TEST

static const char HASH[] = "$scrypt$ln=15,r=8,p=1$c2FsdA==$a2V5a2V5a2V5a2V5";

static void fill(struct user *u, int64_t id, const char *name)
{
	memset(u, 0, sizeof *u);
	u->id = id;
	snprintf(u->username, sizeof u->username, "%s", name);
	u->password_hash = xstrdup(HASH);
	u->email = xstrdup("ivy@example.org");
	u->alert = xstrdup("{\"code\":\"soft-eol\"}");
	u->status = 1;
	u->quota_kb = -1;
	u->last_write = 123456;
	u->created = 99;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

START_TEST(test_credentials_verified_in_one_process_serve_all)
{
	board_up();
	struct stat st;
	struct user u, frank;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	fill(&u, 7, "erin");
	fill(&frank, 8, "frank");
	ck_assert(!account_cache_credential_ok(&u, "pw-erin", 7, now_s()));
	pid_t pid = fork();
	if (pid == 0) {
		account_cache_credential_put(&u, "pw-erin", 7, now_s());
		_exit(0);
	}
	ck_assert_int_eq(child_exit(pid), 0);
	uint64_t hits = change_board_counter(BOARD_CREDENTIAL_HITS);
	ck_assert(account_cache_credential_ok(&u, "pw-erin", 7, now_s()));
	ck_assert_uint_eq(change_board_counter(BOARD_CREDENTIAL_HITS), hits + 1);
	ck_assert(!account_cache_credential_ok(&u, "pw-erin!", 8, now_s()));
	ck_assert(!account_cache_credential_ok(&frank, "pw-erin", 7, now_s()));
	/* A process with another key (no cache_secret) finds nothing. */
	pid = fork();
	if (pid == 0) {
		cache_key_init(NULL);
		_exit(account_cache_credential_ok(&u, "pw-erin", 7, now_s()) ? 1 : 0);
	}
	ck_assert_int_eq(child_exit(pid), 0);
	user_free(&u);
	user_free(&frank);
	board_down();
}
END_TEST

/* While one process runs the KDF for a password, another waits for its
 * verdict instead of running it too. */
START_TEST(test_one_verification_at_a_time)
{
	board_up();
	struct user u;
	struct kdf_claim claim;
	fill(&u, 9, "gina");
	int go[2];
	ck_assert_int_eq(pipe(go), 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* Nobody verifies it yet: the child will. */
		if (kdf_gate_claim(&u, "pw-gina", 7, &claim) || !claim.held)
			_exit(1);
		if (write(go[1], "x", 1) != 1)
			_exit(3);
		sleep_ms(300); /* the KDF */
		account_cache_credential_put(&u, "pw-gina", 7, now_s());
		kdf_gate_unclaim(&claim);
		/* A wrong password: claimed, then given up. */
		if (kdf_gate_claim(&u, "wrong", 5, &claim) || !claim.held)
			_exit(2);
		if (write(go[1], "y", 1) != 1)
			_exit(3);
		sleep_ms(300);
		kdf_gate_unclaim(&claim);
		_exit(0);
	}
	char c;
	ck_assert_int_eq(read(go[0], &c, 1), 1);
	struct timespec t0, t1;
	uint64_t waits = change_board_counter(BOARD_CREDENTIAL_WAITS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert(kdf_gate_claim(&u, "pw-gina", 7, &claim));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert(!claim.held);
	kdf_gate_unclaim(&claim);
	ck_assert_int_ge((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
			 200);
	ck_assert_uint_eq(change_board_counter(BOARD_CREDENTIAL_WAITS), waits + 1);
	/* The wrong one: after the child gives up, this process must verify. */
	ck_assert_int_eq(read(go[0], &c, 1), 1);
	ck_assert(!kdf_gate_claim(&u, "wrong", 5, &claim));
	ck_assert(claim.held);
	kdf_gate_unclaim(&claim);
	ck_assert(!account_cache_credential_ok(&u, "wrong", 5, now_s()));
	ck_assert_int_eq(child_exit(pid), 0);
	close(go[0]);
	close(go[1]);
	user_free(&u);
	board_down();
}
END_TEST

/* A verifier that died is not waited for. */
START_TEST(test_a_dead_verifier_does_not_block_for_long)
{
	board_up();
	struct user u;
	struct kdf_claim claim;
	fill(&u, 10, "hank");
	pid_t pid = fork();
	if (pid == 0)
		_exit(!kdf_gate_claim(&u, "pw-hank", 7, &claim) && claim.held ? 0 : 1);
	ck_assert_int_eq(child_exit(pid), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert(!kdf_gate_claim(&u, "pw-hank", 7, &claim));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert(claim.held);
	kdf_gate_unclaim(&claim);
	ck_assert_int_lt((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
			 500);
	user_free(&u);
	board_down();
}
END_TEST

/* At most max_concurrent_kdf KDFs at once on the host; a slot of a dead
 * process is taken over. */
START_TEST(test_kdf_bound_is_host_wide)
{
	board_up(); /* a bound of 2 */
	int go[2];
	ck_assert_int_eq(pipe(go), 0);
	pid_t pid = fork();
	if (pid == 0) {
		int slot = kdf_gate_enter();
		if (slot < 0 || write(go[1], "x", 1) != 1)
			_exit(1);
		sleep_ms(1500); /* beyond KDF_WAIT_MS */
		kdf_gate_leave(slot);
		_exit(0);
	}
	char c;
	ck_assert_int_eq(read(go[0], &c, 1), 1);
	int mine = kdf_gate_enter();
	ck_assert_int_ge(mine, 0);
	ck_assert_int_eq(change_board_kdf_running(), 2);
	uint64_t busy = change_board_counter(BOARD_KDF_BUSY);
	ck_assert_int_eq(kdf_gate_enter(), -1); /* a third: refused */
	ck_assert_uint_eq(change_board_counter(BOARD_KDF_BUSY), busy + 1);
	ck_assert_int_eq(child_exit(pid), 0);
	int again = kdf_gate_enter(); /* the child's slot is free again */
	ck_assert_int_ge(again, 0);
	kdf_gate_leave(again);
	kdf_gate_leave(mine);
	ck_assert_int_eq(change_board_kdf_running(), 0);
	/* A process that died holding a slot does not hold it for ever. */
	pid = fork();
	if (pid == 0)
		_exit(kdf_gate_enter() >= 0 && kdf_gate_enter() >= 0 ? 0 : 1);
	ck_assert_int_eq(child_exit(pid), 0);
	ck_assert_int_eq(change_board_kdf_running(), 2);
	mine = kdf_gate_enter();
	ck_assert_int_ge(mine, 0);
	kdf_gate_leave(mine);
	close(go[0]);
	close(go[1]);
	board_down();
}
END_TEST

/* A row read by one process serves the others, until a bump in any. */
START_TEST(test_a_row_kept_by_one_process_serves_all)
{
	board_up();
	pid_t pid = fork();
	if (pid == 0) {
		struct user row;
		struct account_probe probe;
		fill(&row, 11, "ivy");
		account_cache_credential_put(&row, "pw-ivy", 6, 500);
		for (int i = 0; i < 2; i++) {
			account_cache_probe("ivy", &probe);
			account_cache_put(&probe, &row, 500);
		}
		user_free(&row);
		_exit(0);
	}
	ck_assert_int_eq(child_exit(pid), 0);
	struct user got;
	ck_assert(account_cache_login("ivy", "pw-ivy", 6, 501, &got));
	ck_assert_int_eq(got.id, 11);
	ck_assert_str_eq(got.username, "ivy");
	ck_assert_str_eq(got.password_hash, "");
	ck_assert_ptr_null(got.email);
	ck_assert_str_eq(got.alert, "{\"code\":\"soft-eol\"}");
	ck_assert_ptr_null(got.node);
	ck_assert_int_eq(got.quota_kb, -1);
	ck_assert_int_eq(got.last_write, 123456);
	ck_assert_int_eq(got.created, 99);
	user_free(&got);
	pid = fork();
	if (pid == 0) {
		change_board_bump(11);
		_exit(0);
	}
	ck_assert_int_eq(child_exit(pid), 0);
	ck_assert(!account_cache_login("ivy", "pw-ivy", 6, 501, &got));
	board_down();
}
END_TEST

/* A row too big for an entry is not kept (but is read every time). */
START_TEST(test_an_oversized_row_is_not_kept)
{
	board_up();
	struct user row, got;
	struct account_probe probe;
	fill(&row, 12, "jack");
	free(row.alert);
	row.alert = xmalloc(400);
	memset(row.alert, 'a', 399);
	row.alert[399] = '\0';
	account_cache_credential_put(&row, "pw", 2, 500);
	for (int i = 0; i < 2; i++) {
		account_cache_probe("jack", &probe);
		account_cache_put(&probe, &row, 500);
	}
	ck_assert(!account_cache_login("jack", "pw", 2, 501, &got));
	account_cache_probe("jack", &probe);
	ck_assert_int_eq(probe.user_id, 12); /* the name still leads to the id */
	ck_assert(account_cache_credential_ok(&row, "pw", 2, 501));
	user_free(&row);
	board_down();
}
END_TEST

START_TEST(test_collections_answers_are_shared)
{
	board_up();
	static const char body[] = "{\"tabs\":1234567890.12}";
	struct user u, other;
	fill(&u, 21, "kim");
	fill(&other, 22, "lou");
	u.last_write = other.last_write = 777;
	pid_t pid = fork();
	if (pid == 0) {
		struct account_answer a = { body, sizeof body - 1, 123456789012, 1 };
		account_cache_answer_put(&u, INT64_MAX, &a);
		_exit(0);
	}
	ck_assert_int_eq(child_exit(pid), 0);
	struct account_answer got;
	int64_t now = (int64_t)time(NULL) * 100;
	ck_assert(account_cache_answer_get(&u, now, &got));
	ck_assert_uint_eq(got.len, sizeof body - 1);
	ck_assert_mem_eq(got.body, body, got.len);
	ck_assert_int_eq(got.newest, 123456789012);
	ck_assert_int_eq(got.rows, 1);
	/* Another last_write (a write since), another account: no. */
	u.last_write = 778;
	ck_assert(!account_cache_answer_get(&u, now, &got));
	ck_assert(!account_cache_answer_get(&other, now, &got));
	/* An answer valid until a record expires is not used after. */
	struct account_answer a = { body, sizeof body - 1, 1, 1 };
	account_cache_answer_put(&other, now + 50, &a);
	ck_assert(account_cache_answer_get(&other, now, &got));
	ck_assert(!account_cache_answer_get(&other, now + 50, &got));
	user_free(&u);
	user_free(&other);
	board_down();
}
END_TEST

/* Two processes changing different parts of one account's entry at once
 * (one keeps the row and answers, the other a verified credential): both
 * land. A read-then-write that lost the credential cost a second KDF for
 * the same password (test_host_cache.py under ASan). */
START_TEST(test_a_credential_survives_rows_kept_at_the_same_time)
{
	enum { ROUNDS = 3000 };
	board_up();
	struct user u;
	fill(&u, 31, "mia");
	pid_t writer = fork();
	if (writer == 0) {
		static const char body[] = "{\"tabs\":1}";
		struct account_answer a = { body, sizeof body - 1, 100, 1 };
		struct account_probe probe;
		for (int i = 0; i < ROUNDS * 4; i++) {
			account_cache_probe("mia", &probe);
			account_cache_put(&probe, &u, now_s());
			account_cache_answer_put(&u, INT64_MAX, &a);
		}
		_exit(0);
	}
	int lost = 0;
	char pw[32];
	for (int i = 0; i < ROUNDS; i++) {
		int len = snprintf(pw, sizeof pw, "pw-mia-%d", i);
		account_cache_credential_put(&u, pw, (size_t)len, now_s());
		if (!account_cache_credential_settled(&u, pw, (size_t)len, now_s()))
			lost++;
	}
	ck_assert_int_eq(child_exit(writer), 0);
	ck_assert_int_eq(lost, 0);
	user_free(&u);
	board_down();
}
END_TEST

Suite *shared_table_suite(void)
{
	Suite *s = suite_create("shared_table");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_put_get_expire_remove);
	tcase_add_test(tc, test_eviction_takes_expired_then_least_recently_used);
	tcase_add_test(tc, test_no_torn_reads_between_processes);
	tcase_add_test(tc, test_a_dead_writer_is_recovered_from);
	tcase_add_test(tc, test_a_settled_read_waits_only_for_a_live_write);
	tcase_add_test(tc, test_late_stores_of_a_stalled_writer_are_a_miss);
	tcase_add_test(tc, test_add_is_exclusive);
	tcase_add_test(tc, test_changes_of_one_entry_all_land);
	tcase_add_test(tc, test_credentials_verified_in_one_process_serve_all);
	tcase_add_test(tc, test_one_verification_at_a_time);
	tcase_add_test(tc, test_a_dead_verifier_does_not_block_for_long);
	tcase_add_test(tc, test_kdf_bound_is_host_wide);
	tcase_add_test(tc, test_a_row_kept_by_one_process_serves_all);
	tcase_add_test(tc, test_an_oversized_row_is_not_kept);
	tcase_add_test(tc, test_collections_answers_are_shared);
	tcase_add_test(tc, test_a_credential_survives_rows_kept_at_the_same_time);
	suite_add_tcase(s, tc);
	return s;
}
