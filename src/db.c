/* db.c - connection, node choice and failover, transactions, cached prepared statements. */
#include "db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <mysql.h>
#include <errmsg.h>
#include <mysqld_error.h>

#include "config.h"
#include "db_hosts.h"
#include "last_words.h"
#include "log.h"
#include "util.h"

#define STMT_CACHE_SIZE 96
/* A connection found dead on first use fails within this (db_run()). */
#define STALE_FAILS_WITHIN_MS 1000
#define COLUMN_BUFFER 4096
#define MAX_COLUMNS 32

struct cached_stmt {
	char *sql;
	MYSQL_STMT *stmt;
	uint64_t last_used;
	int64_t prepared_ms; /* monotonic_ms() when prepared */
};

/* Where one database is: the account database's keys, or a node's. */
struct place_settings {
	const char *host, *socket, *name, *user, *password;
	int64_t port;
};

/*
 * One database of this process (db_use()): its connection, its open
 * transaction, its prepared statements, and its failover state: the
 * db_host server conn is on, until when each server is skipped, and
 * when the outage began.
 */
struct place {
	struct place_settings set;
	MYSQL *conn;
	bool in_transaction;
	struct cached_stmt stmt_cache[STMT_CACHE_SIZE];
	size_t conn_node;
	int64_t avoid_until[DB_HOSTS_MAX]; /* monotonic ms */
	int64_t outage_since;              /* monotonic ms; 0: none */
};

static const struct config *db_cfg;
_Static_assert(DB_PLACES_MAX == 1 + CONFIG_MAX_NODES, "a place per node");
static struct place places[DB_PLACES_MAX];
static size_t nplaces = 1;
static struct place *cur = &places[DB_ACCOUNTS];
static uint64_t use_counter;
static char last_error[512];
static bool long_statements;

static void avoid_node(size_t i)
{
	if (i < DB_HOSTS_MAX)
		cur->avoid_until[i] = monotonic_ms() + DB_NODE_AVOID_SECONDS * 1000;
}

static void outage_begins(void)
{
	if (cur->outage_since == 0)
		cur->outage_since = monotonic_ms() | 1; /* never 0 */
}

int64_t db_outage_seconds(void)
{
	return cur->outage_since == 0 ? -1 : (monotonic_ms() - cur->outage_since) / 1000;
}

void db_allow_long_statements(void)
{
	long_statements = true;
}

const char *db_status_text(enum db_status st)
{
	static const char *const text[DB__MAX] = {
		[DB_OK] = "ok",
		[DB_NOT_FOUND] = "not found",
		[DB_CONFLICT] = "conflict",
		[DB_RETRY] = "deadlock, retry",
		[DB_UNAVAILABLE] = "database unavailable",
		[DB_ERROR] = "database error",
	};
	return st < DB__MAX ? text[st] : "?";
}

const char *db_last_error(void)
{
	return last_error;
}

void db_configure(const struct config *cfg)
{
	db_cfg = cfg;
	places[DB_ACCOUNTS].set = (struct place_settings){
		.host = cfg->db_host, .socket = cfg->db_socket, .name = cfg->db_name,
		.user = cfg->db_user, .password = cfg->db_password, .port = cfg->db_port,
	};
	nplaces = 1 + cfg->nnodes;
	for (size_t i = 0; i < cfg->nnodes; i++) {
		const struct config_node *n = &cfg->nodes[i];
		places[1 + i].set = (struct place_settings){
			.host = n->db_host, .socket = n->db_socket, .name = n->db_name,
			.user = n->db_user, .password = n->db_password, .port = n->db_port,
		};
	}
}

size_t db_places(void)
{
	return nplaces;
}

size_t db_use(size_t place)
{
	size_t was = (size_t)(cur - places);
	if (place >= nplaces) {
		log_error("database place %zu of %zu asked for; using the account database",
			  place, nplaces);
		place = DB_ACCOUNTS;
	}
	cur = &places[place];
	return was;
}

size_t db_current(void)
{
	return (size_t)(cur - places);
}

const char *db_place_name(size_t place)
{
	if (place == DB_ACCOUNTS || db_cfg == NULL || place > db_cfg->nnodes)
		return "the account database";
	return db_cfg->nodes[place - 1].name;
}

bool db_in_transaction(void)
{
	return cur->in_transaction;
}

static void forget_statements(void)
{
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		if (cur->stmt_cache[i].stmt != NULL && cur->conn != NULL)
			mysql_stmt_close(cur->stmt_cache[i].stmt);
		free(cur->stmt_cache[i].sql);
		cur->stmt_cache[i].sql = NULL;
		cur->stmt_cache[i].stmt = NULL;
		cur->stmt_cache[i].last_used = 0;
	}
}

static void disconnect_current(void)
{
	forget_statements();
	if (cur->conn != NULL)
		mysql_close(cur->conn);
	cur->conn = NULL;
	cur->in_transaction = false;
}

/* fn on every place in turn; the current place stays. */
static void each_place(void (*fn)(void))
{
	struct place *was = cur;
	for (size_t i = 0; i < nplaces; i++) {
		cur = &places[i];
		fn();
	}
	cur = was;
}

void db_disconnect(void)
{
	each_place(disconnect_current);
}

static bool is_connection_error(unsigned int err)
{
	switch (err) {
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_SERVER_LOST_EXTENDED:
	case CR_COMMANDS_OUT_OF_SYNC:
	case ER_SERVER_SHUTDOWN:
	case ER_CONNECTION_KILLED:
	case 4031: /* ER_CLIENT_INTERACTION_TIMEOUT */
	/* A Galera node outside the primary component ("WSREP has not yet
	 * prepared node for application use"): another node may serve. */
	case ER_UNKNOWN_COM_ERROR:
		return true;
	default:
		return false;
	}
}

/* Map a server error to a status; drops the connection when it is gone. */
static enum db_status classify(unsigned int err, const char *message,
			       const char *what)
{
	snprintf(last_error, sizeof last_error, "%s", message ? message : "");
	if (is_connection_error(err)) {
		log_warn("database connection lost during %s (%u: %s); this node is "
			 "skipped for %d s", what, err, message ? message : "",
			 DB_NODE_AVOID_SECONDS);
		disconnect_current();
		/* Lost, timed out or not ready (1047): let the retry move on. */
		avoid_node(cur->conn_node);
		outage_begins();
		return DB_UNAVAILABLE;
	}
	if (err == ER_LOCK_DEADLOCK || err == ER_LOCK_WAIT_TIMEOUT) {
		log_info("database %s: %s; will retry", what, message ? message : "");
		return DB_RETRY;
	}
	if (err == ER_DUP_ENTRY)
		return DB_CONFLICT;
	log_error("database error during %s (%u: %s)", what, err,
		  message ? message : "");
	return DB_ERROR;
}

struct wsrep_state {
	bool on, ready, synced;
	char state[32]; /* wsrep_local_state_comment */
};

/* Fill *w from SHOW rows (name, value). SHOW works on a Galera node that
 * is not ready, where most statements fail with 1047. -1 on error. */
static int read_show(const char *sql, struct wsrep_state *w)
{
	if (mysql_query(cur->conn, sql) != 0)
		return -1;
	MYSQL_RES *res = mysql_store_result(cur->conn);
	if (res == NULL)
		return -1;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)) != NULL) {
		if (row[0] == NULL || row[1] == NULL)
			continue;
		if (strcasecmp(row[0], "wsrep_on") == 0)
			w->on = strcasecmp(row[1], "ON") == 0;
		else if (strcasecmp(row[0], "wsrep_ready") == 0)
			w->ready = strcasecmp(row[1], "ON") == 0;
		else if (strcasecmp(row[0], "wsrep_local_state_comment") == 0)
			snprintf(w->state, sizeof w->state, "%s", row[1]);
	}
	mysql_free_result(res);
	w->synced = strcmp(w->state, "Synced") == 0;
	return 0;
}

/*
 * Whether the fresh connection's server may serve. Any server without
 * Galera (wsrep_on OFF) may. A Galera node may when it is ready and
 * Synced; when it is the only node there is no better one to pick, so
 * its own errors decide. On a Galera node the session's reads are made
 * causal: each read first waits until the node has applied every write
 * the cluster had committed when the read began, so a front-end on one
 * node sees a write another front-end saw acknowledged through another.
 */
static bool node_ready(const struct db_host *h, bool only_node)
{
	struct wsrep_state w;
	memset(&w, 0, sizeof w);
	if (read_show("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'", &w) < 0 ||
	    (w.on && read_show("SHOW GLOBAL STATUS WHERE Variable_name IN "
			       "('wsrep_ready', 'wsrep_local_state_comment')", &w) < 0)) {
		log_warn("database %s:%u: cannot read its state: %s", h->name,
			 h->port, mysql_error(cur->conn));
		return false;
	}
	if (!w.on)
		return true;
	if (!only_node && !(w.ready && w.synced)) {
		log_warn("database node %s:%u is not ready (wsrep_ready %s, state %s): "
			 "trying the next", h->name, h->port, w.ready ? "ON" : "OFF",
			 w.state[0] ? w.state : "unknown");
		return false;
	}
	if (mysql_query(cur->conn, "SET SESSION wsrep_sync_wait = 1") != 0) {
		log_warn("Galera node, but causal reads cannot be set: %s",
			 mysql_error(cur->conn));
		return false;
	}
	log_debug("Galera node: causal reads (wsrep_sync_wait = 1)");
	return true;
}

static MYSQL *open_connection(const char *host, unsigned int port)
{
	MYSQL *c = mysql_init(NULL);
	if (c == NULL) {
		log_error("mysql_init failed (out of memory)");
		return NULL;
	}
	unsigned int connect_timeout = (unsigned int)db_cfg->db_connect_timeout;
	/* A hung node must cost a request seconds, not mod_fcgid's
	 * FcgidIOTimeout (a 500) or FcgidBusyTimeout (the process killed). */
	unsigned int read_timeout = (unsigned int)db_cfg->db_read_timeout;
	unsigned int write_timeout = (unsigned int)db_cfg->db_write_timeout;
	my_bool no = 0;
	mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
	if (!long_statements) {
		mysql_options(c, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
		mysql_options(c, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
	}
	mysql_options(c, MYSQL_OPT_RECONNECT, &no);
	mysql_options(c, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(c, MYSQL_INIT_COMMAND,
		      "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	mysql_options(c, MYSQL_INIT_COMMAND,
		      "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,"
		      "NO_ENGINE_SUBSTITUTION,ERROR_FOR_DIVISION_BY_ZERO'");
	if (mysql_real_connect(c, cur->set.socket || !*host ? NULL : host,
			       cur->set.user, cur->set.password,
			       cur->set.name, port, cur->set.socket,
			       CLIENT_FOUND_ROWS) == NULL) {
		snprintf(last_error, sizeof last_error, "%s", mysql_error(c));
		log_warn("cannot connect to database %s at %s:%u as %s: %s",
			 cur->set.name, cur->set.socket ? cur->set.socket : host,
			 port, cur->set.user, mysql_error(c));
		mysql_close(c);
		return NULL;
	}
	return c;
}

/* The db_host list: one entry for a socket or the library's default. */
static int configured_hosts(struct db_hosts *hosts)
{
	const char *why = NULL;
	if (cur->set.socket != NULL || cur->set.host[0] == '\0') {
		memset(hosts, 0, sizeof *hosts);
		hosts->count = 1;
		hosts->host[0].port = (unsigned int)cur->set.port;
		return 0;
	}
	if (db_hosts_parse(cur->set.host, cur->set.port, hosts, &why) < 0) {
		log_error("db_host: %s", why);
		return -1;
	}
	return 0;
}

/*
 * The order to try count nodes in (db_hosts_order()), and how many of
 * them: every healthy node, and one that failed lately (the first to be
 * free again). With all of them down a request costs one connect
 * attempt, not one per node, and answers 503 well within mod_fcgid's
 * FcgidIOTimeout.
 */
static size_t nodes_to_try(size_t count, size_t *order)
{
	int64_t now = monotonic_ms();
	db_hosts_order(count, cur->avoid_until, now, order);
	size_t tries = 1;
	for (size_t i = 0; i < count; i++)
		if (cur->avoid_until[i] <= now)
			tries++;
	return tries < count ? tries : count;
}

/*
 * Tries the db_host nodes in their configured order, those that failed
 * in the last DB_NODE_AVOID_SECONDS last (db_hosts_order()), and takes
 * the first that accepts the login and is ready (node_ready()).
 */
static enum db_status connect_first_ready(void)
{
	struct db_hosts hosts;
	if (db_cfg == NULL || configured_hosts(&hosts) < 0) {
		outage_begins();
		return DB_UNAVAILABLE;
	}
	size_t order[DB_HOSTS_MAX];
	size_t tries = nodes_to_try(hosts.count, order);
	for (size_t k = 0; k < tries; k++) {
		const struct db_host *h = &hosts.host[order[k]];
		cur->conn = open_connection(h->name, h->port);
		if (cur->conn != NULL && !node_ready(h, hosts.count == 1)) {
			mysql_close(cur->conn);
			cur->conn = NULL;
		}
		if (cur->conn == NULL) {
			avoid_node(order[k]);
			continue;
		}
		cur->conn_node = order[k];
		if (hosts.count > 1)
			log_info("connected to database %s at %s:%u", cur->set.name,
				 h->name, h->port);
		log_debug("connected to database %s", cur->set.name);
		return DB_OK;
	}
	outage_begins();
	return DB_UNAVAILABLE;
}

enum db_status db_connect(void)
{
	if (cur->conn != NULL)
		return DB_OK;
	const char *was = last_words_phase("connecting to the database");
	enum db_status st = connect_first_ready();
	last_words_phase(was);
	return st;
}

static enum db_status exec_text_once(const char *sql)
{
	enum db_status st = db_connect();
	if (st != DB_OK)
		return st;
	if (mysql_real_query(cur->conn, sql, strlen(sql)) != 0)
		return classify(mysql_errno(cur->conn), mysql_error(cur->conn), "statement");
	/* Drain any result so the connection stays in sync. */
	do {
		MYSQL_RES *res = mysql_store_result(cur->conn);
		if (res != NULL)
			mysql_free_result(res);
	} while (mysql_next_result(cur->conn) == 0);
	if (mysql_errno(cur->conn) != 0)
		return classify(mysql_errno(cur->conn), mysql_error(cur->conn), "statement");
	return DB_OK;
}

enum db_status db_exec_text(const char *sql)
{
	const char *was = last_words_phase("waiting for the database");
	bool was_connected = cur->conn != NULL;
	bool was_in_transaction = cur->in_transaction;
	int64_t began = monotonic_ms();
	enum db_status st = exec_text_once(sql);
	/* See db_run(): a stale idle connection gets one fresh try. */
	if (st == DB_UNAVAILABLE && was_connected && !was_in_transaction &&
	    monotonic_ms() - began < STALE_FAILS_WITHIN_MS)
		st = exec_text_once(sql);
	if (st != DB_UNAVAILABLE)
		cur->outage_since = 0;
	last_words_phase(was);
	return st;
}

enum db_status db_begin(void)
{
	enum db_status st = db_exec_text("START TRANSACTION");
	cur->in_transaction = st == DB_OK;
	return st;
}

enum db_status db_begin_snapshot(void)
{
	/* The session default is READ COMMITTED; this applies to the next
	 * transaction only. */
	enum db_status st = db_exec_text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
	if (st == DB_OK)
		st = db_exec_text("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
	cur->in_transaction = st == DB_OK;
	return st;
}

enum db_status db_commit(void)
{
	if (!cur->in_transaction)
		return DB_OK;
	cur->in_transaction = false;
	/* Never retried: a COMMIT on a fresh connection would commit nothing. */
	const char *was = last_words_phase("committing");
	enum db_status st = exec_text_once("COMMIT");
	last_words_phase(was);
	return st;
}

void db_rollback_current(void)
{
	if (!cur->in_transaction || cur->conn == NULL) {
		cur->in_transaction = false;
		return;
	}
	cur->in_transaction = false;
	exec_text_once("ROLLBACK");
}

void db_rollback(void)
{
	each_place(db_rollback_current);
}

static MYSQL_STMT *statement_for(const char *sql, enum db_status *st)
{
	struct cached_stmt *victim = &cur->stmt_cache[0];
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		struct cached_stmt *c = &cur->stmt_cache[i];
		if (c->sql != NULL && strcmp(c->sql, sql) == 0) {
			c->last_used = ++use_counter;
			return c->stmt;
		}
		if (c->last_used < victim->last_used)
			victim = c;
	}
	MYSQL_STMT *stmt = mysql_stmt_init(cur->conn);
	if (stmt == NULL) {
		*st = classify(mysql_errno(cur->conn), mysql_error(cur->conn), "prepare");
		return NULL;
	}
	if (mysql_stmt_prepare(stmt, sql, strlen(sql)) != 0) {
		unsigned int err = mysql_stmt_errno(stmt);
		char message[256];
		snprintf(message, sizeof message, "%s", mysql_stmt_error(stmt));
		mysql_stmt_close(stmt);
		*st = classify(err, message, "prepare");
		if (*st == DB_ERROR)
			log_error("statement was: %.200s", sql);
		return NULL;
	}
	if (victim->stmt != NULL)
		mysql_stmt_close(victim->stmt);
	free(victim->sql);
	victim->sql = xstrdup(sql);
	victim->stmt = stmt;
	victim->last_used = ++use_counter;
	victim->prepared_ms = monotonic_ms();
	return stmt;
}

void db_replan_after(const char *sql, int64_t age_ms)
{
	int64_t now = monotonic_ms();
	for (size_t i = 0; i < STMT_CACHE_SIZE; i++) {
		struct cached_stmt *c = &cur->stmt_cache[i];
		if (c->sql == NULL || strcmp(c->sql, sql) != 0 || now - c->prepared_ms < age_ms)
			continue;
		if (c->stmt != NULL && cur->conn != NULL)
			mysql_stmt_close(c->stmt);
		free(c->sql);
		c->sql = NULL;
		c->stmt = NULL;
		c->last_used = 0;
	}
}

static bool is_integer_type(enum enum_field_types t)
{
	return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT ||
	       t == MYSQL_TYPE_LONG || t == MYSQL_TYPE_LONGLONG ||
	       t == MYSQL_TYPE_INT24 || t == MYSQL_TYPE_YEAR;
}

struct column {
	MYSQL_BIND bind;
	my_bool is_null;
	my_bool error;
	unsigned long length;
	int64_t i;
	char small[COLUMN_BUFFER];
	char *big; /* when a value does not fit in small */
	size_t big_cap;
};

/*
 * Reused by every statement: zeroing a fresh MAX_COLUMNS-sized allocation
 * (4 KiB per column) was a quarter of a sync poll's work. No statement
 * runs while another one's rows are being fetched (the protocol forbids
 * it), so one set is enough.
 */
static struct column column_store[MAX_COLUMNS];

/* Result buffers for ncols columns: integers as such, the rest as text
 * into each column's small buffer (longer values are fetched apart). */
static void bind_columns(MYSQL_BIND *binds, struct column *cols,
			 const MYSQL_FIELD *fields, unsigned int ncols)
{
	memset(binds, 0, sizeof *binds * MAX_COLUMNS);
	for (unsigned int c = 0; c < ncols; c++) {
		MYSQL_BIND *b = &binds[c];
		cols[c].is_null = 0;
		cols[c].error = 0;
		cols[c].length = 0;
		cols[c].i = 0;
		cols[c].big = NULL;
		cols[c].big_cap = 0;
		b->is_null = &cols[c].is_null;
		b->error = &cols[c].error;
		b->length = &cols[c].length;
		if (is_integer_type(fields[c].type)) {
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = &cols[c].i;
			b->is_unsigned = 0;
		} else {
			b->buffer_type = MYSQL_TYPE_STRING;
			b->buffer = cols[c].small;
			b->buffer_length = COLUMN_BUFFER - 1;
		}
	}
}

/* A failed fetch: a connection lost while rows arrive is reported on the
 * connection, not the statement. */
static enum db_status fetch_failed(MYSQL_STMT *stmt)
{
	unsigned int err = mysql_stmt_errno(stmt);
	const char *message = mysql_stmt_error(stmt);
	if (err == 0) {
		err = mysql_errno(cur->conn) ? mysql_errno(cur->conn) : CR_SERVER_LOST;
		message = mysql_error(cur->conn);
	}
	return classify(err, message, "fetch");
}

/* Column c of the fetched row as a db_value; a text value longer than
 * the small buffer is fetched again into the column's own big buffer. */
static enum db_status column_value(MYSQL_STMT *stmt, const MYSQL_BIND *bind,
				   struct column *col, unsigned int c, struct db_value *v)
{
	memset(v, 0, sizeof *v);
	v->is_null = col->is_null;
	if (col->is_null)
		return DB_OK;
	if (bind->buffer_type == MYSQL_TYPE_LONGLONG) {
		v->i = col->i;
		return DB_OK;
	}
	if (col->length < COLUMN_BUFFER) {
		col->small[col->length] = '\0';
		v->s = col->small;
	} else {
		if (col->big_cap < col->length + 1) {
			col->big = xrealloc(col->big, col->length + 1);
			col->big_cap = col->length + 1;
		}
		MYSQL_BIND one;
		memset(&one, 0, sizeof one);
		one.buffer_type = MYSQL_TYPE_STRING;
		one.buffer = col->big;
		one.buffer_length = col->length;
		if (mysql_stmt_fetch_column(stmt, &one, c, 0) != 0)
			return classify(mysql_stmt_errno(stmt), mysql_stmt_error(stmt),
					"fetch column");
		col->big[col->length] = '\0';
		v->s = col->big;
	}
	v->len = col->length;
	/* A numeric text column (CAST ... AS CHAR) also gets its value. */
	if (parse_int64(v->s, INT64_MIN, INT64_MAX, &v->i) < 0)
		v->i = 0;
	return DB_OK;
}

static enum db_status fetch_rows(MYSQL_STMT *stmt, MYSQL_RES *meta,
				 db_row_fn row_fn, void *ctx)
{
	unsigned int ncols = mysql_num_fields(meta);
	struct column *cols = column_store;
	MYSQL_BIND binds[MAX_COLUMNS];
	struct db_value values[MAX_COLUMNS];
	enum db_status st = DB_OK;

	if (ncols > MAX_COLUMNS) {
		log_error("statement returns %u columns (max %d)", ncols, MAX_COLUMNS);
		return DB_ERROR;
	}
	bind_columns(binds, cols, mysql_fetch_fields(meta), ncols);
	if (mysql_stmt_bind_result(stmt, binds) != 0) {
		st = classify(mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "bind");
		goto done;
	}
	bool stopped = false;
	int rc;
	while (st == DB_OK && (rc = mysql_stmt_fetch(stmt)) != MYSQL_NO_DATA) {
		if (rc == 1) {
			st = fetch_failed(stmt);
			break;
		}
		if (stopped)
			continue; /* drain so the connection stays usable */
		for (unsigned int c = 0; c < ncols && st == DB_OK; c++)
			st = column_value(stmt, &binds[c], &cols[c], c, &values[c]);
		if (st == DB_OK && row_fn != NULL && row_fn(ctx, values, ncols) != 0)
			stopped = true;
	}
done:
	for (unsigned int c = 0; c < ncols; c++) {
		free(cols[c].big);
		cols[c].big = NULL;
	}
	return st;
}

/* MariaDB's limit on placeholders in one statement. */
#define MAX_PARAMS 65535

static enum db_status run_once(const char *sql, const struct db_param *params,
			       size_t nparams, db_row_fn row_fn, void *ctx,
			       uint64_t *affected)
{
	enum db_status st = DB_OK;

	MYSQL_STMT *stmt = statement_for(sql, &st);
	if (stmt == NULL)
		return st;
	if (mysql_stmt_param_count(stmt) != nparams || nparams > MAX_PARAMS) {
		log_error("statement expects %lu parameters, got %zu: %.120s",
			  mysql_stmt_param_count(stmt), nparams, sql);
		return DB_ERROR;
	}
	MYSQL_BIND *binds = xcalloc(nparams ? nparams : 1, sizeof *binds);
	unsigned long *lengths = xcalloc(nparams ? nparams : 1, sizeof *lengths);
	for (size_t i = 0; i < nparams; i++) {
		const struct db_param *p = &params[i];
		switch (p->type) {
		case DB_PARAM_NULL:
			binds[i].buffer_type = MYSQL_TYPE_NULL;
			break;
		case DB_PARAM_INT:
			binds[i].buffer_type = MYSQL_TYPE_LONGLONG;
			binds[i].buffer = (void *)&p->i;
			break;
		case DB_PARAM_STR:
			binds[i].buffer_type = MYSQL_TYPE_STRING;
			binds[i].buffer = (void *)(p->s ? p->s : "");
			lengths[i] = (unsigned long)p->len;
			binds[i].buffer_length = lengths[i];
			binds[i].length = &lengths[i];
			break;
		}
	}
	if (nparams > 0 && mysql_stmt_bind_param(stmt, binds) != 0) {
		st = classify(mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "bind");
		goto done;
	}
	if (mysql_stmt_execute(stmt) != 0) {
		st = classify(mysql_stmt_errno(stmt), mysql_stmt_error(stmt), "execute");
		goto done;
	}
	MYSQL_RES *meta = mysql_stmt_result_metadata(stmt);
	if (meta != NULL) {
		st = fetch_rows(stmt, meta, row_fn, ctx);
		mysql_free_result(meta);
		if (cur->conn != NULL)
			mysql_stmt_free_result(stmt);
	} else if (affected != NULL) {
		*affected = mysql_stmt_affected_rows(stmt);
	}
done:
	free(binds);
	free(lengths);
	return st;
}

bool db_server_supported(char *why, size_t why_size)
{
	if (db_connect() != DB_OK) {
		snprintf(why, why_size, "cannot connect: %s", db_last_error());
		return false;
	}
	const char *info = mysql_get_server_info(cur->conn);
	unsigned long version = mysql_get_server_version(cur->conn);
	if (info != NULL && strstr(info, "MariaDB") != NULL &&
	    version >= DB_SERVER_MIN_VERSION)
		return true;
	snprintf(why, why_size, "the database server is %s; weave-server needs "
		 "MariaDB %d.%d or newer (its SQL uses MariaDB's RETURNING and "
		 "IF NOT EXISTS forms)", info ? info : "unknown",
		 DB_SERVER_MIN_VERSION / 10000, DB_SERVER_MIN_VERSION / 100 % 100);
	return false;
}

enum db_status db_run(const char *sql, const struct db_param *params,
		      size_t nparams, db_row_fn row_fn, void *ctx,
		      uint64_t *affected)
{
	bool was_connected = cur->conn != NULL;
	bool was_in_transaction = cur->in_transaction;
	enum db_status st = db_connect();
	if (st != DB_OK)
		return st;
	const char *was = last_words_phase("waiting for the database");
	int64_t began = monotonic_ms();
	st = run_once(sql, params, nparams, row_fn, ctx, affected);
	/*
	 * A connection that died while idle (the server restarted) fails on
	 * first use, at once. Outside a transaction nothing was half done, so
	 * reconnect and run the statement again: the first request after
	 * the database comes back succeeds. A statement that failed after
	 * waiting (db_read_timeout) is not run again here: the request's own
	 * retry moves to the next node, and a hung one costs one timeout.
	 */
	if (st == DB_UNAVAILABLE && was_connected && !was_in_transaction &&
	    monotonic_ms() - began < STALE_FAILS_WITHIN_MS) {
		st = db_connect();
		if (st == DB_OK)
			st = run_once(sql, params, nparams, row_fn, ctx, affected);
	}
	if (st != DB_UNAVAILABLE)
		cur->outage_since = 0; /* the database answered */
	last_words_phase(was);
	return st;
}
