/*
 * db_hosts.h - the list of database servers a process may use.
 *
 * db_host in weave.conf names one server or several, tried in order:
 * "db1.example, db2.example:3307, [fd00::5]:3306". A host without a port
 * gets db_port. Several hosts are for a replicated database (a Galera
 * cluster, say) where every node accepts writes: the process stays on the
 * server it reached until its connection is lost, then tries the others
 * (db.c), skipping for a few seconds a node that just failed
 * (db_hosts_order()).
 */
#ifndef WEAVE_DB_HOSTS_H
#define WEAVE_DB_HOSTS_H

#include <stddef.h>
#include <stdint.h>

#define DB_HOSTS_MAX 8
#define DB_HOST_NAME_MAX 255

struct db_host {
	char name[DB_HOST_NAME_MAX + 1];
	unsigned int port;
};

struct db_hosts {
	struct db_host host[DB_HOSTS_MAX];
	size_t count;
};

/*
 * Parse text into *out, giving hosts without a port default_port.
 * 0 on success; -1 with a reason in *why (a static string) for an empty
 * list or entry, more than DB_HOSTS_MAX hosts, a name too long or with
 * blanks, or a port that is not 1..65535.
 */
int db_hosts_parse(const char *text, int64_t default_port,
		   struct db_hosts *out, const char **why);

/*
 * The order in which to try count hosts at time now: first every host
 * whose avoid_until[i] is not after now, in the configured order; then
 * the avoided ones, the one whose hold ends first leading (db.c tries
 * the healthy ones and the first avoided one). Writes
 * count host indexes to order (room for count). count <= DB_HOSTS_MAX.
 */
void db_hosts_order(size_t count, const int64_t *avoid_until, int64_t now,
		    size_t *order);

#endif
