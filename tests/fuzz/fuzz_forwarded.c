/*
 * fuzz_forwarded.c - X-Forwarded-For and the address lists of weave.conf
 * (src/client_address.c): the client found behind trusted proxies is
 * always an address (one of the header's entries, or REMOTE_ADDR), never
 * a trusted proxy unless every entry is one, and its counting network
 * is an address or an IPv6 /64.
 */
#include "fuzz.h"

#include <arpa/inet.h>

#include "client_address.h"

static bool is_address(const char *s)
{
	unsigned char b[16];
	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* First line: the trusted list; the rest: the header. */
	char *s = fuzz_string(data, size);
	char *nl = strchr(s, '\n');
	const char *trusted = nl ? s : "127.0.0.1 10.0.0.0/8 ::1";
	const char *forwarded = nl ? nl + 1 : s;
	if (nl)
		*nl = '\0';
	char out[CLIENT_ADDRESS_MAX], net[CLIENT_ADDRESS_MAX];

	bool used = client_address_resolve("127.0.0.1", forwarded, trusted, out, sizeof out);
	FUZZ_ASSERT(strlen(out) < sizeof out);
	if (used) {
		FUZZ_ASSERT(is_address(out));
		FUZZ_ASSERT(strstr(forwarded, out) != NULL);
	} else {
		FUZZ_ASSERT(strcmp(out, "127.0.0.1") == 0);
	}
	FUZZ_ASSERT(client_address_network(out, net, sizeof net) == 0);
	FUZZ_ASSERT(strlen(net) < sizeof net);
	/* An untrusted sender's header is never read. */
	FUZZ_ASSERT(!client_address_resolve("192.0.2.1", forwarded, "", out, sizeof out));
	FUZZ_ASSERT(strcmp(out, "192.0.2.1") == 0);
	if (client_address_network(forwarded, net, sizeof net) == 0)
		FUZZ_ASSERT(is_address(forwarded));
	(void)client_address_in_list(trusted, forwarded);
	free(s);
	return 0;
}
