/*
 * db_schema.h - which schema the database holds, and which this build
 * needs. No HTTP here. The server reads it (settings.c: the upgrade
 * window; health.c), and weave-admin's db init/upgrade/check write it.
 */
#ifndef WEAVE_DB_SCHEMA_H
#define WEAVE_DB_SCHEMA_H

#include <stdint.h>

#include "db.h"

/*
 * The schema this build needs (sql/schema.sql). 1: the first schema; 2:
 * the nodes table; 3: the throttle table; 4: the record history
 * (write_log, wbo_history, history_usage), the account_changes log and
 * its triggers, a primary key on every table (Galera); 5: login_verifiers
 * (verified passwords shared by the web servers, shared_credential.h);
 * 6: moves (accounts moving between storage nodes, docs/shards.md).
 */
#define DB_SCHEMA_VERSION 6
/* The first version with login_verifiers (db_user_verifiers_ready()). */
#define DB_SCHEMA_VERIFIERS 5

/* Highest version in weave_schema; 0 when the schema is not installed. */
enum db_status db_schema_version(int64_t *version);

#endif
