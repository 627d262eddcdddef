/*
 * sql_statements.h - the texts of the SQL statements that both the
 * server (src/db_user.c, src/db_storage.c, src/db_history.c) and the
 * data-tier ceiling (bench/dbceiling.c) run, as string literals, so
 * that the ceiling measures the server's own statements and cannot
 * drift from them. Statements built at run time (an id list, optional
 * columns) are given as the fixed pieces their builders join.
 *
 * Literals only: bench/dbceiling.c includes this file without linking
 * the server. Every value is a bound parameter (`?`).
 */
#ifndef WEAVE_SQL_STATEMENTS_H
#define WEAVE_SQL_STATEMENTS_H

/* ---- users (db_user.c) ------------------------------------------------ */

/*
 * The user row (NULLs for an unknown name, thanks to the one-row derived
 * table) and the login's throttle rows: the lock ends of the account's
 * daily count, of the address and of the pair, and the end of the
 * pair's "known" mark. The row lock covers the users row only;
 * subqueries read without locking. Parameters: kind, subject, now (four
 * times), then the name.
 */
#define SQL_THROTTLE_COLUMN(what) \
	"(SELECT t." what " FROM throttle t WHERE t.kind = ? AND " \
	"t.subject = ? AND t.expires > ?)"
#define SQL_USER_LOGIN \
	"SELECT u.id, u.username, u.password_hash, u.email, u.status, " \
	"u.quota_kb, u.node, u.alert, u.last_write, u.created, " \
	SQL_THROTTLE_COLUMN("locked_until") ", " \
	SQL_THROTTLE_COLUMN("locked_until") ", " \
	SQL_THROTTLE_COLUMN("locked_until") ", " \
	SQL_THROTTLE_COLUMN("expires") \
	" FROM (SELECT 1) AS one LEFT JOIN users u ON u.username = ?"
/* Appended to a read of the users row: a read, or a write's lock. */
#define SQL_SHARE_LOCK " LOCK IN SHARE MODE"
#define SQL_EXCLUSIVE_LOCK " FOR UPDATE"

#define SQL_USER_SET_LAST_WRITE "UPDATE users SET last_write = ? WHERE id = ?"

/* ---- records (db_storage.c) ------------------------------------------- */

/* A collection GET: head, SQL_WBO_WHERE, filters, order, SQL_LIMIT. */
#define SQL_WBO_SELECT_FULL \
	"SELECT id, modified, parentid, predecessorid, sortindex, payload FROM wbo"
#define SQL_WBO_SELECT_IDS "SELECT id, modified FROM wbo"
#define SQL_WBO_WHERE " WHERE user_id = ? AND collection = ? AND expires > ?"
#define SQL_NEWER " AND modified > ?"
#define SQL_ORDER_BY_INDEX " ORDER BY sortindex DESC, id ASC"
#define SQL_LIMIT " LIMIT ? OFFSET ?"

/* An id list: SQL_IDS_OPEN, "?" then ",?" per id, SQL_IDS_CLOSE. */
#define SQL_IDS_OPEN " AND id IN ("
#define SQL_IDS_CLOSE ")"

/* A write first drops the expired rows it would otherwise update in
 * place: this, then an id list. */
#define SQL_WBO_DROP_EXPIRED \
	"DELETE FROM wbo WHERE user_id = ? AND collection = ? AND expires <= ?"

/*
 * The insert of a POST or PUT: SQL_WBO_INSERT, the optional columns the
 * records carry, SQL_WBO_VALUES, one "(?,?,?,?...)" per record, then
 * SQL_WBO_UPSERT and the matching updates.
 */
#define SQL_WBO_INSERT "INSERT INTO wbo (user_id, collection, id, modified"
#define SQL_WBO_VALUES ") VALUES "
#define SQL_WBO_UPSERT " ON DUPLICATE KEY UPDATE "
#define SQL_COLUMN_SORTINDEX ", sortindex"
#define SQL_COLUMN_PAYLOAD ", payload, payload_size"
#define SQL_UPDATE_MODIFIED "modified = VALUES(modified)"
#define SQL_UPDATE_SORTINDEX ", sortindex = VALUES(sortindex)"
#define SQL_UPDATE_PAYLOAD \
	", payload = VALUES(payload), payload_size = VALUES(payload_size)"

/* ---- record history (db_history.c) ------------------------------------ */

/* The columns of a record version, in wbo and wbo_history alike. */
#define SQL_VERSION_COLUMNS \
	"parentid, predecessorid, sortindex, modified, payload, payload_size, expires"

/*
 * Keep the live rows a write is about to replace or delete:
 * SQL_HISTORY_KEEP, the write's WHERE conditions, SQL_HISTORY_KEEP_LIVE
 * (when only unexpired rows are wanted), SQL_HISTORY_KEEP_RETURNING.
 * Parameters: the write's stamp, the conditions' own, the stamp again
 * (for SQL_HISTORY_KEEP_LIVE). RETURNING (MariaDB 10.5+) hands back each
 * kept row's expiry and size, so that no statement has to count them.
 */
#define SQL_HISTORY_KEEP \
	"INSERT IGNORE INTO wbo_history (user_id, collection, id, " \
	"replaced, " SQL_VERSION_COLUMNS ") SELECT user_id, collection, id, " \
	"?, " SQL_VERSION_COLUMNS " FROM wbo WHERE "
#define SQL_HISTORY_KEEP_LIVE " AND expires > ?"
#define SQL_HISTORY_KEEP_RETURNING " RETURNING expires, payload_size"
/* A write replaces records by their ids: the WHERE of its keep (an id
 * list without SQL_IDS_OPEN's leading AND follows). */
#define SQL_KEEP_BY_IDS "user_id = ? AND collection = ? AND id IN ("

#define SQL_WRITE_LOG_INSERT \
	"INSERT INTO write_log (user_id, stamp, collection, previous, " \
	"written, replaced, deleted, agent, bytes) " \
	"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

#endif
