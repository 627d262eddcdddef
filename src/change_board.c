/* change_board.c - the shared change counters of change_board.h. */
#include "change_board.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>

#include "config.h"
#include "log.h"
#include "util.h"

#define BOARD_MAGIC UINT64_C(0x5745415645424436) /* "WEAVEBD6" */
#define MAGIC_FAMILY(m) ((m) >> 8)                /* "WEAVEBD" of any version */
#define KDF_SLOTS 64                              /* max_concurrent_kdf's maximum */
#define USER_SLOTS 65536
#define ADDRESS_SLOTS 16384

/*
 * The shape of each shared table: sets, ways, payload words. 32 k
 * accounts in sets of 16: 10 000 busy accounts fit with none pushed out
 * (in sets of 8 and half the room, 5 % of the polls missed); 16 k
 * passwords being verified at once is far beyond any KDF bound. About
 * 35 MiB in all.
 */
#define ACCOUNTS_SHAPE 2048, 16, BOARD_ACCOUNT_WORDS
#define CLAIMS_SHAPE 1024, 16, BOARD_CLAIM_WORDS
static const uint32_t table_shape[BOARD_TABLE__MAX][3] = {
	[BOARD_ACCOUNTS] = { ACCOUNTS_SHAPE },
	[BOARD_CLAIMS] = { CLAIMS_SHAPE },
};
#define TABLE_WORDS(shape) SHARED_TABLE_WORDS(shape)

struct board {
	_Atomic uint64_t magic; /* written last: 0 while being made */
	_Atomic uint64_t counter[BOARD_COUNTER__MAX];
	uint64_t reserved[BOARD_COUNTER_WORDS - BOARD_COUNTER__MAX];
	_Atomic uint64_t bumps; /* every change_board_bump() of the host */
	_Atomic uint64_t kdf_slot[KDF_SLOTS]; /* pid << 32 | since (seconds); 0: free */
	_Atomic uint64_t generation[USER_SLOTS];
	struct upload_queue_slot upload_queue[USER_SLOTS];
	_Atomic int64_t locked_until[ADDRESS_SLOTS];
	_Atomic uint64_t accounts[TABLE_WORDS(ACCOUNTS_SHAPE)];
	_Atomic uint64_t claims[TABLE_WORDS(CLAIMS_SHAPE)];
};

_Static_assert(BOARD_COUNTER__MAX < BOARD_COUNTER_WORDS, "counters outgrew their words");

/* Lock-free 64-bit atomics work across processes on a shared mapping. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");

static struct board *board;
static unsigned long missed_bumps;
static uint64_t epoch;
/* The tables as attached to the board (or, without one, to private
 * memory of the same shape), and the epoch they were attached in. */
static struct shared_table tables[BOARD_TABLE__MAX];
static uint64_t tables_epoch = UINT64_MAX;
static void *private_table[BOARD_TABLE__MAX];
static bool private_slot_taken; /* the KDF bound without a board */

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
	if (board != NULL) {
		munmap(board, sizeof *board);
		epoch++; /* tables attached to it must be attached again */
	}
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

/* The board of another version (a different layout). */
static bool is_old_board(int fd)
{
	uint64_t magic = 0;
	return pread(fd, &magic, sizeof magic, 0) == sizeof magic &&
	       MAGIC_FAMILY(magic) == MAGIC_FAMILY(BOARD_MAGIC) && magic != BOARD_MAGIC;
}

/*
 * Size a board that was just created, or made empty by hand (an admin,
 * tools/stack.sh), in place. Under flock(), which the kernel drops if
 * this process dies: the next opener then finishes the job. The magic is
 * written last, so nobody maps a board half made. No key is written:
 * the cache's key never leaves process memory (cache_key.h).
 */
static int fill_new_board(int fd, const char *path, char *err, size_t cap)
{
	struct stat st;
	uint64_t magic = 0;
	const char *why = NULL;
	if (flock(fd, LOCK_EX) != 0)
		return refuse(err, cap, fd, path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		why = strerror(errno);
	} else if (st.st_size == 0) {
		/* Reserve the pages now: a full /dev/shm must fail here, not
		 * with SIGBUS when a cache first touches a page. */
		int rc = posix_fallocate(fd, 0, sizeof *board);
		if (rc != 0)
			why = strerror(rc);
	}
	if (why == NULL && fstat(fd, &st) == 0 && (size_t)st.st_size == sizeof *board &&
	    pread(fd, &magic, sizeof magic, 0) == sizeof magic && magic == 0) {
		magic = BOARD_MAGIC;
		if (pwrite(fd, &magic, sizeof magic, 0) != (ssize_t)sizeof magic)
			why = strerror(errno);
	}
	flock(fd, LOCK_UN);
	return why != NULL ? refuse(err, cap, fd, path, why) : 0;
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
	struct stat st;
	int fd = -1;
	for (int round = 0;; round++) {
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
		if (fd < 0)
			return refuse(err, cap, -1, path, strerror(errno));
		if (fstat(fd, &st) != 0)
			return refuse(err, cap, fd, path, strerror(errno));
		if (!S_ISREG(st.st_mode))
			return refuse(err, cap, fd, path, "not a regular file");
		/* Anyone who can write it can make a process trust a stale row;
		 * a reader learns which accounts are busy (docs/security.md). */
		if (st.st_uid != geteuid() && geteuid() != 0)
			return refuse(err, cap, fd, path, "owned by another user");
		if (st.st_mode & (S_IRWXG | S_IRWXO))
			return refuse(err, cap, fd, path,
				      "readable or writable by group or others");
		if (!create || round > 0 || !is_old_board(fd))
			break;
		/* Removed, not reused: processes of the old version still map
		 * it, and find their board gone rather than overwritten. */
		close(fd);
		if (unlink(path) != 0)
			return refuse(err, cap, -1, path,
				      "the board of an older version, and it cannot be "
				      "removed: remove it");
	}
	if (create && fill_new_board(fd, path, err, cap) < 0)
		return -1;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size != sizeof *board)
		return refuse(err, cap, fd, path, "unexpected size (another version?)");
	/*
	 * Mapped whole now (MAP_POPULATE), not page by page as requests
	 * first touch accounts: on a virtual machine one page fault can
	 * cost more than a whole warm poll, and mapping all of the file at
	 * once a few milliseconds (docs/performance.md). A process new to a
	 * host of 10 000 accounts otherwise paid a fault for most of its
	 * first polls. Best effort: the kernel maps what it can, and
	 * anything it could not faults in as before.
	 */
	void *map = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			 fd, 0);
	if (map == MAP_FAILED)
		return refuse(err, cap, fd, path, strerror(errno));
	close(fd);
	struct board *b = map;
	if (atomic_load(&b->magic) != BOARD_MAGIC) {
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
	if (board != NULL) {
		/* The count first: a reader that finds it unchanged after
		 * reading a slot knows that slot was not bumped since. */
		atomic_fetch_add(&board->bumps, 1);
		atomic_fetch_add(&board->generation[(uint64_t)user_id % USER_SLOTS], 1);
	} else
		missed_bumps++;
}

uint64_t change_board_bumps(void)
{
	return board != NULL ? atomic_load(&board->bumps) : 0;
}

unsigned long change_board_missed_bumps(void)
{
	return missed_bumps;
}

uint64_t change_board_upload_slot_of(const char *account)
{
	return fnv1a_str(UINT64_C(0xcbf29ce484222325), account) % USER_SLOTS;
}

struct upload_queue_slot *change_board_upload_slot(uint64_t slot)
{
	return board != NULL ? &board->upload_queue[slot % USER_SLOTS] : NULL;
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
	change_board_raise(address_slot(address), until);
}

int64_t change_board_raise(_Atomic int64_t *word, int64_t value)
{
	int64_t seen = atomic_load(word);
	while (seen < value && !atomic_compare_exchange_weak(word, &seen, value))
		;
	return seen;
}

int64_t change_board_address_locked_until(const char *address)
{
	if (board == NULL)
		return INT64_MAX;
	if (address == NULL)
		return 0;
	return atomic_load(address_slot(address));
}

/* The one attach path of every table (change_board.h). */
struct shared_table *change_board_table(enum board_table which)
{
	if (tables_epoch != epoch) {
		for (int i = 0; i < BOARD_TABLE__MAX; i++) {
			const uint32_t *shape = table_shape[i];
			void *region = NULL;
			if (board != NULL)
				region = i == BOARD_ACCOUNTS ? (void *)board->accounts
							     : (void *)board->claims;
			else if (private_table[i] == NULL)
				region = private_table[i] = xcalloc(
					1, shared_table_bytes(shape[0], shape[1], shape[2]));
			else
				region = private_table[i];
			shared_table_attach(&tables[i], region, shape[0], shape[1], shape[2]);
		}
		tables_epoch = epoch;
	}
	return &tables[which];
}

/* A slot held by a process that is gone, or for over a minute, is free. */
static bool slot_abandoned(uint64_t v, int64_t now)
{
	pid_t pid = (pid_t)(v >> 32);
	int64_t since = (int64_t)(v & 0xffffffffu);
	return (kill(pid, 0) != 0 && errno == ESRCH) || now - since > 60 ||
	       since - now > 60;
}

int change_board_kdf_enter(int limit, int64_t now)
{
	if (board == NULL) {
		/* One process runs one KDF at a time anyway. */
		if (private_slot_taken)
			return -1;
		private_slot_taken = true;
		return KDF_SLOTS;
	}
	uint64_t mine = (uint64_t)getpid() << 32 | ((uint64_t)now & 0xffffffffu);
	for (int i = 0; i < limit && i < KDF_SLOTS; i++) {
		uint64_t seen = atomic_load(&board->kdf_slot[i]);
		if ((seen == 0 || slot_abandoned(seen, now & 0xffffffff)) &&
		    atomic_compare_exchange_strong(&board->kdf_slot[i], &seen, mine))
			return i;
	}
	return -1;
}

void change_board_kdf_leave(int slot)
{
	if (slot == KDF_SLOTS)
		private_slot_taken = false;
	else if (board != NULL && slot >= 0 && slot < KDF_SLOTS) {
		/* Only our own: the board may have been replaced meanwhile. */
		uint64_t seen = atomic_load(&board->kdf_slot[slot]);
		if (seen >> 32 == (uint64_t)getpid())
			atomic_compare_exchange_strong(&board->kdf_slot[slot], &seen, 0);
	}
}

int change_board_kdf_running(void)
{
	int n = 0;
	for (int i = 0; board != NULL && i < KDF_SLOTS; i++)
		n += atomic_load(&board->kdf_slot[i]) != 0;
	return n;
}

void change_board_count(enum board_counter c)
{
	if (board != NULL)
		atomic_fetch_add_explicit(&board->counter[c], 1, memory_order_relaxed);
}

uint64_t change_board_counter(enum board_counter c)
{
	return board != NULL ? atomic_load(&board->counter[c]) : 0;
}

void change_board_sleep(_Atomic uint32_t *word, uint32_t seen, int64_t until_ms,
			uint32_t bits)
{
	/* FUTEX_WAIT_BITSET's limit is a time on the monotonic clock. */
	struct timespec limit = { .tv_sec = until_ms / 1000,
				  .tv_nsec = (until_ms % 1000) * 1000000 };
	/* A shared (not private) futex: the word is in a file every
	 * process maps. */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET, seen, &limit, NULL, bits);
}

void change_board_wake(_Atomic uint32_t *word, int how_many, uint32_t bits)
{
	atomic_fetch_add(word, 1);
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_BITSET, how_many, NULL, NULL, bits);
}
