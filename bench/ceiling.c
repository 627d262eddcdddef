/* ceiling.c - the web-tier ceiling: a FastCGI program that answers every
 * request with the same 50-byte JSON body and does nothing else. Mounted
 * under the same Apache and mod_fcgid settings as weave.fcgi by bench/run;
 * no request to weave.fcgi can be served faster than this one.
 *
 * One exception: a query string "hold_ms=N" (N up to 5000) makes it wait
 * N ms before answering. bench/run sends such requests, c at a time,
 * before measuring the ceiling at concurrency c, so that mod_fcgid has
 * started c processes of it, as it has of weave.fcgi: with fewer, a
 * request that finds them all busy sleeps a second inside mod_fcgid, and
 * the connections asleep there lighten the load the others meet
 * (docs/performance.md, "The web ceiling at c = 32"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcgiapp.h>

/* 50 bytes, about the size of a small info/collections answer. */
static const char body[] = "{\"history\":1265402837.12,\"bookmarks\":1265402837.1}";

/* Wait as "hold_ms=N" asks (N from 1 to 5000); any other query: no wait. */
static void hold(const char *query)
{
	static const char key[] = "hold_ms=";
	if (query == NULL || strncmp(query, key, sizeof key - 1) != 0)
		return;
	char *end;
	long ms = strtol(query + sizeof key - 1, &end, 10);
	if (*end != '\0' || ms < 1 || ms > 5000)
		return;
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&pause, NULL);
}

int main(void)
{
	FCGX_Request fr;
	char head[160];
	int hlen;

	_Static_assert(sizeof body - 1 == 50, "the ceiling body is 50 bytes");
	hlen = snprintf(head, sizeof head,
			"Status: 200 OK\r\n"
			"Content-Type: application/json\r\n"
			"Content-Length: %zu\r\n\r\n",
			sizeof body - 1);
	FCGX_Init();
	FCGX_InitRequest(&fr, 0, 0);
	while (FCGX_Accept_r(&fr) >= 0) {
		hold(FCGX_GetParam("QUERY_STRING", fr.envp));
		FCGX_PutStr(head, hlen, fr.out);
		FCGX_PutStr(body, (int)(sizeof body - 1), fr.out);
		/* Closed as weave.fcgi closes (main.c, body_left_unread()):
		 * lingering only when a request body is left unread. */
		const char *length = FCGX_GetParam("CONTENT_LENGTH", fr.envp);
		if (length == NULL || length[0] == '\0' || strcmp(length, "0") == 0)
			FCGX_Detach(&fr);
		FCGX_Finish_r(&fr);
	}
	return 0;
}
