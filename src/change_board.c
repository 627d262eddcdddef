/* change_board.c - the shared change counters of change_board.h. */
#include "change_board.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"

#define BOARD_MAGIC UINT64_C(0x5745415645424431) /* "WEAVEBD1" */
#define USER_SLOTS 65536
#define ADDRESS_SLOTS 16384

struct board {
	_Atomic uint64_t magic; /* 0 in a file just created */
	uint64_t reserved[7];
	_Atomic uint64_t generation[USER_SLOTS];
	_Atomic int64_t locked_until[ADDRESS_SLOTS];
};

/* Lock-free 64-bit atomics work across processes on a shared mapping. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

static struct board *board;
static unsigned long missed_bumps;
static uint64_t epoch;

/* What was opened, for change_board_refresh(). */
static char opened_path[4096];
static bool opened_create;
static dev_t mapped_dev;
static ino_t mapped_ino;
static bool refresh_warned;

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

static uint64_t fnv1a_str(uint64_t h, const char *s)
{
	/* The NUL is hashed too, so fields cannot run into each other. */
	return fnv1a(h, s != NULL ? s : "", s != NULL ? strlen(s) + 1 : 1);
}

int change_board_path(const struct config *cfg, char *out, size_t cap)
{
	int n;
	if (cfg->account_cache_file != NULL && cfg->account_cache_file[0] != '\0') {
		n = snprintf(out, cap, "%s", cfg->account_cache_file);
	} else {
		/* Every process of one server, and weave-admin, meets at the
		 * same name because they share the database settings. */
		char port[24];
		snprintf(port, sizeof port, "%" PRId64, cfg->db_port);
		uint64_t h = UINT64_C(0xcbf29ce484222325);
		h = fnv1a_str(h, cfg->db_socket);
		h = fnv1a_str(h, cfg->db_host);
		h = fnv1a_str(h, port);
		h = fnv1a_str(h, cfg->db_name);
		n = snprintf(out, cap, "/dev/shm/weave-server-%016" PRIx64, h);
	}
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static void unmap(void)
{
	if (board != NULL)
		munmap(board, sizeof *board);
	board = NULL;
}

void change_board_close(void)
{
	unmap();
	opened_path[0] = '\0';
}

static int refuse(char *err, size_t cap, int fd, const char *path, const char *why)
{
	snprintf(err, cap, "%s: %s", path, why);
	if (fd >= 0)
		close(fd);
	return -1;
}

int change_board_open(const char *path, bool create, char *err, size_t cap)
{
	if (path != opened_path) { /* a new path, not change_board_refresh() */
		change_board_close();
		if (strlen(path) >= sizeof opened_path)
			return refuse(err, cap, -1, path, "path too long");
		memcpy(opened_path, path, strlen(path) + 1);
		opened_create = create;
	}
	unmap();
	int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0);
	int fd = open(path, flags, 0600);
	if (fd < 0)
		return refuse(err, cap, -1, path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0)
		return refuse(err, cap, fd, path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return refuse(err, cap, fd, path, "not a regular file");
	/* Anyone who can write it can make a process trust a stale row. */
	if (st.st_uid != geteuid() && geteuid() != 0)
		return refuse(err, cap, fd, path, "owned by another user");
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return refuse(err, cap, fd, path, "writable by group or others");
	if (st.st_size == 0 && create && ftruncate(fd, sizeof *board) != 0)
		return refuse(err, cap, fd, path, strerror(errno));
	if (fstat(fd, &st) != 0 || (size_t)st.st_size != sizeof *board)
		return refuse(err, cap, fd, path, "unexpected size (another version?)");
	void *map = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return refuse(err, cap, fd, path, strerror(errno));
	close(fd);
	struct board *b = map;
	uint64_t expected = 0;
	if (!atomic_compare_exchange_strong(&b->magic, &expected, BOARD_MAGIC) &&
	    expected != BOARD_MAGIC) {
		munmap(map, sizeof *board);
		return refuse(err, cap, -1, path, "not a weave-server board");
	}
	board = b;
	mapped_dev = st.st_dev;
	mapped_ino = st.st_ino;
	epoch++;
	return 0;
}

void change_board_refresh(void)
{
	struct stat st;
	if (opened_path[0] == '\0')
		return;
	if (board != NULL && stat(opened_path, &st) == 0 && st.st_dev == mapped_dev &&
	    st.st_ino == mapped_ino)
		return;
	char err[4200];
	if (change_board_open(opened_path, opened_create, err, sizeof err) == 0) {
		log_info("account cache: %s was replaced; now using the new file",
			 opened_path);
		refresh_warned = false;
	} else if (!refresh_warned) {
		log_warn("account cache off until %s can be opened: %s", opened_path,
			 err);
		refresh_warned = true;
	}
}

uint64_t change_board_epoch(void)
{
	return epoch;
}

bool change_board_ready(void)
{
	return board != NULL;
}

uint64_t change_board_generation(int64_t user_id)
{
	if (board == NULL)
		return 0;
	return atomic_load(&board->generation[(uint64_t)user_id % USER_SLOTS]);
}

void change_board_bump(int64_t user_id)
{
	change_board_refresh();
	if (board != NULL)
		atomic_fetch_add(&board->generation[(uint64_t)user_id % USER_SLOTS], 1);
	else
		missed_bumps++;
}

unsigned long change_board_missed_bumps(void)
{
	return missed_bumps;
}

static _Atomic int64_t *address_slot(const char *address)
{
	uint64_t h = fnv1a_str(UINT64_C(0xcbf29ce484222325), address);
	return &board->locked_until[h % ADDRESS_SLOTS];
}

void change_board_note_address_lock(const char *address, int64_t until)
{
	if (board == NULL || address == NULL)
		return;
	/* A slot mate's later end wins: the slot then errs on the safe side. */
	_Atomic int64_t *slot = address_slot(address);
	int64_t seen = atomic_load(slot);
	while (seen < until && !atomic_compare_exchange_weak(slot, &seen, until))
		;
}

int64_t change_board_address_locked_until(const char *address)
{
	if (board == NULL)
		return INT64_MAX;
	if (address == NULL)
		return 0;
	return atomic_load(address_slot(address));
}
