/*
 * kdfcost.c - what one password verification costs at each password_cost
 * on this machine: scrypt through password.c, as weave.fcgi runs it (the
 * parameters come from the hash it makes). Prints one line per cost:
 *     cost=17 ms=150.1 mib=16 params=ln=14,r=8,p=8
 * usage: kdfcost [FIRST [LAST [ROUNDS]]]   (default 12 17 5)
 */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "password.h"
#include "util.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int arg(int argc, char **argv, int i, int fallback)
{
	int64_t v = fallback;
	if (argc > i && parse_int64(argv[i], 1, 100, &v) < 0) {
		fprintf(stderr, "kdfcost: %s is not a number from 1 to 100\n", argv[i]);
		exit(2);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	int first = arg(argc, argv, 1, 12), last = arg(argc, argv, 2, 17);
	int rounds = arg(argc, argv, 3, 5);
	static const char pw[] = "correct horse battery staple";
	for (int cost = first; cost <= last && cost <= 20; cost++) {
		char hash[PASSWORD_HASH_MAX];
		if (password_hash(pw, sizeof pw - 1, cost, hash, sizeof hash) != 0)
			return 1;
		double best = 1e12;
		for (int r = 0; r < rounds; r++) {
			double t0 = now_ms();
			if (password_verify(pw, sizeof pw - 1, hash, cost) != PASSWORD_OK)
				return 1;
			double t = now_ms() - t0;
			best = t < best ? t : best;
		}
		/* scrypt's memory: 128 * r * N bytes; N is in "ln=" of the hash. */
		const char *params = hash + 8; /* after "$scrypt$" */
		int params_len = (int)(strchr(params, '$') - params);
		int64_t log2_n = 0;
		char ln[3] = { params[3], params[4], '\0' };
		parse_int64(ln, 1, 30, &log2_n);
		printf("cost=%d ms=%.1f mib=%d params=%.*s\n", cost, best,
		       (int)((128 * 8 << log2_n) >> 20), params_len, params);
	}
	return 0;
}
