/* dbceiling.c - the data-tier ceiling: runs what weave.fcgi asks the database for one
 * benchmark workload, through the server's own db_ functions (src/libweave.a: the
 * same statement tables, the same prepared-statement cache, the same transaction
 * shape as src/route.c), in a tight loop and without HTTP. bench/run reports the
 * server's records/s as a fraction of what this program reaches in the same run.
 *
 * usage: dbceiling CONFIG MODE SECONDS PROCS ARGS...
 *   poll     SECONDS PROCS PREFIX NUSERS      GET info/collections (answer kept)
 *   coldpoll SECONDS PROCS PREFIX NUSERS      GET info/collections, nothing kept
 *   download SECONDS PROCS USER NEWER         GET storage/history?newer=...
 *   post     SECONDS PROCS PREFIX NUSERS MAX  POST 100-record batches
 * CONFIG is the weave.conf the server reads (its db_* keys and history_days).
 * PROCS processes run at once, one connection each. Prints one line:
 *   ops=N records=N secs=S p50_us=N p99_us=N
 * A post process stops once every account it owns has MAX records; PREFIX
 * NUSERS 1 with PROCS > 1 makes every process write to one account (the
 * per-account serialisation of docs/performance.md). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "db.h"
#include "db_history.h"
#include "db_storage.h"
#include "db_user.h"
#include "query.h"
#include "throttle.h"
#include "util.h"
#include "wbo.h"

#define BATCH 100
#define MAX_LAT 2000000

static struct config cfg;

static void die(const char *what, enum db_status st)
{
	fprintf(stderr, "dbceiling: %s: %s (%s)\n", what, db_status_text(st),
		db_last_error());
	exit(1);
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The login's read of the user row (login.c): its four throttle rows and
 * its shared verifier too (when the schema has them, as the server). */
static void load_user(const char *name, enum user_lock lock, struct user *u)
{
	struct login_subjects subjects;
	struct login_counters counters;
	struct login_verifier verifier;
	throttle_login_subjects(&cfg, name, "127.0.0.1", &subjects);
	enum db_status st = db_user_get_login(name, lock, &subjects,
					      now_centiseconds() / 100, u, &counters,
					      db_user_verifiers_ready() ? &verifier : NULL);
	if (st != DB_OK)
		die(name, st);
}

/*
 * A poll whose account has no kept row: the user row only. The host keeps
 * the info/collections answer until the user writes (account_cache.h), and
 * the poll workload never writes, so the stamps query is not run.
 */
static long do_poll(const char *name)
{
	struct user u;
	load_user(name, USER_LOCK_SHARED, &u);
	user_free(&u);
	return 0;
}

static int count_collection(void *ctx, const char *collection, size_t len,
			    int64_t modified)
{
	(void)collection;
	(void)len;
	(void)modified;
	(*(long *)ctx)++;
	return 0;
}

/*
 * A poll of an account the host has nothing of (its first request after a
 * restart, or one the cache has forgotten): the user row, then the
 * collections' stamps. Returns how many collections the answer names.
 */
static long do_cold_poll(const char *name)
{
	struct user u;
	long n = 0;
	int64_t valid_until;
	load_user(name, USER_LOCK_SHARED, &u);
	enum db_status st = db_storage_collection_stamps(u.id, now_centiseconds(),
							 count_collection, &n,
							 &valid_until);
	user_free(&u);
	if (st != DB_OK)
		die("coldpoll", st);
	return n;
}

static int count_record(void *ctx, const struct wbo_row *row)
{
	(void)row;
	(*(long *)ctx)++;
	return 0;
}

/* GET storage/history?newer=N&full=1&sort=index&limit=1500. */
static long do_download(const char *name, int64_t newer)
{
	struct user u;
	struct wbo_query q;
	long n = 0;
	memset(&q, 0, sizeof q);
	q.full = true;
	q.has_newer = true;
	q.newer = newer;
	q.sort = SORT_INDEX;
	q.limit = 1500;
	load_user(name, USER_LOCK_SHARED, &u);
	enum db_status st = db_storage_select(u.id, "history", &q, now_centiseconds(),
					      count_record, &n);
	user_free(&u);
	if (st != DB_OK)
		die("download", st);
	return n;
}

/* A ~600-byte payload like an encrypted Weave record, distinct per record. */
static void make_payload(char *out, size_t cap, unsigned seed)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char ct[513], iv[25], hmac[65];
	for (size_t i = 0; i < 512; i++) {
		seed = seed * 1103515245u + 12345u;
		ct[i] = b64[(seed >> 16) & 63];
	}
	ct[512] = '\0';
	memcpy(iv, ct + 100, 24);
	iv[24] = '\0';
	for (size_t i = 0; i < 64; i++)
		hmac[i] = "0123456789abcdef"[(unsigned char)ct[i] & 15];
	hmac[64] = '\0';
	snprintf(out, cap, "{\"ciphertext\":\"%s\",\"IV\":\"%s\",\"hmac\":\"%s\"}",
		 ct, iv, hmac);
}

/* 100 new records with sortindex and payload, ids unique to (process, batch):
 * the pid tells runs apart, so that a second run writes new records too. */
static void make_batch(struct wbo *items, unsigned batch)
{
	static char ids[BATCH][32], payloads[BATCH][700];
	for (unsigned i = 0; i < BATCH; i++) {
		snprintf(ids[i], sizeof ids[i], "d%ld-%u-%u", (long)getpid(), batch, i);
		make_payload(payloads[i], sizeof payloads[i], batch * BATCH + i);
		memset(&items[i], 0, sizeof items[i]);
		items[i].id = ids[i];
		items[i].id_len = strlen(ids[i]);
		items[i].fields = WBO_FIELD_SORTINDEX | WBO_FIELD_PAYLOAD;
		items[i].sortindex = (int64_t)(i * 37 % 1000);
		items[i].payload = payloads[i];
		items[i].payload_len = strlen(payloads[i]);
	}
}

/*
 * Where a POST's time goes, summed over this process's POSTs (µs), for
 * DBCEILING_PHASES=1: the row lock's read (with its wait, when others
 * write to the account), the records (keep + upsert), the write's log, the
 * last_write update, the commit. docs/performance.md quotes them.
 */
enum phase { PHASE_LOCK, PHASE_RECORDS, PHASE_LOG, PHASE_LAST_WRITE, PHASE_COMMIT,
	     PHASE__MAX };
static const char *const phase_names[PHASE__MAX] = { "lock", "records", "log",
						     "last_write", "commit" };
static int64_t phase_us[PHASE__MAX], phase_mark;

static void phase_end(enum phase p)
{
	int64_t t = now_us();
	phase_us[p] += t - phase_mark;
	phase_mark = t;
}

/* One POST in src/route.c's shape: lock, stamp, write, log, last_write, commit. */
static void do_post(const char *name, unsigned batch)
{
	struct wbo items[BATCH];
	struct write_context wc;
	struct user u;
	make_batch(items, batch);
	phase_mark = now_us();
	enum db_status st = db_begin();
	if (st != DB_OK)
		die("begin", st);
	load_user(name, USER_LOCK_EXCLUSIVE, &u);
	phase_end(PHASE_LOCK);
	int64_t now = now_centiseconds(), floor = u.created * 100;
	if (u.last_write > floor)
		floor = u.last_write;
	int64_t stamp = (now > floor ? now : floor) + 1; /* route.c account_stamp */
	struct history_write w = { u.id, stamp, u.last_write, "history", "dbceiling",
				   cfg.history_max_kb, 0 };
	db_history_begin(&wc, &w);
	if (cfg.history_days <= 0)
		db_history_cancel(&wc);
	st = db_storage_put(&wc, u.id, "history", items, BATCH, stamp, true);
	phase_end(PHASE_RECORDS);
	if (st == DB_OK)
		st = db_history_finish(&wc);
	phase_end(PHASE_LOG);
	if (st == DB_OK)
		st = db_user_set_last_write(u.id, stamp);
	phase_end(PHASE_LAST_WRITE);
	if (st == DB_OK)
		st = db_commit();
	phase_end(PHASE_COMMIT);
	user_free(&u);
	if (st != DB_OK)
		die("post", st); /* a deadlock would be a finding: say so */
}

static void print_phases(int index, int64_t ops)
{
	if (getenv("DBCEILING_PHASES") == NULL || ops == 0)
		return;
	fprintf(stderr, "dbceiling process %d, µs per POST:", index);
	for (int p = 0; p < PHASE__MAX; p++)
		fprintf(stderr, " %s=%" PRId64, phase_names[p], phase_us[p] / ops);
	fprintf(stderr, "\n");
}

/* ---- the loop ---------------------------------------------------------- */

struct job {
	const char *mode;
	double seconds;
	int procs, index;
	const char *prefix_or_user;
	long nusers;
	int64_t newer;
	long max_records;
};

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* One request of the job's workload, number i of this process. */
static long one_op(const struct job *j, long i, long mine)
{
	char name[64];
	if (strcmp(j->mode, "poll") == 0 || strcmp(j->mode, "coldpoll") == 0) {
		long u = (i * j->procs + j->index) % j->nusers;
		snprintf(name, sizeof name, "%s%ld", j->prefix_or_user, u);
		return j->mode[0] == 'p' ? do_poll(name) : do_cold_poll(name);
	}
	if (strcmp(j->mode, "download") == 0)
		return do_download(j->prefix_or_user, j->newer);
	/* post: process k owns the accounts k, k + procs, ...; with fewer
	 * accounts than processes, several share one. */
	long u = j->nusers >= j->procs ? j->index + (i % mine) * j->procs
				       : j->index % j->nusers;
	snprintf(name, sizeof name, "%s%ld", j->prefix_or_user, u);
	do_post(name, (unsigned)(i / mine));
	return BATCH;
}

static void write_all(int fd, const void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n <= 0)
			exit(1);
		done += (size_t)n;
	}
}

/* One process: runs until the time is up (or, for post, every user it
 * owns is full); writes ops, records, then each latency to fd. */
static void worker(const struct job *j, int fd)
{
	int64_t *lat = xmalloc(MAX_LAT * sizeof *lat);
	int64_t ops = 0, records = 0, end;
	enum db_status st = db_connect();
	if (st != DB_OK)
		die("connect", st);
	long mine = 0; /* accounts this process writes to (post) */
	for (long u = j->index; u < j->nusers; u += j->procs)
		mine++;
	if (mine == 0)
		mine = 1;
	long batches = j->max_records / BATCH * (j->nusers >= j->procs ? mine : 1);
	bool post = strcmp(j->mode, "post") == 0;
	end = now_us() + (int64_t)(j->seconds * 1e6);
	for (long i = 0; now_us() < end && ops < MAX_LAT; i++) {
		if (post && i >= batches)
			break;
		int64_t t0 = now_us();
		records += one_op(j, i, mine);
		lat[ops++] = now_us() - t0;
	}
	if (post)
		print_phases(j->index, ops);
	write_all(fd, &ops, sizeof ops);
	write_all(fd, &records, sizeof records);
	write_all(fd, lat, (size_t)ops * sizeof *lat);
	db_disconnect();
	exit(0);
}

static void read_all(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = read(fd, (char *)buf + done, len - done);
		if (n <= 0) {
			fprintf(stderr, "dbceiling: a worker died\n");
			exit(1);
		}
		done += (size_t)n;
	}
}

/* Arguments into j; 0, or 2 after a usage message. */
static int parse_args(int argc, char **argv, struct job *j)
{
	memset(j, 0, sizeof *j);
	if (argc < 7) {
		fprintf(stderr, "usage: dbceiling CONFIG poll|coldpoll|download|post SECONDS PROCS ARGS...\n"
				"  poll|coldpoll SECONDS PROCS PREFIX NUSERS\n"
				"  download SECONDS PROCS USER NEWER\n"
				"  post SECONDS PROCS PREFIX NUSERS MAX_RECORDS\n");
		return 2;
	}
	j->mode = argv[2];
	j->seconds = strtod(argv[3], NULL);
	j->procs = (int)strtol(argv[4], NULL, 10);
	j->prefix_or_user = argv[5];
	if (strcmp(j->mode, "download") == 0) {
		j->newer = strtoll(argv[6], NULL, 10);
	} else {
		j->nusers = strtol(argv[6], NULL, 10);
		if (strcmp(j->mode, "post") == 0)
			j->max_records = argc > 7 ? strtol(argv[7], NULL, 10) : 5000;
	}
	if (j->procs < 1 || j->procs > 64 ||
	    (strcmp(j->mode, "download") != 0 && j->nusers < 1)) {
		fprintf(stderr, "dbceiling: bad arguments\n");
		return 2;
	}
	return 0;
}

/* Every worker's count and latencies; prints the line. */
static void report(const int *fds, const pid_t *pids, int procs, int64_t t0)
{
	int64_t ops = 0, records = 0, n = 0;
	int64_t *all = NULL;
	for (int k = 0; k < procs; k++) {
		int64_t o, r;
		read_all(fds[k], &o, sizeof o);
		read_all(fds[k], &r, sizeof r);
		all = xrealloc(all, (size_t)(n + o + 1) * sizeof *all);
		read_all(fds[k], all + n, (size_t)o * sizeof *all);
		n += o;
		ops += o;
		records += r;
		close(fds[k]);
		waitpid(pids[k], NULL, 0);
	}
	double secs = (double)(now_us() - t0) / 1e6;
	if (n == 0) {
		printf("ops=0 records=0 secs=%.3f p50_us=0 p99_us=0\n", secs);
		return;
	}
	qsort(all, (size_t)n, sizeof *all, cmp64);
	printf("ops=%" PRId64 " records=%" PRId64 " secs=%.3f p50_us=%" PRId64
	       " p99_us=%" PRId64 "\n",
	       ops, records, secs, all[(n - 1) / 2], all[(n * 99 - 1) / 100]);
	free(all);
}

int main(int argc, char **argv)
{
	struct job j;
	char err[512];
	int rc = parse_args(argc, argv, &j);
	if (rc != 0)
		return rc;
	config_defaults(&cfg);
	config_defaults(&cfg);
	if (config_load(&cfg, argv[1], err, sizeof err) < 0) {
		fprintf(stderr, "dbceiling: %s\n", err);
		return 1;
	}
	db_configure(&cfg);
	int fds[64];
	pid_t pids[64];
	int64_t t0 = now_us();
	for (int k = 0; k < j.procs; k++) {
		int pfd[2];
		if (pipe(pfd) != 0)
			return 1;
		j.index = k;
		pids[k] = fork();
		if (pids[k] == 0) {
			close(pfd[0]);
			worker(&j, pfd[1]);
		}
		close(pfd[1]);
		fds[k] = pfd[0];
	}
	report(fds, pids, j.procs, t0);
	return 0;
}
