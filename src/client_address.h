/*
 * client_address.h - who the client is: REMOTE_ADDR, or behind a reverse
 * proxy the address the proxy saw, and the network that brute-force
 * counters (throttle.h) count it by. Pure functions, no I/O.
 *
 * X-Forwarded-For is written by whoever sends the request, so it is read
 * only when REMOTE_ADDR is one of the configured trusted proxies, and
 * then from the right: each proxy appends the address it saw, so the
 * rightmost entry that is not itself a trusted proxy is the first one
 * no trusted party can have forged.
 */
#ifndef WEAVE_CLIENT_ADDRESS_H
#define WEAVE_CLIENT_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

/* Big enough for any address text we produce or accept. */
#define CLIENT_ADDRESS_MAX 64

/*
 * Is address (IPv4 or IPv6 text) in list, a space- or comma-separated
 * list of addresses and networks ("10.0.0.0/8", "2001:db8::/32")? An
 * entry or address that is not one is never matched.
 */
bool client_address_in_list(const char *list, const char *address);

/*
 * The client's address into out (cap >= CLIENT_ADDRESS_MAX): remote
 * itself unless it is in trusted; then the rightmost entry of forwarded
 * (X-Forwarded-For, may be NULL) that is not in trusted, or the leftmost
 * when all are. An entry that is not an address ends the walk: the last
 * address walked through is the answer. remote NULL gives "".
 * Returns true when forwarded was used.
 */
bool client_address_resolve(const char *remote, const char *forwarded,
			    const char *trusted, char *out, size_t cap);

/*
 * The network a client is counted by, into out (cap >= CLIENT_ADDRESS_MAX):
 * an IPv4 address as it is (IPv4-mapped IPv6 too), an IPv6 address as its
 * /64 ("2001:db8:1:2::/64"), since one IPv6 host is given a whole /64 and
 * may pick any address in it. -1 when address is not an IP address.
 */
int client_address_network(const char *address, char *out, size_t cap);

#endif
