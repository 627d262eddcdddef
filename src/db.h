/*
 * db.h - the MariaDB connections of this process (one per place: the
 * account database and each storage node): connect and reconnect,
 * transactions, and prepared statements with bound parameters only.
 *
 * SQL text comes only from the statement tables and fixed fragments in
 * db_*.c; client data reaches the server only as bound parameters.
 * Prepared statements are cached per connection by their text and
 * dropped when the connection is lost.
 *
 * Every call returns an enum db_status; the storage layer maps it to its
 * own callers and never exposes MariaDB error numbers.
 */
#ifndef WEAVE_DB_H
#define WEAVE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct config;

enum db_status {
	DB_OK,
	DB_NOT_FOUND,   /* a lookup found no row */
	DB_CONFLICT,    /* duplicate key */
	DB_RETRY,       /* deadlock or lock wait timeout: run the transaction again */
	DB_UNAVAILABLE, /* cannot reach the server; the connection was dropped */
	DB_ERROR,       /* anything else (logged) */
	DB__MAX
};

enum db_param_type { DB_PARAM_NULL, DB_PARAM_INT, DB_PARAM_STR };

struct db_param {
	enum db_param_type type;
	int64_t i;
	const char *s;
	size_t len;
};

#define DB_INT(v) ((struct db_param){ .type = DB_PARAM_INT, .i = (int64_t)(v) })
#define DB_STR(p, n) ((struct db_param){ .type = DB_PARAM_STR, .s = (p), .len = (n) })
#define DB_CSTR(p) ((struct db_param){ .type = DB_PARAM_STR, .s = (p), .len = strlen(p) })
#define DB_NULL ((struct db_param){ .type = DB_PARAM_NULL })

/* One column of a fetched row. s is valid only during the row callback. */
struct db_value {
	bool is_null;
	int64_t i;     /* integer columns */
	const char *s; /* other columns: bytes, NUL-terminated */
	size_t len;
};

/* Return 0 to go on, non-zero to stop fetching (the status stays DB_OK). */
typedef int (*db_row_fn)(void *ctx, const struct db_value *row, size_t ncols);

/* Remember the settings; connects lazily. */
void db_configure(const struct config *cfg);

/*
 * Places: the databases of this process, each with its own connection,
 * transaction and statements. Place DB_ACCOUNTS is the account database
 * (db_host, db_name...), which by default holds every account's records
 * too; places 1.. are the storage nodes of weave.conf (config.h,
 * config_node_place(); docs/shards.md). Every other call of this file
 * works on the current place, DB_ACCOUNTS until db_use() says otherwise.
 */
#define DB_ACCOUNTS 0
#define DB_PLACES_MAX 17 /* 1 + CONFIG_MAX_NODES */
size_t db_places(void);
/* Make place current; returns the place that was. */
size_t db_use(size_t place);
size_t db_current(void);
/* "the account database" or the node's name in weave.conf, for messages. */
const char *db_place_name(size_t place);
/*
 * No db_read_timeout / db_write_timeout for this process: weave-admin's
 * statements (a migration, a purge) may rightly run for minutes. Call
 * before the first connection.
 */
void db_allow_long_statements(void);
/*
 * How long, in seconds, this process has found no usable database server
 * (since the first failure with no statement answered after it), or -1
 * while the database answers. For the Retry-After of a 503.
 */
int64_t db_outage_seconds(void);
/*
 * Connect if not connected. DB_OK or DB_UNAVAILABLE. With several
 * db_host nodes (db_hosts.h) a node is used only when it is ready: a
 * Galera node must say wsrep_ready ON and Synced (not Joining, Donor,
 * Desynced). A node that refused, timed out, was not ready or lost the
 * connection is tried last for DB_NODE_AVOID_SECONDS by this process,
 * and of such nodes only the first to be free again is tried.
 */
#define DB_NODE_AVOID_SECONDS 5
enum db_status db_connect(void);
/* Close every place's connection. */
void db_disconnect(void);

enum db_status db_begin(void);
/*
 * A read-only REPEATABLE READ transaction whose snapshot is taken now:
 * every later read in it sees the database as of this moment, whatever
 * commits meanwhile (weave-admin backup). End it with db_commit().
 */
enum db_status db_begin_snapshot(void);
enum db_status db_commit(void);
/* Roll back the open transaction of every place (the current one stays). */
void db_rollback(void);
/* Roll back the current place's transaction only. */
void db_rollback_current(void);
bool db_in_transaction(void);

/*
 * Prepare (or reuse) sql, bind params, execute, and call row_fn for each
 * row when the statement returns rows. *affected gets the affected-row
 * count of a write (may be NULL).
 */
enum db_status db_run(const char *sql, const struct db_param *params,
		      size_t nparams, db_row_fn row_fn, void *ctx,
		      uint64_t *affected);

/*
 * Close sql's cached prepared statement if it was prepared age_ms or more
 * ago, so that the next db_run() prepares it afresh: MariaDB plans a
 * prepared statement with the index statistics of the moment it was
 * prepared (see db_storage.c, collection stamps).
 */
void db_replan_after(const char *sql, int64_t age_ms);

/* Run text without parameters (DDL, schema scripts). */
enum db_status db_exec_text(const char *sql);

/*
 * Whether the connected server can run weave-server's SQL: MariaDB 10.5
 * or newer (the schema's IF NOT EXISTS forms and RETURNING are MariaDB's).
 * false with why (for weave-admin) filled otherwise. Connects first.
 */
#define DB_SERVER_MIN_VERSION 100500
bool db_server_supported(char *why, size_t why_size);

/* The last server error message (for weave-admin); never contains data. */
const char *db_last_error(void);

const char *db_status_text(enum db_status st);

#endif
