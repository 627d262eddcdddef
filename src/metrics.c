/* metrics.c - host-wide request counters in a shared file, rendered as Prometheus text. */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "change_board.h"

enum metrics_route {
	MR_INFO_COLLECTIONS,
	MR_INFO_COUNTS,
	MR_INFO_QUOTA,
	MR_INFO_USAGE,
	MR_STORAGE,
	MR_COLLECTION,
	MR_RECORD,
	MR_USER,
	MR_NODE,
	MR_PASSWORD,
	MR_PASSWORD_RESET,
	MR_EMAIL,
	MR_CAPTCHA,
	MR_RESET_PAGE,
	MR_ROOT,
	MR_HEALTH,
	MR_METRICS,
	MR_OTHER,
	MR__MAX
};

static const char *const route_names[MR__MAX] = {
	[MR_INFO_COLLECTIONS] = "info_collections",
	[MR_INFO_COUNTS] = "info_collection_counts",
	[MR_INFO_QUOTA] = "info_quota",
	[MR_INFO_USAGE] = "info_collection_usage",
	[MR_STORAGE] = "storage",
	[MR_COLLECTION] = "collection",
	[MR_RECORD] = "record",
	[MR_USER] = "user",
	[MR_NODE] = "node",
	[MR_PASSWORD] = "password",
	[MR_PASSWORD_RESET] = "password_reset",
	[MR_EMAIL] = "email",
	[MR_CAPTCHA] = "captcha",
	[MR_RESET_PAGE] = "reset_page",
	[MR_ROOT] = "root",
	[MR_HEALTH] = "health",
	[MR_METRICS] = "metrics",
	[MR_OTHER] = "other",
};

/* The statuses the server answers; anything else counts as "other". */
static const int statuses[] = { 200, 201, 204, 304, 400, 401, 403, 404, 405,
				409, 412, 413, 415, 416, 500, 503 };
#define NSTATUS (sizeof statuses / sizeof statuses[0] + 1)

static const char *const method_names[METHOD__MAX] = {
	[METHOD_GET] = "GET", [METHOD_PUT] = "PUT", [METHOD_POST] = "POST",
	[METHOD_DELETE] = "DELETE", [METHOD_OTHER] = "other",
};

/* Upper bounds in microseconds; one more bucket for +Inf. */
static const int64_t bucket_us[] = { 1000, 2500, 5000, 10000, 25000, 50000, 100000,
				     250000, 500000, 1000000, 2500000, 5000000, 10000000 };
#define NBUCKET (sizeof bucket_us / sizeof bucket_us[0] + 1)

/* Bump when the layout changes: a file of another layout is reset. */
#define METRICS_MAGIC UINT64_C(0x57454156454d0001)

struct metrics_file {
	uint64_t magic;
	uint64_t size;
	uint64_t created; /* Unix time the counters start from */
	_Atomic uint64_t requests[MR__MAX][METHOD__MAX][NSTATUS];
	_Atomic uint64_t buckets[MR__MAX][NBUCKET];
	_Atomic uint64_t micros[MR__MAX];
	_Atomic uint64_t db_errors;
};

static struct metrics_file *page;

int metrics_path(const struct config *cfg, char *out, size_t cap)
{
	char board[4096];
	if (change_board_path(cfg, board, sizeof board) < 0)
		return -1;
	int n = snprintf(out, cap, "%s.metrics", board);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Give a new or foreign file this build's layout; the caller holds its flock. */
static int metrics_reset(int fd, char *err, size_t cap)
{
	struct metrics_file fresh;
	memset(&fresh, 0, sizeof fresh);
	fresh.magic = METRICS_MAGIC;
	fresh.size = sizeof fresh;
	fresh.created = (uint64_t)time(NULL);
	if (ftruncate(fd, 0) != 0 || pwrite(fd, &fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh) {
		snprintf(err, cap, "cannot write the metrics file: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int metrics_open(const char *path, char *err, size_t cap)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		snprintf(err, cap, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	struct metrics_file head;
	int rc = flock(fd, LOCK_EX);
	if (rc == 0 && (pread(fd, &head, sizeof head, 0) != (ssize_t)sizeof head ||
			head.magic != METRICS_MAGIC || head.size != sizeof head))
		rc = metrics_reset(fd, err, cap);
	else if (rc != 0)
		snprintf(err, cap, "cannot lock %s: %s", path, strerror(errno));
	void *map = MAP_FAILED;
	if (rc == 0) {
		map = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			snprintf(err, cap, "cannot map %s: %s", path, strerror(errno));
	}
	flock(fd, LOCK_UN);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	page = map;
	return 0;
}

static enum metrics_route storage_route(const struct request *req)
{
	const char *area = req->nsegments > 2 ? req->segments[2] : "";
	if (strcmp(area, "info") == 0 && req->nsegments == 4) {
		const char *what = req->segments[3];
		if (strcmp(what, "collections") == 0)
			return MR_INFO_COLLECTIONS;
		if (strcmp(what, "collection_counts") == 0)
			return MR_INFO_COUNTS;
		if (strcmp(what, "quota") == 0)
			return MR_INFO_QUOTA;
		if (strcmp(what, "collection_usage") == 0)
			return MR_INFO_USAGE;
	}
	if (strcmp(area, "storage") == 0)
		return req->nsegments == 3   ? MR_STORAGE
		       : req->nsegments == 4 ? MR_COLLECTION
		       : req->nsegments == 5 ? MR_RECORD
					     : MR_OTHER;
	return MR_OTHER;
}

static enum metrics_route user_route(const struct request *req)
{
	if (req->nsegments == 3)
		return MR_USER;
	const char *what = req->nsegments > 3 ? req->segments[3] : "";
	if (strcmp(what, "node") == 0)
		return MR_NODE;
	if (strcmp(what, "password") == 0)
		return MR_PASSWORD;
	if (strcmp(what, "password_reset") == 0)
		return MR_PASSWORD_RESET;
	if (strcmp(what, "email") == 0)
		return MR_EMAIL;
	return MR_OTHER;
}

/* Labels come from a fixed table, never from the client's bytes. */
static enum metrics_route classify(const struct request *req)
{
	if (req->nsegments == 0) {
		const char *info = request_env(req, "PATH_INFO");
		if (info != NULL && (strcmp(info, "/health") == 0 ||
				     strcmp(info, "/__heartbeat__") == 0))
			return MR_HEALTH;
		if (info != NULL && strcmp(info, "/metrics") == 0)
			return MR_METRICS;
		return MR_ROOT;
	}
	const char *first = req->segments[0];
	if (strcmp(first, "1.0") == 0 || strcmp(first, "1") == 0 || strcmp(first, "1.1") == 0)
		return storage_route(req);
	if (strcmp(first, "user") == 0)
		return user_route(req);
	if (strcmp(first, "misc") == 0)
		return MR_CAPTCHA;
	if (strcmp(first, "weave-password-reset") == 0)
		return MR_RESET_PAGE;
	return MR_OTHER;
}

const char *metrics_route_name(const struct request *req)
{
	return route_names[classify(req)];
}

static size_t status_index(int status)
{
	for (size_t i = 0; i < NSTATUS - 1; i++)
		if (statuses[i] == status)
			return i;
	return NSTATUS - 1;
}

void metrics_request(const struct request *req, int status, int64_t micros)
{
	if (page == NULL)
		return;
	enum metrics_route r = classify(req);
	size_t m = req->method < METHOD__MAX ? (size_t)req->method : METHOD_OTHER;
	size_t b = 0;
	while (b < NBUCKET - 1 && micros > bucket_us[b])
		b++;
	atomic_fetch_add_explicit(&page->requests[r][m][status_index(status)], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&page->buckets[r][b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&page->micros[r], micros > 0 ? (uint64_t)micros : 0,
				  memory_order_relaxed);
}

void metrics_db_error(void)
{
	if (page != NULL)
		atomic_fetch_add_explicit(&page->db_errors, 1, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void render_requests(struct buf *out)
{
	buf_puts(out, "# HELP weave_requests_total Requests answered, by route, method and status.\n"
		      "# TYPE weave_requests_total counter\n");
	for (size_t r = 0; r < MR__MAX; r++)
		for (size_t m = 0; m < METHOD__MAX; m++)
			for (size_t s = 0; s < NSTATUS; s++) {
				uint64_t n = get(&page->requests[r][m][s]);
				char status[16];
				if (n == 0)
					continue;
				if (s < NSTATUS - 1)
					snprintf(status, sizeof status, "%d", statuses[s]);
				else
					snprintf(status, sizeof status, "other");
				buf_printf(out, "weave_requests_total{route=\"%s\",method=\"%s\","
					   "status=\"%s\"} %" PRIu64 "\n", route_names[r],
					   method_names[m], status, n);
			}
}

static void render_latency(struct buf *out)
{
	buf_puts(out, "# HELP weave_request_duration_seconds Time from the request's arrival "
		      "in weave.fcgi to its answer.\n"
		      "# TYPE weave_request_duration_seconds histogram\n");
	for (size_t r = 0; r < MR__MAX; r++) {
		uint64_t total = 0;
		for (size_t b = 0; b < NBUCKET; b++)
			total += get(&page->buckets[r][b]);
		if (total == 0)
			continue;
		uint64_t below = 0;
		for (size_t b = 0; b < NBUCKET; b++) {
			below += get(&page->buckets[r][b]);
			if (b < NBUCKET - 1)
				buf_printf(out, "weave_request_duration_seconds_bucket{route=\"%s\","
					   "le=\"%g\"} %" PRIu64 "\n", route_names[r],
					   (double)bucket_us[b] / 1e6, below);
			else
				buf_printf(out, "weave_request_duration_seconds_bucket{route=\"%s\","
					   "le=\"+Inf\"} %" PRIu64 "\n", route_names[r], below);
		}
		buf_printf(out, "weave_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
			   "weave_request_duration_seconds_count{route=\"%s\"} %" PRIu64 "\n",
			   route_names[r], (double)get(&page->micros[r]) / 1e6, route_names[r],
			   below);
	}
}

/* What the account cache file counts (change_board.h), host-wide too. */
static void render_board(struct buf *out)
{
	if (!change_board_ready())
		return;
	buf_printf(out, "# HELP weave_kdf_runs_total Password hashes computed (scrypt and legacy).\n"
		   "# TYPE weave_kdf_runs_total counter\n"
		   "weave_kdf_runs_total %" PRIu64 "\n",
		   change_board_counter(BOARD_VERIFICATIONS));
	buf_printf(out, "# HELP weave_cache_hits_total Answers the host-wide caches gave.\n"
		   "# TYPE weave_cache_hits_total counter\n"
		   "weave_cache_hits_total{cache=\"credentials\"} %" PRIu64 "\n"
		   "weave_cache_hits_total{cache=\"credentials_after_wait\"} %" PRIu64 "\n"
		   "weave_cache_hits_total{cache=\"account_rows\"} %" PRIu64 "\n"
		   "weave_cache_hits_total{cache=\"info_collections\"} %" PRIu64 "\n",
		   change_board_counter(BOARD_CREDENTIAL_HITS),
		   change_board_counter(BOARD_CREDENTIAL_WAITS),
		   change_board_counter(BOARD_ROW_HITS), change_board_counter(BOARD_STAMP_HITS));
	buf_printf(out, "# HELP weave_cache_misses_total Lookups the caches could not answer.\n"
		   "# TYPE weave_cache_misses_total counter\n"
		   "weave_cache_misses_total{cache=\"account_rows\"} %" PRIu64 "\n"
		   "weave_cache_misses_total{cache=\"info_collections\"} %" PRIu64 "\n",
		   change_board_counter(BOARD_ROW_MISSES), change_board_counter(BOARD_STAMP_MISSES));
}

void metrics_render(struct buf *out)
{
	buf_printf(out, "# HELP weave_build_info The running weave.fcgi.\n"
		   "# TYPE weave_build_info gauge\n"
		   "weave_build_info{version=\"%s\"} 1\n", PACKAGE_VERSION);
	if (page == NULL) {
		buf_puts(out, "# the metrics file is not open: see the error log\n");
		return;
	}
	buf_printf(out, "# HELP weave_metrics_start_time_seconds When the counters started.\n"
		   "# TYPE weave_metrics_start_time_seconds gauge\n"
		   "weave_metrics_start_time_seconds %" PRIu64 "\n", page->created);
	render_requests(out);
	render_latency(out);
	buf_printf(out, "# HELP weave_db_errors_total Database failures answered 503.\n"
		   "# TYPE weave_db_errors_total counter\n"
		   "weave_db_errors_total %" PRIu64 "\n", get(&page->db_errors));
	render_board(out);
}
