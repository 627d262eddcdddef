/* ceiling.c - the web-tier ceiling: a FastCGI program that answers every
 * request with the same 50-byte JSON body and does nothing else. Mounted
 * under the same Apache and mod_fcgid settings as weave.fcgi by bench/run;
 * no request to weave.fcgi can be served faster than this one. */
#include <stdio.h>
#include <string.h>

#include <fcgiapp.h>

/* 50 bytes, about the size of a small info/collections answer. */
static const char body[] = "{\"history\":1265402837.12,\"bookmarks\":1265402837.1}";

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
