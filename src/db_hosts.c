/* db_hosts.c - the db_host list: parse it, and the order to try its nodes in (db_hosts.h). */
#include "db_hosts.h"

#include <ctype.h>
#include <string.h>

static const char *trim(const char *s, const char *end, const char **out_end)
{
	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*out_end = end;
	return s;
}

static int parse_port(const char *s, const char *end, unsigned int *port)
{
	if (s == end || end - s > 5)
		return -1;
	unsigned long v = 0;
	for (const char *p = s; p < end; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = (unsigned int)v;
	return 0;
}

/* One "host", "host:port", "[v6]" or "[v6]:port" entry. */
static int parse_entry(const char *s, const char *end, int64_t default_port,
		       struct db_host *h, const char **why)
{
	const char *name = s, *name_end = end, *colon = NULL;
	if (*s == '[') {
		const char *close = memchr(s, ']', (size_t)(end - s));
		if (close == NULL) {
			*why = "an IPv6 address in [ ] has no closing ]";
			return -1;
		}
		name = s + 1;
		name_end = close;
		if (close + 1 < end) {
			if (close[1] != ':') {
				*why = "only :PORT may follow [ADDRESS]";
				return -1;
			}
			colon = close + 1;
		}
	} else {
		colon = memchr(s, ':', (size_t)(end - s));
		if (colon != NULL) {
			if (memchr(colon + 1, ':', (size_t)(end - colon - 1))) {
				*why = "write an IPv6 address in [ ], as [::1]:3306";
				return -1;
			}
			name_end = colon;
		}
	}
	if (name == name_end) {
		*why = "a host name is empty";
		return -1;
	}
	if (name_end - name > DB_HOST_NAME_MAX) {
		*why = "a host name is longer than 255 characters";
		return -1;
	}
	for (const char *p = name; p < name_end; p++) {
		if (isspace((unsigned char)*p) || *p == ',') {
			*why = "a host name contains a blank";
			return -1;
		}
	}
	if (colon != NULL) {
		if (parse_port(colon + 1, end, &h->port) < 0) {
			*why = "a port is not a number from 1 to 65535";
			return -1;
		}
	} else {
		h->port = (unsigned int)default_port;
	}
	memcpy(h->name, name, (size_t)(name_end - name));
	h->name[name_end - name] = '\0';
	return 0;
}

int db_hosts_parse(const char *text, int64_t default_port,
		   struct db_hosts *out, const char **why)
{
	memset(out, 0, sizeof *out);
	if (text == NULL)
		text = "";
	const char *p = text, *stop = text + strlen(text);
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(stop - p));
		const char *raw_end = comma ? comma : stop, *end;
		const char *s = trim(p, raw_end, &end);
		if (s == end) {
			*why = "the list of database hosts has an empty entry";
			return -1;
		}
		if (out->count == DB_HOSTS_MAX) {
			*why = "more than 8 database hosts";
			return -1;
		}
		if (parse_entry(s, end, default_port, &out->host[out->count], why) < 0)
			return -1;
		out->count++;
		if (comma == NULL)
			return 0;
		p = comma + 1;
	}
}

void db_hosts_order(size_t count, const int64_t *avoid_until, int64_t now,
		    size_t *order)
{
	size_t n = 0;
	for (size_t i = 0; i < count; i++)
		if (avoid_until[i] <= now)
			order[n++] = i;
	size_t healthy = n;
	for (size_t i = 0; i < count; i++)
		if (avoid_until[i] > now)
			order[n++] = i;
	/* Insertion sort of the few avoided ones by the end of their hold;
	 * stable, so equal holds keep the configured order. */
	for (size_t i = healthy + 1; i < n; i++) {
		size_t v = order[i], j = i;
		while (j > healthy && avoid_until[order[j - 1]] > avoid_until[v]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = v;
	}
}
