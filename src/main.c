/* main.c - weave.fcgi: config, then accept → dispatch → send → free, forever. */
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "account_cache.h"
#include "cache_key.h"
#include "change_board.h"
#include "change_log.h"
#include "kdf_gate.h"
#include "config.h"
#include "db.h"
#include "health.h"
#include "last_words.h"
#include "log.h"
#include "metrics.h"
#include "request.h"
#include "response.h"
#include "route.h"
#include "shared_credential.h"
#include "util.h"

extern char **environ;

static struct config cfg;
static char config_error[512];
static bool config_ok;

static long read_fcgi(void *ctx, char *buf, size_t len)
{
	int n = FCGX_GetStr(buf, len > 65536 ? 65536 : (int)len, ctx);
	return n;
}

static int write_fcgi(void *ctx, const char *data, size_t len)
{
	while (len > 0) {
		int chunk = len > 1 << 20 ? 1 << 20 : (int)len;
		if (FCGX_PutStr(data, chunk, ctx) != chunk)
			return -1;
		data += chunk;
		len -= (size_t)chunk;
	}
	return 0;
}

static long read_stdin(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	size_t n = fread(buf, 1, len, stdin);
	return n == 0 ? -1 : (long)n;
}

static int write_stdout(void *ctx, const char *data, size_t len)
{
	(void)ctx;
	return fwrite(data, 1, len, stdout) == len ? 0 : -1;
}

/* One line per answered request: debug when it went well, info for a
 * refusal, warn when the server failed (metrics.h counts them all). */
static void log_answer(int status, int64_t micros)
{
	enum log_level level = status >= 500   ? LOG_LEVEL_WARN
			       : status >= 400 ? LOG_LEVEL_INFO
					       : LOG_LEVEL_DEBUG;
	log_msg(level, "answered %d in %.1f ms", status, (double)micros / 1000.0);
}

static void serve_one(unsigned long id, char **env, request_read_fn reader,
		      void *read_ctx, response_write_fn writer, void *write_ctx)
{
	struct request req;
	struct response resp;
	int64_t started = monotonic_micros();

	request_init(&req, id, env);
	req.cfg = &cfg;
	req.read_body = reader;
	req.read_ctx = read_ctx;
	response_init(&resp);
	log_set_request(id, NULL);
	if (config_ok)
		request_find_client(&req);
	log_set_client(request_client_address(&req), request_env(&req, "REQUEST_METHOD"),
		       request_env(&req, "REQUEST_URI"));
	last_words_request(id, request_env(&req, "REQUEST_METHOD"),
			   request_env(&req, "REQUEST_URI"));

	if (!config_ok) {
		log_error("not serving: %s", config_error);
		resp.retry_after = 600;
		resp_error(&resp, 503, WEAVE_ERR_NONE);
	} else if (!health_serve(&req, &resp)) {
		change_log_catch_up(now_centiseconds());
		route_dispatch(&req, &resp);
	}
	const char *method = request_env(&req, "REQUEST_METHOD");
	last_words_phase("sending the answer");
	if (response_send(&resp, writer, write_ctx,
			  method != NULL && strcmp(method, "HEAD") == 0) < 0)
		log_warn("client went away before the response was written");
	int64_t micros = monotonic_micros() - started;
	metrics_request(&req, resp.status, micros);
	log_answer(resp.status, micros);
	response_free(&resp);
	request_free(&req);
	log_clear_request();
	last_words_idle();
}

/*
 * Account rows are kept only when every process can see every other's
 * writes (change_board.h); without the board each read asks the database.
 * The board is opened even when this server keeps no rows, so that its
 * writes still reach servers on this host that do.
 */
static void open_account_cache(const struct config *c)
{
	char path[4096], err[4200];
	bool keeps = c->account_cache_seconds > 0;
	if (change_board_path(c, path, sizeof path) < 0) {
		snprintf(err, sizeof err, "account_cache_file is too long");
	} else if (change_board_open(path, true, err, sizeof err) == 0) {
		/* Changes made through other hosts: only kept rows need them. */
		if (keeps && change_log_open(path, c->account_cache_seconds, err,
					     sizeof err) < 0)
			log_warn("changes made through other hosts will reach this "
				 "one within account_cache_seconds only: %s", err);
		return;
	}
	if (keeps)
		log_warn("account cache off: %s", err);
	else
		log_debug("account changes not shared: %s", err);
}

/*
 * libfcgi closes a connection lingering: it shuts its side down and waits
 * for the web server to hang up, so that a request body it did not read
 * (a refused upload) cannot make the web server's writes fail. With no
 * body left to send the wait only costs time: it was a fifth of a sync
 * poll's time in this process. FCGX_Detach() skips it.
 */
static bool body_left_unread(FCGX_Request *fr)
{
	const char *length = FCGX_GetParam("CONTENT_LENGTH", fr->envp);
	bool has_body = length != NULL && length[0] != '\0' && strcmp(length, "0") != 0;
	return has_body && !FCGX_HasSeenEOF(fr->in);
}

/* Host-wide counters for the metrics URL, kept even while it is off, so
 * that turning it on shows what happened since the host started. */
static void open_metrics(const struct config *c)
{
	char path[4200] = "", err[4400] = "";
	if (metrics_path(c, path, sizeof path) < 0 ||
	    metrics_open(path, err, sizeof err) < 0)
		log_warn("metrics not counted: %s",
			 path[0] ? err : "account_cache_file is too long");
}

/*
 * A FastCGI process serves request after request, each growing the heap
 * to about the same size: keep it between requests. By default glibc
 * gives the top of the heap back (brk) once 128 KiB or more are free,
 * and maps blocks over 128 KiB on their own (mmap); both are undone at
 * every request's end, and each unmapping flushes the TLB of every CPU
 * the process ran on. On uploads of 100 records that was half of
 * weave.fcgi's CPU time (docs/performance.md, "The heap kept between
 * requests"). Blocks up to 8 MiB (a large download's answer) now come
 * from the heap, which is trimmed only past 32 MiB free.
 */
static void keep_heap(void)
{
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

int main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		puts("weave.fcgi (weave-server) " PACKAGE_VERSION);
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: weave.fcgi [--version]\n"
			"Run by Apache's mod_fcgid (weave.fcgi(8)); reads $WEAVE_CONFIG or\n"
			WEAVE_DEFAULT_CONFIG ".\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	keep_heap();
	config_defaults(&cfg);
	const char *path = config_path_from_env();
	config_ok = config_load(&cfg, path, config_error, sizeof config_error) == 0;
	if (config_ok) {
		log_set_level(cfg.log_level);
		db_configure(&cfg);
		cache_key_init(cfg.cache_secret);
		account_cache_init(cfg.account_cache_seconds, cfg.auth_cache_seconds);
		shared_credential_init(&cfg);
		kdf_gate_init(cfg.max_concurrent_kdf);
		open_account_cache(&cfg);
		open_metrics(&cfg);
		log_info("weave.fcgi %s started with %s", PACKAGE_VERSION, path);
	} else {
		log_error("%s", config_error);
	}
	last_words_install(!config_ok || cfg.log_level >= LOG_LEVEL_INFO);
	last_words_idle();

	if (FCGX_IsCGI()) {
		serve_one(1, environ, read_stdin, NULL, write_stdout, NULL);
		fflush(stdout);
	} else {
		FCGX_Request fr;
		unsigned long served = 0;
		FCGX_Init();
		FCGX_InitRequest(&fr, 0, 0);
		while (FCGX_Accept_r(&fr) >= 0) {
			serve_one(++served, fr.envp, read_fcgi, fr.in, write_fcgi,
				  fr.out);
			if (!body_left_unread(&fr))
				FCGX_Detach(&fr); /* close without lingering */
			FCGX_Finish_r(&fr);
		}
		log_info("weave.fcgi exits after %lu requests (the FastCGI socket "
			 "closed)", served);
	}
	db_disconnect();
	config_free(&cfg);
	return 0;
}
