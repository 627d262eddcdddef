/* dbceiling.c - the data-tier ceiling: runs the SQL statements weave.fcgi
 * runs for one benchmark workload, in the same transaction shape, through
 * MariaDB Connector/C with prepared statements, in a tight loop and
 * without HTTP. bench/run reports the server's records/s as a fraction of
 * what this program reaches in the same run.
 *
 * usage: dbceiling CONFIG MODE SECONDS PROCS ARGS...
 *   poll     SECONDS PROCS PREFIX NUSERS      GET info/collections
 *   download SECONDS PROCS USER NEWER         GET storage/history?newer=...
 *   post     SECONDS PROCS PREFIX NUSERS MAX  POST 100-record batches
 * CONFIG is the weave.conf the server reads (db_* keys). PROCS processes
 * run at once, one connection each. Prints one line:
 *   ops=N records=N secs=S p50_us=N p99_us=N
 *
 * The statement texts come from src/sql_statements.h, the definitions
 * src/db_user.c, src/db_storage.c and src/db_history.c use (the
 * transaction shape follows src/route.c). post runs what a
 * server with record history on (history_days > 0, the default) runs. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mysql.h>

#include "sql_statements.h"

#define BATCH 100
#define MAX_LAT 2000000

/* ---- the statements (src/sql_statements.h) ------------------------- */

/* The login's read of the user row and its four throttle rows
 * (db_user.c). Parameters: kind 1, name, now, kind 2, address, now,
 * kind 5, "name address", now, kind 6, "name address", now, name. */
static const char *const sql_user_shared = SQL_USER_LOGIN SQL_SHARE_LOCK;
static const char *const sql_user_exclusive = SQL_USER_LOGIN SQL_EXCLUSIVE_LOCK;
/* GET storage/history?newer=...&full=1&sort=index&limit=1500 (db_storage.c). */
static const char *const sql_download =
	SQL_WBO_SELECT_FULL SQL_WBO_WHERE SQL_NEWER SQL_ORDER_BY_INDEX SQL_LIMIT;
static const char *const sql_last_write = SQL_USER_SET_LAST_WRITE;
/* db_history.c: the rows a write replaces are kept first (none for new
 * records), then the write is logged. */
static const char *const sql_write_log = SQL_WRITE_LOG_INSERT;

struct db {
	const char *host, *user, *password, *name, *socket;
	unsigned port;
};

static MYSQL *conn;

static void die(const char *what)
{
	fprintf(stderr, "dbceiling: %s: %s\n", what, conn ? mysql_error(conn) : "");
	exit(1);
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' ||
			 s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Reads the db_* keys of a weave.conf ("key = value" lines). */
static void read_config(const char *path, struct db *d)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	if (f == NULL) {
		perror(path);
		exit(1);
	}
	memset(d, 0, sizeof *d);
	d->host = "127.0.0.1";
	d->port = 3306;
	while (fgets(line, sizeof line, f) != NULL) {
		char *eq = strchr(line, '=');
		if (line[0] == '#' || eq == NULL)
			continue;
		*eq = '\0';
		char *key = trim(line), *value = strdup(trim(eq + 1));
		if (strcmp(key, "db_host") == 0)
			d->host = value;
		else if (strcmp(key, "db_port") == 0)
			d->port = (unsigned)strtoul(value, NULL, 10);
		else if (strcmp(key, "db_user") == 0)
			d->user = value;
		else if (strcmp(key, "db_password") == 0)
			d->password = value;
		else if (strcmp(key, "db_name") == 0)
			d->name = value;
		else if (strcmp(key, "db_socket") == 0)
			d->socket = value;
		else
			free(value);
	}
	fclose(f);
}

/* The same connection options as src/db.c. */
static void connect_db(const struct db *d)
{
	conn = mysql_init(NULL);
	mysql_options(conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(conn, MYSQL_INIT_COMMAND,
		      "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	mysql_options(conn, MYSQL_INIT_COMMAND,
		      "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,"
		      "NO_ENGINE_SUBSTITUTION,ERROR_FOR_DIVISION_BY_ZERO'");
	if (mysql_real_connect(conn, d->socket ? NULL : d->host, d->user,
			       d->password, d->name, d->port, d->socket,
			       CLIENT_FOUND_ROWS) == NULL)
		die("connect");
}

static void exec_text(const char *sql)
{
	if (mysql_real_query(conn, sql, strlen(sql)) != 0)
		die(sql);
}

static MYSQL_STMT *prepare(const char *sql)
{
	MYSQL_STMT *st = mysql_stmt_init(conn);
	if (st == NULL || mysql_stmt_prepare(st, sql, strlen(sql)) != 0) {
		fprintf(stderr, "dbceiling: prepare %.80s: %s\n", sql,
			st ? mysql_stmt_error(st) : "");
		exit(1);
	}
	return st;
}

static void bind_int(MYSQL_BIND *b, int64_t *v)
{
	memset(b, 0, sizeof *b);
	b->buffer_type = MYSQL_TYPE_LONGLONG;
	b->buffer = v;
}

static void bind_str(MYSQL_BIND *b, const char *s, unsigned long *len)
{
	memset(b, 0, sizeof *b);
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)s;
	b->buffer_length = *len;
	b->length = len;
}

/* Runs a bound statement and reads every row into scratch buffers, as
 * src/db.c does (integers as LONGLONG, the rest as strings). Returns the
 * number of rows; *first gets the first column of the first row. */
static long run(MYSQL_STMT *st, MYSQL_BIND *params, int64_t *first)
{
	static char bufs[16][65536];
	static unsigned long lens[16];
	static int64_t ints[16];
	static my_bool nulls[16];
	MYSQL_BIND out[16];
	long rows = 0;

	if ((params && mysql_stmt_bind_param(st, params) != 0) ||
	    mysql_stmt_execute(st) != 0) {
		fprintf(stderr, "dbceiling: execute: %s\n", mysql_stmt_error(st));
		exit(1);
	}
	MYSQL_RES *meta = mysql_stmt_result_metadata(st);
	if (meta == NULL)
		return (long)mysql_stmt_affected_rows(st);
	unsigned n = mysql_num_fields(meta);
	MYSQL_FIELD *f = mysql_fetch_fields(meta);
	memset(out, 0, sizeof out);
	for (unsigned c = 0; c < n && c < 16; c++) {
		bool integer = f[c].type == MYSQL_TYPE_LONG ||
			       f[c].type == MYSQL_TYPE_LONGLONG ||
			       f[c].type == MYSQL_TYPE_TINY;
		out[c].buffer_type = integer ? MYSQL_TYPE_LONGLONG : MYSQL_TYPE_STRING;
		out[c].buffer = integer ? (void *)&ints[c] : (void *)bufs[c];
		out[c].buffer_length = integer ? 0 : sizeof bufs[c];
		out[c].length = &lens[c];
		out[c].is_null = &nulls[c];
	}
	mysql_stmt_bind_result(st, out);
	while (mysql_stmt_fetch(st) == 0) {
		if (rows == 0 && first != NULL)
			*first = ints[0];
		rows++;
	}
	mysql_free_result(meta);
	mysql_stmt_free_result(st);
	return rows;
}

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_cs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 100 + ts.tv_nsec / 10000000;
}

/* ---- one request of each workload ------------------------------------ */

/* Loads the user row with the given lock; returns its id. */
static int64_t load_user(MYSQL_STMT *st, const char *name, int64_t *last_write)
{
	MYSQL_BIND p[13];
	char pair[64];
	snprintf(pair, sizeof pair, "%s 127.0.0.1", name);
	unsigned long len = strlen(name), address_len = 0, pair_len = strlen(pair);
	int64_t kinds[4] = { 1, 2, 5, 6 }, now = now_cs() / 100;
	int64_t id = -1;
	memset(p, 0, sizeof p);
	bind_int(&p[0], &kinds[0]);
	bind_str(&p[1], name, &len);
	bind_int(&p[2], &now);
	bind_int(&p[3], &kinds[1]);
	bind_str(&p[4], "", &address_len); /* the exempt loopback address */
	bind_int(&p[5], &now);
	bind_int(&p[6], &kinds[2]);
	bind_str(&p[7], pair, &pair_len);
	bind_int(&p[8], &now);
	bind_int(&p[9], &kinds[3]);
	bind_str(&p[10], pair, &pair_len);
	bind_int(&p[11], &now);
	bind_str(&p[12], name, &len);
	if (run(st, p, &id) != 1 || id < 0) {
		fprintf(stderr, "dbceiling: no user %s\n", name);
		exit(1);
	}
	(void)last_write;
	return id;
}

/*
 * A poll in the server's steady state: the user row only. Each process
 * keeps the info/collections answer until the user writes (stamp_cache.h),
 * and the poll workload never writes, so the stamps query is not run.
 */
static long do_poll(MYSQL_STMT *user, const char *name)
{
	load_user(user, name, NULL);
	return 0;
}

static long do_download(MYSQL_STMT *user, MYSQL_STMT *sel, const char *name,
			int64_t newer)
{
	int64_t id = load_user(user, name, NULL), now = now_cs();
	int64_t limit = 1500, offset = 0;
	unsigned long clen = 7;
	MYSQL_BIND p[6];
	bind_int(&p[0], &id);
	bind_str(&p[1], "history", &clen);
	bind_int(&p[2], &now);
	bind_int(&p[3], &newer);
	bind_int(&p[4], &limit);
	bind_int(&p[5], &offset);
	return run(sel, p, NULL);
}

/* Statements of a 100-record POST, in src/db_storage.c's chunks (64, 32, 4). */
struct post_stmts {
	MYSQL_STMT *user, *last_write, *keep, *log;
	MYSQL_STMT *ins[3];
};

/* src/db_storage.c prepare_upload() with history on: one statement keeps
 * the rows the upload replaces and finds expired ones (none here, so the
 * DELETE of expired rows does not run), the 100 ids padded to 128. */
#define KEEP_IDS 128
static char *keep_sql(void)
{
	size_t cap = 1024 + KEEP_IDS * 2;
	char *s = malloc(cap);
	size_t o = (size_t)snprintf(s, cap, "%s", SQL_HISTORY_KEEP SQL_KEEP_BY_IDS);
	for (size_t i = 0; i < KEEP_IDS; i++)
		o += (size_t)snprintf(s + o, cap - o, i ? ",?" : "?");
	snprintf(s + o, cap - o, SQL_IDS_CLOSE SQL_HISTORY_KEEP_RETURNING);
	return s;
}

/* db_storage_put(): one upsert per chunk of at most 64 records. */
static const size_t chunks[3] = { 64, 32, 4 };

static char *insert_sql(size_t n)
{
	size_t cap = 512 + n * 20;
	char *s = malloc(cap);
	size_t o = (size_t)snprintf(s, cap, "%s", SQL_WBO_INSERT SQL_COLUMN_SORTINDEX
				    SQL_COLUMN_PAYLOAD SQL_WBO_VALUES);
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(s + o, cap - o, i ? ",(?,?,?,?,?,?,?)"
							: "(?,?,?,?,?,?,?)");
	snprintf(s + o, cap - o, SQL_WBO_UPSERT SQL_UPDATE_MODIFIED
		 SQL_UPDATE_SORTINDEX SQL_UPDATE_PAYLOAD);
	return s;
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

static void do_post(struct post_stmts *s, const char *name, unsigned batch)
{
	static char ids[BATCH][16], payloads[BATCH][700];
	static unsigned long id_lens[BATCH], pay_lens[BATCH], coll_len = 7;
	static int64_t sortindex[BATCH], sizes[BATCH];
	int64_t stamp, uid, last_write = 0, now = now_cs();
	MYSQL_BIND p[7 * 64];

	for (unsigned i = 0; i < BATCH; i++) {
		snprintf(ids[i], sizeof ids[i], "d%05u%04u", batch, i);
		id_lens[i] = strlen(ids[i]);
		make_payload(payloads[i], sizeof payloads[i], batch * BATCH + i);
		pay_lens[i] = strlen(payloads[i]);
		sizes[i] = (int64_t)pay_lens[i];
		sortindex[i] = (int64_t)(i * 37 % 1000);
	}
	exec_text("START TRANSACTION");
	uid = load_user(s->user, name, &last_write);
	stamp = (now > last_write ? now : last_write) + 1; /* route.c */
	{ /* prepare_upload() */
		MYSQL_BIND k[KEEP_IDS + 3];
		bind_int(&k[0], &stamp);
		bind_int(&k[1], &uid);
		bind_str(&k[2], "history", &coll_len);
		for (size_t i = 0; i < KEEP_IDS; i++) {
			size_t r = i < BATCH ? i : BATCH - 1;
			bind_str(&k[3 + i], ids[r], &id_lens[r]);
		}
		run(s->keep, k, NULL);
	}
	size_t at = 0;
	for (int c = 0; c < 3; c++) { /* one INSERT per chunk */
		for (size_t i = 0; i < chunks[c]; i++) {
			size_t k = at + i;
			MYSQL_BIND *b = &p[i * 7];
			bind_int(&b[0], &uid);
			bind_str(&b[1], "history", &coll_len);
			bind_str(&b[2], ids[k], &id_lens[k]);
			bind_int(&b[3], &stamp);
			bind_int(&b[4], &sortindex[k]);
			bind_str(&b[5], payloads[k], &pay_lens[k]);
			bind_int(&b[6], &sizes[k]);
		}
		run(s->ins[c], p, NULL);
		at += chunks[c];
	}
	{ /* db_history_finish(): new records, so nothing kept to count */
		static unsigned long agent_len = 5;
		int64_t written = BATCH, zero = 0;
		MYSQL_BIND l[9];
		bind_int(&l[0], &uid);
		bind_int(&l[1], &stamp);
		bind_str(&l[2], "history", &coll_len);
		bind_int(&l[3], &last_write);
		bind_int(&l[4], &written);
		bind_int(&l[5], &zero);
		bind_int(&l[6], &zero);
		bind_str(&l[7], "bench", &agent_len);
		bind_int(&l[8], &zero);
		run(s->log, l, NULL);
	}
	bind_int(&p[0], &stamp);
	bind_int(&p[1], &uid);
	run(s->last_write, p, NULL);
	exec_text("COMMIT");
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

/* One process: runs until the time is up (or, for post, every user it
 * owns is full); writes ops, records, then each latency to fd. */
static void worker(const struct db *d, const struct job *j, int fd)
{
	int64_t *lat = malloc(MAX_LAT * sizeof *lat);
	int64_t ops = 0, records = 0, end;
	char name[64];
	MYSQL_STMT *a = NULL, *b = NULL;
	struct post_stmts ps;

	connect_db(d);
	if (strcmp(j->mode, "post") == 0) {
		ps.user = prepare(sql_user_exclusive);
		ps.last_write = prepare(sql_last_write);
		char *ks = keep_sql();
		ps.keep = prepare(ks);
		free(ks);
		ps.log = prepare(sql_write_log);
		for (int c = 0; c < 3; c++) {
			char *is = insert_sql(chunks[c]);
			ps.ins[c] = prepare(is);
			free(is);
		}
	} else {
		a = prepare(sql_user_shared);
		if (strcmp(j->mode, "download") == 0)
			b = prepare(sql_download);
	}
	end = now_us() + (int64_t)(j->seconds * 1e6);
	long batches_per_user = j->max_records / BATCH;
	long mine = 0; /* users owned by this process (post) */
	for (long u = j->index; u < j->nusers; u += j->procs)
		mine++;
	for (long i = 0; now_us() < end && ops < MAX_LAT; i++) {
		int64_t t0 = now_us();
		if (strcmp(j->mode, "poll") == 0) {
			long u = (i * j->procs + j->index) % j->nusers;
			snprintf(name, sizeof name, "%s%ld", j->prefix_or_user, u);
			do_poll(a, name);
		} else if (strcmp(j->mode, "download") == 0) {
			records += do_download(a, b, j->prefix_or_user, j->newer);
		} else {
			if (mine == 0 || i >= mine * batches_per_user)
				break;
			long u = j->index + (i % mine) * j->procs;
			snprintf(name, sizeof name, "%s%ld", j->prefix_or_user, u);
			do_post(&ps, name, (unsigned)(i / mine));
			records += BATCH;
		}
		lat[ops++] = now_us() - t0;
	}
	if (write(fd, &ops, sizeof ops) != sizeof ops ||
	    write(fd, &records, sizeof records) != sizeof records)
		exit(1);
	size_t bytes = (size_t)ops * sizeof *lat;
	for (size_t done = 0; done < bytes;) {
		ssize_t n = write(fd, (char *)lat + done, bytes - done);
		if (n <= 0)
			exit(1);
		done += (size_t)n;
	}
	mysql_close(conn);
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

int main(int argc, char **argv)
{
	struct db d;
	struct job j;
	memset(&j, 0, sizeof j);
	if (argc < 7) {
		fprintf(stderr, "usage: dbceiling CONFIG poll|download|post SECONDS PROCS ARGS...\n"
				"  poll SECONDS PROCS PREFIX NUSERS\n"
				"  download SECONDS PROCS USER NEWER\n"
				"  post SECONDS PROCS PREFIX NUSERS MAX_RECORDS\n");
		return 2;
	}
	read_config(argv[1], &d);
	j.mode = argv[2];
	j.seconds = strtod(argv[3], NULL);
	j.procs = (int)strtol(argv[4], NULL, 10);
	j.prefix_or_user = argv[5];
	if (strcmp(j.mode, "download") == 0) {
		j.newer = strtoll(argv[6], NULL, 10);
	} else {
		j.nusers = strtol(argv[6], NULL, 10);
		if (strcmp(j.mode, "post") == 0)
			j.max_records = argc > 7 ? strtol(argv[7], NULL, 10) : 5000;
	}
	if (j.procs < 1 || (strcmp(j.mode, "download") != 0 && j.nusers < 1)) {
		fprintf(stderr, "dbceiling: bad arguments\n");
		return 2;
	}

	int fds[64];
	pid_t pids[64];
	int64_t t0 = now_us();
	for (int k = 0; k < j.procs && k < 64; k++) {
		int pfd[2];
		if (pipe(pfd) != 0)
			return 1;
		j.index = k;
		pids[k] = fork();
		if (pids[k] == 0) {
			close(pfd[0]);
			worker(&d, &j, pfd[1]);
		}
		close(pfd[1]);
		fds[k] = pfd[0];
	}
	int64_t ops = 0, records = 0, n = 0;
	int64_t *all = NULL;
	for (int k = 0; k < j.procs && k < 64; k++) {
		int64_t o, r;
		read_all(fds[k], &o, sizeof o);
		read_all(fds[k], &r, sizeof r);
		all = realloc(all, (size_t)(n + o + 1) * sizeof *all);
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
		return 0;
	}
	qsort(all, (size_t)n, sizeof *all, cmp64);
	printf("ops=%" PRId64 " records=%" PRId64 " secs=%.3f p50_us=%" PRId64
	       " p99_us=%" PRId64 "\n",
	       ops, records, secs, all[(n - 1) / 2], all[(n * 99 - 1) / 100]);
	free(all);
	return 0;
}
