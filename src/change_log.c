/* change_log.c - changes made through other hosts reach the board (change_log.h). */
#include "change_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "change_board.h"
#include "db_changes.h"
#include "log.h"

#define SEEN_MAX 8192
#define LOG_MAGIC UINT64_C(0x7765617665636c31) /* "weavecl1" */

/*
 * The shared file. last_look is read without the lock by every process
 * (an atomic load per request); everything else is read and written only
 * under the flock. seen holds the seqs the last look found, ascending:
 * the next look bumps only the accounts of changes not in it. A look
 * sets seen_count to 0 before it rewrites seen, so a process that dies
 * half way leaves an empty list (the next look bumps everything in its
 * window: extra reads, never a missed change).
 */
struct shared_log {
	uint64_t magic;
	_Atomic int64_t last_look;    /* this host's clock, centiseconds */
	int64_t last_db_now;          /* the database clock at the last look */
	int64_t last_forget;          /* database clock of the last purge */
	uint64_t seen_count;
	uint64_t seen[SEEN_MAX];
};

static struct shared_log *shared;
static int fd = -1;
static int64_t first_reach; /* centiseconds */

int change_log_open(const char *board_path, int64_t keep_seconds, char *err,
		    size_t cap)
{
	char path[4200];
	change_log_close();
	if (snprintf(path, sizeof path, "%s.changes", board_path) >= (int)sizeof path) {
		snprintf(err, cap, "path too long");
		return -1;
	}
	int f = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f < 0) {
		snprintf(err, cap, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(f, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != geteuid() && geteuid() != 0) || (st.st_mode & 022) != 0) {
		snprintf(err, cap, "%s: not a regular file of this user, writable by it alone",
			 path);
		close(f);
		return -1;
	}
	if (st.st_size != (off_t)sizeof *shared && flock(f, LOCK_EX) == 0) {
		/* Sized (and so zeroed) once, by whoever comes first. */
		if (fstat(f, &st) == 0 && st.st_size != (off_t)sizeof *shared &&
		    ftruncate(f, 0) == 0 && ftruncate(f, (off_t)sizeof *shared) < 0) {
			snprintf(err, cap, "%s: %s", path, strerror(errno));
			flock(f, LOCK_UN);
			close(f);
			return -1;
		}
		flock(f, LOCK_UN);
	}
	void *m = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (m == MAP_FAILED) {
		snprintf(err, cap, "%s: mmap: %s", path, strerror(errno));
		close(f);
		return -1;
	}
	shared = m;
	fd = f;
	first_reach = keep_seconds * 100 + CHANGE_LOG_OVERLAP;
	return 0;
}

void change_log_close(void)
{
	if (shared != NULL)
		munmap(shared, sizeof *shared);
	if (fd >= 0)
		close(fd);
	shared = NULL;
	fd = -1;
}

static bool seen_before(uint64_t seq)
{
	/* The count comes from a file other processes write: bounded here. */
	size_t lo = 0, hi = (size_t)shared->seen_count;
	if (hi > SEEN_MAX)
		hi = SEEN_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (shared->seen[mid] == seq)
			return true;
		if (shared->seen[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

struct look {
	uint64_t found[SEEN_MAX];
	size_t count;
	bool overflow;
	unsigned long bumped;
};

static void on_change(void *ctx, uint64_t seq, int64_t user_id)
{
	struct look *l = ctx;
	if (!seen_before(seq)) {
		change_board_bump(user_id);
		l->bumped++;
	}
	if (l->count < SEEN_MAX)
		l->found[l->count++] = seq;
	else
		l->overflow = true;
}

/* Under the flock: one look at the database. */
static bool look_locked(int64_t now)
{
	static struct look l;
	int64_t db_now;
	if (shared->magic != LOG_MAGIC) {
		memset(shared->seen, 0, sizeof shared->seen);
		shared->seen_count = 0;
		shared->last_db_now = 0;
		shared->last_forget = 0;
		shared->magic = LOG_MAGIC;
	}
	if (db_changes_now(&db_now) != DB_OK)
		return false;
	/* Back to just before the last look, or as far as a kept row may be
	 * old when there was none (or it is long past). */
	int64_t since = db_now - first_reach;
	if (shared->last_db_now - CHANGE_LOG_OVERLAP > since)
		since = shared->last_db_now - CHANGE_LOG_OVERLAP;
	memset(&l, 0, sizeof l);
	if (db_changes_since(since, on_change, &l) != DB_OK)
		return false;
	/* The seqs come in ascending order: seen stays sorted. */
	shared->seen_count = 0;
	if (!l.overflow) {
		memcpy(shared->seen, l.found, l.count * sizeof l.found[0]);
		shared->seen_count = l.count;
	}
	shared->last_db_now = db_now;
	if (l.bumped > 0)
		log_debug("changes from the database: %lu account(s) marked", l.bumped);
	if (db_now - shared->last_forget >= 6000) {
		uint64_t gone = 0;
		if (db_changes_forget(db_now - CHANGE_LOG_KEEP_SECONDS * 100, 10000,
				      &gone) == DB_OK)
			shared->last_forget = db_now;
	}
	atomic_store(&shared->last_look, now);
	return true;
}

bool change_log_look(int64_t now)
{
	if (shared == NULL)
		return false;
	if (flock(fd, LOCK_EX) != 0)
		return false;
	bool ok = look_locked(now);
	flock(fd, LOCK_UN);
	return ok;
}

/* Not due before a second after the last look; a last look more than a
 * minute ahead means this host's clock went back: due now. */
static bool due(int64_t now, int64_t last)
{
	return now >= last + CHANGE_LOG_INTERVAL || last > now + 6000;
}

void change_log_catch_up(int64_t now)
{
	static int64_t quiet_until; /* no error logged again before */
	if (shared == NULL || !due(now, atomic_load(&shared->last_look)))
		return;
	/* Someone else is looking: its look serves this request too. */
	if (flock(fd, LOCK_EX | LOCK_NB) != 0)
		return;
	if (due(now, atomic_load(&shared->last_look)) && !look_locked(now)) {
		/* A missing table or a database away: try again in ten seconds
		 * (account_cache_seconds still bounds what goes unseen). */
		atomic_store(&shared->last_look, now + 1000 - CHANGE_LOG_INTERVAL);
		if (now >= quiet_until) {
			log_warn("cannot read account changes from the database "
				 "(%s): changes made through other hosts reach this "
				 "one only within account_cache_seconds; run "
				 "'weave-admin db upgrade' if the table is missing",
				 db_last_error());
			quiet_until = now + 6000;
		}
	}
	flock(fd, LOCK_UN);
}
