/* check_account_cache.c - the shared change board, the cache key and the one entry per account. */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "account_cache.h"
#include "cache_key.h"
#include "change_board.h"
#include "check_suites.h"
#include "config.h"
#include "kdf_gate.h"
#include "shared_credential.h"
#include "util.h"

static char dir[64];
static char path[128];
static char err[512];

static void make_dir(void)
{
	ck_assert_int_eq(cache_key_init("unit-test-cache-secret"), 0);
	snprintf(dir, sizeof dir, "/tmp/check-board.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/board", dir);
}

static void remove_dir(void)
{
	change_board_close();
	account_cache_init(0, 0);
	unlink(path);
	char other[160];
	snprintf(other, sizeof other, "%s/other", dir);
	unlink(other);
	rmdir(other);
	rmdir(dir);
}

/* Resident kB of this process's mapping of file (from /proc/self/smaps),
 * -1 if it has none. */
static long mapped_kb(const char *file)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long kb = -1;
	bool in_file = false;
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long from, to;
		size_t n = strcspn(line, "\n");
		line[n] = '\0';
		if (sscanf(line, "%lx-%lx", &from, &to) == 2) { /* a mapping's first line */
			in_file = n >= strlen(file) && strcmp(line + n - strlen(file), file) == 0;
			continue;
		}
		if (in_file && sscanf(line, "Rss: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* The board is mapped whole when opened (MAP_POPULATE): a process new to
 * a busy host pays no page fault per account it first serves. */
START_TEST(test_the_board_is_mapped_whole_when_opened)
{
	struct stat st;
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	long kb = mapped_kb(path);
	ck_assert_msg(kb >= st.st_size / 1024 * 9 / 10, "%ld of %lld kB mapped", kb,
		      (long long)st.st_size / 1024);
	remove_dir();
}
END_TEST

START_TEST(test_path_from_config)
{
	struct config cfg;
	char a[256], b[256];
	config_defaults(&cfg);
	ck_assert_int_eq(change_board_path(&cfg, a, sizeof a), 0);
	ck_assert(strncmp(a, "/dev/shm/weave-server-", 22) == 0);
	ck_assert_uint_eq(strlen(a), 22 + 16);
	/* Another database is another board; the same settings, the same. */
	free(cfg.db_name);
	cfg.db_name = xstrdup("weave2");
	ck_assert_int_eq(change_board_path(&cfg, b, sizeof b), 0);
	ck_assert_str_ne(a, b);
	free(cfg.db_name);
	cfg.db_name = xstrdup("weave");
	ck_assert_int_eq(change_board_path(&cfg, b, sizeof b), 0);
	ck_assert_str_eq(a, b);
	/* An explicit file wins; too small a buffer is an error. */
	cfg.account_cache_file = xstrdup("/run/weave/board");
	ck_assert_int_eq(change_board_path(&cfg, b, sizeof b), 0);
	ck_assert_str_eq(b, "/run/weave/board");
	ck_assert_int_eq(change_board_path(&cfg, b, 8), -1);
	config_free(&cfg);
}
END_TEST

START_TEST(test_absent_board_is_safe)
{
	change_board_close();
	ck_assert(!change_board_ready());
	ck_assert_uint_eq(change_board_generation(7), 0);
	unsigned long missed = change_board_missed_bumps();
	change_board_bump(7);
	ck_assert_uint_eq(change_board_missed_bumps(), missed + 1);
	/* No board: every address counts as locked (take the safe path). */
	ck_assert_int_eq(change_board_address_locked_until("192.0.2.1"), INT64_MAX);
	ck_assert_int_eq(change_board_open("/nonexistent/dir/board", true, err, sizeof err),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/dir/board"));
}
END_TEST

START_TEST(test_bumps_and_failures)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, false, err, sizeof err), -1);
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert(change_board_ready());
	uint64_t g = change_board_generation(42);
	change_board_bump(42);
	ck_assert_uint_eq(change_board_generation(42), g + 1);
	ck_assert_uint_eq(change_board_generation(43), 0);
	ck_assert_int_eq(change_board_address_locked_until("192.0.2.1"), 0);
	change_board_note_address_lock("192.0.2.1", 1000);
	ck_assert_int_eq(change_board_address_locked_until("192.0.2.1"), 1000);
	/* An earlier end never shortens a published lock. */
	change_board_note_address_lock("192.0.2.1", 900);
	ck_assert_int_eq(change_board_address_locked_until("192.0.2.1"), 1000);
	ck_assert_int_eq(change_board_address_locked_until(NULL), 0);

	/* Another process (weave-admin, another FastCGI process) shares it. */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char e[512];
		if (change_board_open(path, false, e, sizeof e) != 0)
			_exit(2);
		change_board_bump(42);
		change_board_note_address_lock("198.51.100.9", 2000);
		_exit(change_board_generation(42) == g + 2 ? 0 : 3);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_uint_eq(change_board_generation(42), g + 2);
	ck_assert_int_eq(change_board_address_locked_until("198.51.100.9"), 2000);

	/* Opening again keeps the counts (a restarted process). */
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	ck_assert_uint_eq(change_board_generation(42), g + 2);
	remove_dir();
}
END_TEST

START_TEST(test_unsafe_files_are_refused)
{
	make_dir();
	char other[160];
	snprintf(other, sizeof other, "%s/other", dir);

	/* Writable by others: anyone could make a process trust a stale row. */
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	change_board_close();
	ck_assert_int_eq(chmod(path, 0622), 0);
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "writable by group or others"));
	ck_assert(!change_board_ready());
	ck_assert_int_eq(chmod(path, 0600), 0);

	/* A symbolic link is not followed. */
	ck_assert_int_eq(symlink(path, other), 0);
	ck_assert_int_eq(change_board_open(other, true, err, sizeof err), -1);
	ck_assert_int_eq(unlink(other), 0);

	/* A file of another size (another version, another program). */
	int fd = open(other, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not a board", 11), 11);
	close(fd);
	ck_assert_int_eq(change_board_open(other, true, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "unexpected size"));
	ck_assert_int_eq(unlink(other), 0);

	/* The right size with something else in it. */
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, st.st_size), 0);
	ck_assert_int_eq(write(fd, "XXXXXXXX", 8), 8);
	close(fd);
	ck_assert_int_eq(change_board_open(other, true, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "not a weave-server board"));
	ck_assert_int_eq(unlink(other), 0);

	/* Made empty beforehand (by an admin, by tools/stack.sh): filled in
	 * place, usable. */
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(change_board_open(other, false, err, sizeof err), -1);
	ck_assert_int_eq(change_board_open(other, true, err, sizeof err), 0);
	ck_assert(change_board_ready());
	change_board_close();
	ck_assert_int_eq(unlink(other), 0);

	/* Readable by the group: it tells which accounts are busy. */
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "readable or writable by group or others"));
	ck_assert_int_eq(chmod(path, 0600), 0);

	/* The board of an earlier layout (here the one that kept a key)
	 * is replaced by a new file. */
	fd = open(other, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	ck_assert_int_eq(write(fd, "3DBEVAEW", 8), 8); /* its magic, little-endian */
	close(fd);
	ck_assert_int_eq(change_board_open(other, true, err, sizeof err), 0);
	struct stat made;
	ck_assert_int_eq(stat(path, &made), 0);
	ck_assert_int_eq(stat(other, &st), 0);
	ck_assert_int_eq(st.st_size, made.st_size);
	change_board_close();
	ck_assert_int_eq(unlink(other), 0);

	/* A directory. */
	ck_assert_int_eq(mkdir(other, 0700), 0);
	ck_assert_int_eq(change_board_open(other, true, err, sizeof err), -1);
	remove_dir();
}
END_TEST

/* What two logins of u with password leave at now: the credential, and
 * the row kept under the generation read before the second read. */
static void keep(const struct user *u, const char *password, int64_t now)
{
	struct account_probe probe;
	account_cache_credential_put(u, password, strlen(password), now);
	for (int i = 0; i < 2; i++) {
		account_cache_probe(u->username, &probe);
		account_cache_put(&probe, u, now);
	}
}

START_TEST(test_a_replaced_file_is_followed)
{
	make_dir();
	struct user row, got;
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	uint64_t epoch = change_board_epoch();
	account_cache_init(30, 86400);
	memset(&row, 0, sizeof row);
	row.id = 3;
	snprintf(row.username, sizeof row.username, "dave");
	row.password_hash = xstrdup("$h");
	row.status = 1;
	keep(&row, "pw", 100);
	ck_assert(account_cache_login("dave", "pw", 2, 100, &got));
	user_free(&got);
	change_board_bump(3);
	change_board_bump(3);

	/* Unchanged file: nothing happens. */
	change_board_refresh();
	ck_assert_uint_eq(change_board_epoch(), epoch);

	/* Removed (a cleaner): made again, a new epoch, fresh counts, and
	 * rows kept under the old file are not used. */
	ck_assert_int_eq(unlink(path), 0);
	change_board_refresh();
	ck_assert(change_board_ready());
	ck_assert_uint_ne(change_board_epoch(), epoch);
	ck_assert_uint_eq(change_board_generation(3), 0);
	ck_assert(access(path, F_OK) == 0);
	ck_assert(!account_cache_login("dave", "pw", 2, 100, &got));
	/* The kept rows live in the file: the new one knows nothing yet. */
	keep(&row, "pw", 100);
	ck_assert(account_cache_login("dave", "pw", 2, 100, &got));
	user_free(&got);

	/* Replaced by something unsafe: the board goes absent. */
	ck_assert_int_eq(unlink(path), 0);
	int fd = open(path, O_CREAT | O_WRONLY, 0666);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0666), 0);
	close(fd);
	change_board_refresh();
	ck_assert(!change_board_ready());
	ck_assert(!account_cache_login("dave", "pw", 2, 100, &got));
	user_free(&row);
	remove_dir();
}
END_TEST

static void fill(struct user *u, int64_t id, const char *name, const char *hash)
{
	memset(u, 0, sizeof *u);
	u->id = id;
	snprintf(u->username, sizeof u->username, "%s", name);
	u->password_hash = xstrdup(hash);
	u->email = xstrdup("a@example.org");
	u->node = xstrdup("https://node.example/");
	u->status = 1;
	u->last_write = 12345;
}

START_TEST(test_rows_kept_from_the_first_read_unless_an_account_changed)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(30, 86400);
	struct user row, got;
	struct account_probe probe;
	fill(&row, 9, "alice", "$hash$1");
	account_cache_credential_put(&row, "pw", 2, 1000);

	/* A read before the id was known, while another account changed:
	 * only the id is learnt (the slot may have moved under the row). */
	account_cache_probe("alice", &probe);
	ck_assert_int_eq(probe.user_id, 9); /* the credential's entry knows it */
	probe.user_id = 0;
	change_board_bump(77);
	account_cache_put(&probe, &row, 1000);
	ck_assert(!account_cache_login("alice", "pw", 2, 1000, &got));

	/* The same with no change anywhere meanwhile: kept at once. */
	account_cache_probe("alice", &probe);
	probe.user_id = 0;
	account_cache_put(&probe, &row, 1000);
	ck_assert(account_cache_login("alice", "pw", 2, 1000, &got));
	user_free(&got);
	change_board_bump(9); /* and forgotten by a bump of its own */
	ck_assert(!account_cache_login("alice", "pw", 2, 1000, &got));

	/* A read probed with the id: kept, without hash or e-mail. */
	account_cache_probe("alice", &probe);
	ck_assert_int_eq(probe.user_id, 9);
	account_cache_put(&probe, &row, 1000);
	ck_assert(account_cache_login("alice", "pw", 2, 1001, &got));
	ck_assert_int_eq(got.id, 9);
	ck_assert_str_eq(got.username, "alice");
	ck_assert_str_eq(got.password_hash, "");
	ck_assert_ptr_null(got.email);
	ck_assert_str_eq(got.node, "https://node.example/");
	ck_assert_ptr_null(got.alert);
	ck_assert_int_eq(got.last_write, 12345);
	user_free(&got);
	ck_assert(!account_cache_login("bob", "pw", 2, 1001, &got));
	ck_assert(!account_cache_login("alice", "pW", 2, 1001, &got));

	/* Too old, from the future: not used. */
	ck_assert(!account_cache_login("alice", "pw", 2, 1030, &got));
	ck_assert(!account_cache_login("alice", "pw", 2, 999, &got));

	/* A change on the board: not used, and the next read is kept again. */
	change_board_bump(9);
	ck_assert(!account_cache_login("alice", "pw", 2, 1001, &got));
	account_cache_probe("alice", &probe);
	account_cache_put(&probe, &row, 1002);
	ck_assert(account_cache_login("alice", "pw", 2, 1002, &got));
	user_free(&got);

	/* A write between the probe and the read: the row read is not kept. */
	account_cache_probe("alice", &probe);
	change_board_bump(9);
	account_cache_put(&probe, &row, 1003);
	ck_assert(!account_cache_login("alice", "pw", 2, 1003, &got));

	/* The name now belongs to another account (deleted, made again):
	 * nothing of the old one is used, not even its credential. */
	struct user again;
	fill(&again, 10, "alice", "$hash$1");
	account_cache_probe("alice", &probe);
	ck_assert_int_eq(probe.user_id, 9);
	account_cache_put(&probe, &again, 1004);
	ck_assert(!account_cache_credential_ok(&again, "pw", 2, 1004));
	account_cache_probe("alice", &probe);
	account_cache_put(&probe, &again, 1004);
	ck_assert(!account_cache_login("alice", "pw", 2, 1004, &got));
	account_cache_credential_put(&again, "pw", 2, 1004);
	ck_assert(account_cache_login("alice", "pw", 2, 1004, &got));
	ck_assert_int_eq(got.id, 10);
	user_free(&got);

	/* A disabled account is never kept. */
	again.status = 0;
	account_cache_probe("alice", &probe);
	account_cache_put(&probe, &again, 1005);
	ck_assert(!account_cache_login("alice", "pw", 2, 1005, &got));

	user_free(&row);
	user_free(&again);
	remove_dir();
}
END_TEST

/* The credential holds for the stored hash it was verified against, for
 * its account and password only, and for auth_cache_seconds. */
START_TEST(test_credential_follows_the_password)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(30, 86400);
	struct user u, other;
	fill(&u, 21, "carl", "$scrypt$salt-a$key-a");
	fill(&other, 22, "cora", "$scrypt$salt-a$key-a"); /* the same hash */
	ck_assert(!account_cache_credential_ok(&u, "secret", 6, 5000));
	account_cache_credential_put(&u, "secret", 6, 5000);
	ck_assert(account_cache_credential_ok(&u, "secret", 6, 5000));
	ck_assert(account_cache_credential_ok(&u, "secret", 6, 5000 + 86399));
	ck_assert(!account_cache_credential_ok(&u, "secret", 6, 5000 + 86400));
	ck_assert(!account_cache_credential_ok(&u, "secret", 6, 4999));
	/* Another password, a prefix, a longer one, NUL bytes by length. */
	ck_assert(!account_cache_credential_ok(&u, "secreT", 6, 5000));
	ck_assert(!account_cache_credential_ok(&u, "secret", 5, 5000));
	ck_assert(!account_cache_credential_ok(&u, "secret!", 7, 5000));
	ck_assert(!account_cache_credential_ok(&u, "", 0, 5000));
	ck_assert(!account_cache_credential_ok(&other, "secret", 6, 5000));
	/* A new password is a new stored hash: the old credential is dead. */
	free(u.password_hash);
	u.password_hash = xstrdup("$scrypt$salt-b$key-b");
	ck_assert(!account_cache_credential_ok(&u, "secret", 6, 5000));
	account_cache_credential_put(&u, "x\0y", 3, 5001);
	ck_assert(account_cache_credential_ok(&u, "x\0y", 3, 5001));
	ck_assert(!account_cache_credential_ok(&u, "x\0z", 3, 5001));
	ck_assert(!account_cache_credential_ok(&u, "x", 1, 5001));
	/* Off: nothing kept, nothing found. */
	account_cache_init(30, 0);
	ck_assert(!account_cache_credential_ok(&u, "x\0y", 3, 5001));
	account_cache_credential_put(&other, "secret", 6, 5001);
	account_cache_init(30, 86400);
	ck_assert(!account_cache_credential_ok(&other, "secret", 6, 5001));
	user_free(&u);
	user_free(&other);
	remove_dir();
}
END_TEST

/*
 * Just after a second begins, time() (the kernel's coarse clock) may
 * still give the last one while the clock a credential is stamped with
 * gives the new one: a login waiting on another's KDF must still find
 * the credential, not take the claim and run the KDF again.
 */
START_TEST(test_a_claim_finds_a_credential_stamped_as_a_second_began)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(30, 86400);
	struct user u;
	fill(&u, 31, "dora", "$scrypt$salt-d$key-d");
	for (int round = 0; round < 3; round++) {
		int64_t second = now_centiseconds() / 100;
		while (now_centiseconds() / 100 == second)
			; /* to the start of the next second */
		account_cache_credential_put(&u, "secret", 6, now_centiseconds() / 100);
		struct kdf_claim claim;
		ck_assert_msg(kdf_gate_claim(&u, "secret", 6, &claim),
			      "round %d: the claim missed a fresh credential", round);
		ck_assert(!claim.held);
		kdf_gate_unclaim(&claim);
	}
	user_free(&u);
	remove_dir();
}
END_TEST

/* The info/collections answer holds for the last_write it was made
 * under, until its newest record expires; it shares the entry. */
START_TEST(test_answer_follows_last_write)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(30, 86400);
	struct user u;
	struct account_answer a = { "{\"tabs\":1.5}", 12, 150, 1 }, got;
	fill(&u, 31, "dina", "$h");
	int64_t now = now_centiseconds();
	ck_assert(!account_cache_answer_get(&u, now, &got));
	account_cache_answer_put(&u, now + 1000, &a);
	account_cache_credential_put(&u, "pw", 2, now / 100); /* the same entry */
	ck_assert(account_cache_answer_get(&u, now, &got));
	ck_assert_str_eq(got.body, a.body);
	ck_assert_uint_eq(got.len, 12);
	ck_assert_int_eq(got.newest, 150);
	ck_assert_int_eq(got.rows, 1);
	ck_assert(!account_cache_answer_get(&u, now + 1000, &got));
	u.last_write++;
	ck_assert(!account_cache_answer_get(&u, now, &got));
	ck_assert(account_cache_credential_ok(&u, "pw", 2, now / 100));
	user_free(&u);
	remove_dir();
}
END_TEST

/*
 * A poll answered from a kept row reads the shared entry once: the
 * answer comes from the copy its login answered from, used once, still
 * checked against the row, and dropped by a read that loads its row.
 */
START_TEST(test_answer_from_the_logins_copy)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(30, 86400);
	struct user row, got, other;
	struct account_probe probe;
	struct account_answer a = { "{\"tabs\":1.5}", 12, 150, 1 },
			      b = { "{\"tabs\":2.5}", 12, 250, 1 }, out;
	int64_t now = now_centiseconds();
	fill(&row, 41, "erin", "$h");
	fill(&other, 42, "enid", "$h");
	account_cache_credential_put(&row, "pw", 2, now / 100);
	account_cache_probe("erin", &probe);
	account_cache_put(&probe, &row, now / 100);
	account_cache_answer_put(&row, now + 1000, &a);

	/* The login's copy holds a; the shared entry now holds b. */
	ck_assert(account_cache_login("erin", "pw", 2, now / 100, &got));
	account_cache_answer_put(&row, now + 1000, &b);
	ck_assert(account_cache_answer_get(&got, now, &out));
	ck_assert_str_eq(out.body, a.body);
	ck_assert(account_cache_answer_get(&got, now, &out)); /* once */
	ck_assert_str_eq(out.body, b.body);
	user_free(&got);

	/* Still checked against the row: a later last_write misses. */
	ck_assert(account_cache_login("erin", "pw", 2, now / 100, &got));
	got.last_write++;
	ck_assert(!account_cache_answer_get(&got, now, &out));
	user_free(&got);

	/* Another account's request, or one whose row was read from the
	 * database, does not use it. */
	ck_assert(account_cache_login("erin", "pw", 2, now / 100, &got));
	ck_assert(!account_cache_answer_get(&other, now, &out));
	user_free(&got);
	ck_assert(account_cache_login("erin", "pw", 2, now / 100, &got));
	account_cache_answer_put(&row, now + 1000, &a);
	account_cache_probe("erin", &probe);
	ck_assert(account_cache_answer_get(&row, now, &out));
	ck_assert_str_eq(out.body, a.body);
	user_free(&got);
	user_free(&row);
	user_free(&other);
	remove_dir();
}
END_TEST

/* The key and MACs are those docs/security.md and tests/e2e compute:
 * values from tests' own /usr/bin/python3 hmac code (HKDF-SHA256). */
START_TEST(test_cache_key_known_answers)
{
	static const char fp_hex[] =
		"418e71e3265b1869312c4b230a7015f3e0e5658f1699ad03374e80eaebc2349f";
	static const char v_hex[] =
		"23ea52ac64eb92026537ee45ba542f29f7565526446cc64e590fa4029d20029c";
	unsigned char fp[CACHE_MAC_BYTES], v[CACHE_MAC_BYTES];
	char hex[2 * CACHE_MAC_BYTES + 1];
	ck_assert_int_eq(cache_key_init("0123456789abcdef-test"), 0);
	ck_assert(cache_key_shared());
	ck_assert(cache_key_fingerprint("$h$1", fp));
	for (int i = 0; i < CACHE_MAC_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", fp[i]);
	ck_assert_str_eq(hex, fp_hex);
	ck_assert(cache_key_verifier(9, fp, "pw", 2, v));
	for (int i = 0; i < CACHE_MAC_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", v[i]);
	ck_assert_str_eq(hex, v_hex);
	/* Without a secret: a random key, so other values. */
	ck_assert_int_eq(cache_key_init(NULL), 0);
	ck_assert(!cache_key_shared());
	ck_assert(cache_key_fingerprint("$h$1", fp));
	for (int i = 0; i < CACHE_MAC_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", fp[i]);
	ck_assert_str_ne(hex, fp_hex);
}
END_TEST

static void to_hex(const unsigned char *m, char hex[2 * CACHE_MAC_BYTES + 1])
{
	for (int i = 0; i < CACHE_MAC_BYTES; i++)
		snprintf(hex + 2 * i, 3, "%02x", m[i]);
}

/*
 * The name's tag: SipHash-2-4 with a 128-bit output under the first 16
 * bytes of HKDF-SHA256(cache_secret, info "cache name key 1"), over the
 * label and the name as length-prefixed fields. The known answer comes
 * from a SipHash written out in /usr/bin/python3 (checked against the
 * reference vector of the SipHash paper), so every build and host finds
 * the entries another made, and a change of format is seen here.
 */
START_TEST(test_name_tag_known_answer)
{
	uint64_t tag[2], other[2];
	ck_assert_int_eq(cache_key_init("0123456789abcdef-test"), 0);
	ck_assert(cache_key_name("alice", tag));
	ck_assert_uint_eq(tag[0], 0x04d5fb1dc3357e2aULL);
	ck_assert_uint_eq(tag[1], 0xc0bb004e7041732eULL);
	ck_assert(cache_key_name("alicf", other));
	ck_assert(other[0] != tag[0] && other[1] != tag[1]);
	/* Asked again after another name (past the one-name memo): the same. */
	ck_assert(cache_key_name("alice", other));
	ck_assert_mem_eq(other, tag, sizeof tag);
	/* Another secret, or none (a random key): another tag. */
	ck_assert_int_eq(cache_key_init("another-secret-0123"), 0);
	ck_assert(cache_key_name("alice", other));
	ck_assert_mem_ne(other, tag, sizeof tag);
	ck_assert_int_eq(cache_key_init(NULL), 0);
	ck_assert(cache_key_name("alice", other));
	ck_assert_mem_ne(other, tag, sizeof tag);
}
END_TEST

/*
 * The verifiers stored in the database (shared_credential.h): their own
 * key (HKDF info "shared verifier key 1"), their own label, the
 * fingerprint under that key. Known answers from /usr/bin/python3's hmac
 * (HKDF-SHA256 written out), so a stored verifier stays valid across
 * builds and a change of format is seen here.
 */
START_TEST(test_shared_verifier_known_answers)
{
	static const char v_hex[] =
		"13b80685076926772fc2d5ccfa05b1829c0b7a1a5c71d0ae5ff0136b848ac1a3";
	static const char other_secret_hex[] =
		"5d3dd7635d2aad3acc7dc1e42da12edefe29f77aa3df0b74fb77830b75f746e1";
	unsigned char v[CACHE_MAC_BYTES], w[CACHE_MAC_BYTES], fp[CACHE_MAC_BYTES];
	char hex[2 * CACHE_MAC_BYTES + 1];
	ck_assert_int_eq(cache_key_init("0123456789abcdef-test"), 0);
	ck_assert(cache_key_shared_verifier_ready());
	ck_assert(cache_key_shared_verifier(9, "$h$1", "pw", 2, v));
	to_hex(v, hex);
	ck_assert_str_eq(hex, v_hex);
	/* Not the host cache's verifier of the same credential. */
	ck_assert(cache_key_fingerprint("$h$1", fp));
	ck_assert(cache_key_verifier(9, fp, "pw", 2, w));
	ck_assert_mem_ne(v, w, sizeof v);
	/* Each field counts: id, stored hash, password. */
	ck_assert(cache_key_shared_verifier(10, "$h$1", "pw", 2, w));
	ck_assert_mem_ne(v, w, sizeof v);
	ck_assert(cache_key_shared_verifier(9, "$h$2", "pw", 2, w));
	ck_assert_mem_ne(v, w, sizeof v);
	ck_assert(cache_key_shared_verifier(9, "$h$1", "pX", 2, w));
	ck_assert_mem_ne(v, w, sizeof v);
	ck_assert(cache_key_shared_verifier(9, "$h$1", "pw\0", 3, w));
	ck_assert_mem_ne(v, w, sizeof v);
	/* Another cache_secret, another verifier. */
	ck_assert_int_eq(cache_key_init("another-secret-0123"), 0);
	ck_assert(cache_key_shared_verifier(9, "$h$1", "pw", 2, w));
	to_hex(w, hex);
	ck_assert_str_eq(hex, other_secret_hex);
	/* No cache_secret: no key to share, so no verifier at all. */
	ck_assert_int_eq(cache_key_init(NULL), 0);
	ck_assert(!cache_key_shared_verifier_ready());
	ck_assert(!cache_key_shared_verifier(9, "$h$1", "pw", 2, w));
}
END_TEST

/* A verifier is trusted for less than its lifetime, and a little ahead
 * of this host's clock only. */
START_TEST(test_shared_verifier_freshness)
{
	const int64_t now = 1800000000, day = 86400;
	ck_assert(shared_credential_fresh(now, now, day));
	ck_assert(shared_credential_fresh(now - day + 1, now, day));
	ck_assert(!shared_credential_fresh(now - day, now, day));
	ck_assert(!shared_credential_fresh(now - 10 * day, now, day));
	ck_assert(shared_credential_fresh(now + SHARED_CREDENTIAL_SKEW, now, day));
	ck_assert(!shared_credential_fresh(now + SHARED_CREDENTIAL_SKEW + 1, now, day));
	ck_assert(!shared_credential_fresh(now, now, 0));
	ck_assert(!shared_credential_fresh(0, now, day));
}
END_TEST

START_TEST(test_shared_credentials_setting)
{
	static const char text[] = "shared_credentials = off\n";
	struct config cfg;
	config_defaults(&cfg);
	ck_assert(cfg.shared_credentials);
	ck_assert_int_eq(config_parse(&cfg, "t", text, strlen(text), err, sizeof err), 0);
	ck_assert(!cfg.shared_credentials);
	config_free(&cfg);
}
END_TEST

/* Many accounts are kept together, and a full set gives up its oldest. */
START_TEST(test_many_accounts_kept)
{
	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(30, 86400);
	struct user row, got;
	char name[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "user%d", i);
		fill(&row, i + 1, name, "$h");
		keep(&row, name, 100 + i / 100);
		user_free(&row);
	}
	int kept = 0;
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "user%d", i);
		if (account_cache_login(name, name, strlen(name), 110, &got)) {
			ck_assert_int_eq(got.id, i + 1);
			user_free(&got);
			kept++;
		}
	}
	ck_assert_int_eq(kept, 1000);
	remove_dir();
}
END_TEST

START_TEST(test_nothing_kept_without_board_or_lifetime)
{
	struct user row, got;
	fill(&row, 5, "carol", "$h");

	/* No board: rows are never trusted (generations are not shared),
	 * credentials serve this process. */
	change_board_close();
	ck_assert_int_eq(cache_key_init("unit-test-cache-secret"), 0);
	account_cache_init(30, 86400);
	keep(&row, "pw", 100);
	ck_assert(!account_cache_login("carol", "pw", 2, 100, &got));
	ck_assert(account_cache_credential_ok(&row, "pw", 2, 100));

	make_dir();
	ck_assert_int_eq(change_board_open(path, true, err, sizeof err), 0);
	account_cache_init(0, 86400);
	keep(&row, "pw", 100);
	ck_assert(!account_cache_login("carol", "pw", 2, 100, &got));
	user_free(&row);
	remove_dir();
}
END_TEST

START_TEST(test_config_keys)
{
	static const char text[] = "account_cache_seconds = 0\n"
				   "account_cache_file = /run/weave/board\n";
	struct config cfg;
	config_defaults(&cfg);
	ck_assert_int_eq(cfg.account_cache_seconds, 30);
	ck_assert_ptr_null(cfg.account_cache_file);
	ck_assert_int_eq(config_parse(&cfg, "t", text, strlen(text), err, sizeof err), 0);
	ck_assert_int_eq(cfg.account_cache_seconds, 0);
	ck_assert_str_eq(cfg.account_cache_file, "/run/weave/board");
	config_free(&cfg);

	static const char bad[] = "account_cache_seconds = 3601\n";
	config_defaults(&cfg);
	ck_assert_int_eq(config_parse(&cfg, "t", bad, strlen(bad), err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "account_cache_seconds"));
	config_free(&cfg);
}
END_TEST

Suite *account_cache_suite(void)
{
	Suite *s = suite_create("account_cache");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_path_from_config);
	tcase_add_test(tc, test_the_board_is_mapped_whole_when_opened);
	tcase_add_test(tc, test_absent_board_is_safe);
	tcase_add_test(tc, test_bumps_and_failures);
	tcase_add_test(tc, test_unsafe_files_are_refused);
	tcase_add_test(tc, test_a_replaced_file_is_followed);
	tcase_add_test(tc, test_rows_kept_from_the_first_read_unless_an_account_changed);
	tcase_add_test(tc, test_credential_follows_the_password);
	tcase_add_test(tc, test_a_claim_finds_a_credential_stamped_as_a_second_began);
	tcase_add_test(tc, test_answer_follows_last_write);
	tcase_add_test(tc, test_answer_from_the_logins_copy);
	tcase_add_test(tc, test_cache_key_known_answers);
	tcase_add_test(tc, test_shared_verifier_known_answers);
	tcase_add_test(tc, test_name_tag_known_answer);
	tcase_add_test(tc, test_shared_verifier_freshness);
	tcase_add_test(tc, test_shared_credentials_setting);
	tcase_add_test(tc, test_many_accounts_kept);
	tcase_add_test(tc, test_nothing_kept_without_board_or_lifetime);
	tcase_add_test(tc, test_config_keys);
	suite_add_tcase(s, tc);
	return s;
}
