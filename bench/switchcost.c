/*
 * switchcost.c - what handing work from one process to another costs on
 * this machine: N processes in a ring pass a byte through pipes, each
 * touching PAGES pages of its own memory when the byte arrives, as a
 * FastCGI process touches its heap for each request. Prints one line per
 * ring size:
 *     procs=32 pages=64 hop_us=22.8
 * hop_us is wall time per hand-over (a pipe write, a switch, a read).
 *
 * Why: at c = 32 a warm poll is a few such hops (wrk -> Apache ->
 * weave.fcgi -> Apache), and mod_fcgid runs as many FastCGI processes as
 * requests it holds at once, so how much a hop costs, and how that grows
 * with the processes in rotation, bounds how close any FastCGI program
 * gets to the web ceiling (docs/performance.md, "Switches between
 * processes"). A virtual machine can make a hop ten times a bare
 * machine's, so bench/run notes it beside every result.
 *
 * usage: switchcost [PAGES [HOPS [PROCS...]]]   (default 64 4000 2 16 32)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int64_t arg(const char *s, int64_t max)
{
	int64_t v;
	if (parse_int64(s, 1, max, &v) < 0) {
		fprintf(stderr, "switchcost: %s is not a number from 1 to %lld\n", s,
			(long long)max);
		exit(2);
	}
	return v;
}

/* Member i of the ring: wait for the byte, touch the pages, pass it on.
 * It keeps only its own two ends open, so that if a member dies the
 * next one's read ends too, and the ring fails instead of hanging. */
static void member(int i, int procs, int (*pipes)[2], int64_t pages, int64_t rounds)
{
	int next = (i + 1) % procs;
	for (int k = 0; k < procs; k++) {
		if (k != i)
			close(pipes[k][0]);
		if (k != next)
			close(pipes[k][1]);
	}
	size_t size = (size_t)pages * 4096;
	unsigned char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	char token;
	if (mem == MAP_FAILED)
		_exit(1);
	for (int64_t r = 0; r < rounds; r++) {
		if (read(pipes[i][0], &token, 1) != 1)
			_exit(1);
		for (int64_t p = 0; p < pages; p++)
			mem[p * 4096 + (r & 63) * 64]++;
		bool last = i == procs - 1 && r == rounds - 1;
		if (!last && write(pipes[next][1], &token, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/* Wall time per hop of a ring of procs processes, hops hops in all. */
static double ring(int procs, int64_t pages, int64_t hops)
{
	int (*pipes)[2] = calloc((size_t)procs, sizeof *pipes);
	int64_t rounds = hops / procs > 0 ? hops / procs : 1;
	bool ok = pipes != NULL;
	for (int i = 0; ok && i < procs; i++)
		ok = pipe(pipes[i]) == 0;
	if (!ok) {
		perror("switchcost: pipe");
		exit(1);
	}
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("switchcost: fork");
			exit(1);
		}
		if (pid == 0)
			member(i, procs, pipes, pages, rounds);
	}
	/* Timed from the first hand-over: forking is not switching. */
	double started = now_us();
	ok = write(pipes[0][1], "x", 1) == 1;
	for (int i = 0; i < procs; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	int status, failed = 0;
	while (wait(&status) > 0)
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	double per_hop = (now_us() - started) / (double)(procs * rounds);
	free(pipes);
	if (!ok || failed) {
		fprintf(stderr, "switchcost: a ring of %d processes failed\n", procs);
		exit(1);
	}
	return per_hop;
}

int main(int argc, char **argv)
{
	if (argc > 1 && argv[1][0] == '-') {
		fprintf(stderr, "usage: switchcost [PAGES [HOPS [PROCS...]]]  "
				"(default 64 4000 2 16 32)\n");
		return 2;
	}
	int64_t pages = argc > 1 ? arg(argv[1], 4096) : 64;
	int64_t hops = argc > 2 ? arg(argv[2], 10000000) : 4000;
	static const int default_procs[] = { 2, 16, 32 };
	int n = argc > 3 ? argc - 3 : 3;
	for (int k = 0; k < n; k++) {
		int procs = argc > 3 ? (int)arg(argv[3 + k], 1024) : default_procs[k];
		if (procs < 2) {
			fprintf(stderr, "switchcost: a ring needs at least 2 processes\n");
			return 2;
		}
		printf("procs=%d pages=%lld hop_us=%.1f\n", procs, (long long)pages,
		       ring(procs, pages, hops));
		fflush(stdout);
	}
	return 0;
}
