/* client_address.c - the client's address behind trusted proxies (client_address.h). */
#include "client_address.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* An address in network byte order; IPv4 as 4 bytes. */
struct ip {
	int family; /* AF_INET or AF_INET6 */
	unsigned char b[16];
};

static const unsigned char v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* Parse len bytes of text; IPv4-mapped IPv6 becomes IPv4. */
static bool ip_parse(const char *text, size_t len, struct ip *out)
{
	char buf[CLIENT_ADDRESS_MAX];
	if (len == 0 || len >= sizeof buf)
		return false;
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, out->b) == 1) {
		out->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, buf, out->b) != 1)
		return false;
	out->family = AF_INET6;
	if (memcmp(out->b, v4_mapped, sizeof v4_mapped) == 0) {
		memmove(out->b, out->b + 12, 4);
		out->family = AF_INET;
	}
	return true;
}

/* Do the first bits of a and b agree? */
static bool same_prefix(const struct ip *a, const struct ip *b, unsigned bits)
{
	size_t whole = bits / 8;
	unsigned rest = bits % 8;
	if (a->family != b->family || memcmp(a->b, b->b, whole) != 0)
		return false;
	if (rest == 0)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a->b[whole] & mask) == (b->b[whole] & mask);
}

/* Does the list entry "ADDR" or "ADDR/BITS" (len bytes) cover ip? */
static bool entry_covers(const char *entry, size_t len, const struct ip *ip)
{
	struct ip net;
	const char *slash = memchr(entry, '/', len);
	size_t addr_len = slash ? (size_t)(slash - entry) : len;
	if (!ip_parse(entry, addr_len, &net))
		return false;
	unsigned max = net.family == AF_INET ? 32 : 128, bits = max;
	if (slash != NULL) {
		char num[8];
		size_t nlen = len - addr_len - 1;
		int64_t v;
		if (nlen == 0 || nlen >= sizeof num)
			return false;
		memcpy(num, slash + 1, nlen);
		num[nlen] = '\0';
		if (parse_int64(num, 0, max, &v) < 0)
			return false;
		bits = (unsigned)v;
	}
	return same_prefix(&net, ip, bits);
}

static bool ip_in_list(const char *list, const struct ip *ip)
{
	const char *p = list;
	while (p != NULL && *p != '\0') {
		p += strspn(p, " ,\t");
		size_t word = strcspn(p, " ,\t");
		if (word > 0 && entry_covers(p, word, ip))
			return true;
		p += word;
	}
	return false;
}

bool client_address_in_list(const char *list, const char *address)
{
	struct ip ip;
	if (list == NULL || address == NULL || !ip_parse(address, strlen(address), &ip))
		return false;
	return ip_in_list(list, &ip);
}

static void copy_text(char *out, size_t cap, const char *text, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	memcpy(out, text, len);
	out[len] = '\0';
}

bool client_address_resolve(const char *remote, const char *forwarded,
			    const char *trusted, char *out, size_t cap)
{
	copy_text(out, cap, remote ? remote : "", remote ? strlen(remote) : 0);
	if (remote == NULL || forwarded == NULL || trusted == NULL ||
	    !client_address_in_list(trusted, remote))
		return false;
	/* Walk from the right: "client, proxy1, proxy2". */
	const char *end = forwarded + strlen(forwarded);
	bool used = false;
	while (end > forwarded) {
		const char *start = end;
		while (start > forwarded && start[-1] != ',')
			start--;
		const char *a = start, *b = end;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		struct ip ip;
		if (!ip_parse(a, (size_t)(b - a), &ip))
			break; /* forged or garbled: trust what we have */
		copy_text(out, cap, a, (size_t)(b - a));
		used = true;
		if (!ip_in_list(trusted, &ip))
			break;
		end = start > forwarded ? start - 1 : start;
	}
	return used;
}

int client_address_network(const char *address, char *out, size_t cap)
{
	struct ip ip;
	if (address == NULL || !ip_parse(address, strlen(address), &ip) ||
	    cap < CLIENT_ADDRESS_MAX)
		return -1;
	if (ip.family == AF_INET) {
		inet_ntop(AF_INET, ip.b, out, (socklen_t)cap);
		return 0;
	}
	snprintf(out, cap, "%x:%x:%x:%x::/64", ip.b[0] << 8 | ip.b[1],
		 ip.b[2] << 8 | ip.b[3], ip.b[4] << 8 | ip.b[5], ip.b[6] << 8 | ip.b[7]);
	return 0;
}
