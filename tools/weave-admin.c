/*
 * weave-admin.c - the administrator's tool: the command table and the dispatcher.
 * Over 600 lines because the table carries every command's full help
 * text (what `weave-admin help COMMAND` prints); the code is the last third.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admin.h"
#include "change_board.h"
#include "db.h"
#include "db_admin.h"
#include "log.h"

/*
 * Every command on one screen. The dispatcher matches the words, accepts
 * only the options listed (plus --config and --help), checks the number
 * of arguments, prepares what the row's flags (admin.h, enum
 * command_flag) ask for, then runs the handler.
 */
#define PW_FILE "[--password-file FILE|-]"

#define SETUP_HELP \
	"Install weave-server on this host, from 'make install' to an HTTPS\n" \
	"server, in one go: create the database and its user (as the database's\n" \
	"root, through its Unix socket), write weave.conf with generated secrets\n" \
	"(owner root, group of the Apache user, mode 0640), install the schema,\n" \
	"enable mod_fcgid, mod_ssl and the Apache snippet, add an HTTPS virtual\n" \
	"host for HOST (with AllowEncodedSlashes NoDecode) using --cert/--key or\n" \
	"a new self-signed certificate for HOST (its SHA-256 fingerprint is\n" \
	"printed), reload Apache, run 'check', create the first account if\n" \
	"asked, and print what to enter in the client. Without --yes it asks\n" \
	"for what is not given and for confirmation. Running it again keeps\n" \
	"what is already right (an existing weave.conf, certificate, database\n" \
	"password and account are kept). Debian's Apache layout (a2enconf);\n" \
	"elsewhere it prints the Include line to add."
#define CHECK_HELP \
	"Check the installation and print one line per finding: 'ok: ...',\n" \
	"'note: ...', or 'problem: ... -- fix: ...'. Checked: weave.conf (it\n" \
	"loads; owner, mode, readable by the Apache user; settings that\n" \
	"contradict each other; public_url is https), the account cache file\n" \
	"(the Apache user can open or create it), the database (reachable,\n" \
	"schema version, every table and index), mail (sendmail_command\n" \
	"exists; --mail ADDRESS sends a test), Apache (configuration test, the\n" \
	"snippet loaded, AllowEncodedSlashes NoDecode, FcgidMaxRequestLen >=\n" \
	"max_request_bytes) and one real request through public_url. Exits 1\n" \
	"when there is any problem. Needs root for the checks as the Apache user.\n" \
	"--json prints {\"problems\": N, \"findings\": [{\"level\", \"what\", \"fix\"}]}."

/* A row may end before its flags: they are then 0, the usual. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct command commands[] = {
	{ "db init", 0, 0, 0, cmd_db_init, "",
	  "create the schema, or add what is missing",
	  "Run the schema compiled into weave-admin: every statement is CREATE ...\n"
	  "IF NOT EXISTS, so on an installed database only what is missing is\n"
	  "added (an index missing from an existing table is recreated), keys\n"
	  "that older releases made and the schema no longer has (wbo's\n"
	  "by_parentid, by_predecessorid, by_sortindex, by_expires) are dropped,\n"
	  "and the schema version is recorded. Running it again is harmless.",
	  CMD_NO_SCHEMA },
	{ "db upgrade", 0, 0, 0, cmd_db_init, "",
	  "same as db init",
	  "Same as 'db init': bring an installed schema up to this version.",
	  CMD_NO_SCHEMA },
	{ "db check", 0, 0, OPT(OPT_JSON), cmd_db_check, "[--json]",
	  "report the schema version and verify tables and indexes",
	  "Print the installed schema version and check that every table and\n"
	  "index of the schema exists (information_schema). Exits 1 and names\n"
	  "what is missing when something is; 'db upgrade' adds it.", CMD_NO_SCHEMA },

	{ "user add", 1, 1, OPT(OPT_EMAIL) | OPT(OPT_PASSWORD_FILE) | OPT(OPT_NODE),
	  cmd_user_add, "NAME [--email ADDRESS] " PW_FILE " [--node URL|default]",
	  "create an account",
	  "Create an account. The password is asked twice without echo on a\n"
	  "terminal, or read from the first line of --password-file ('-' is\n"
	  "standard input). A NAME containing '@' is an e-mail login: it is\n"
	  "stored under its Sync 1.1 hashed name and the address becomes the\n"
	  "e-mail. The account goes to --node URL, 'default' (this server), or\n"
	  "else to the storage node with room and the fewest accounts." },
	{ "user delete", 1, 1, OPT(OPT_YES), cmd_user_delete, "NAME [--yes]",
	  "delete an account and all its records",
	  "Delete the account and every record it has, in one transaction.\n"
	  "Asks for confirmation on a terminal; --yes skips the question (needed\n"
	  "when standard input is not a terminal)." },
	{ "user list", 0, 0,
	  OPT(OPT_ENABLED) | OPT(OPT_DISABLED) | OPT(OPT_NAME_LIKE) | OPT(OPT_NODE) |
		  OPT(OPT_SORT) | OPT(OPT_LIMIT) | OPT(OPT_JSON),
	  cmd_user_list,
	  "[--enabled|--disabled] [--name-like PATTERN] [--node URL|default]\n"
	  "                      [--sort name|usage|activity] [--limit N] [--json]",
	  "list accounts with usage and last activity",
	  "List accounts with their status, unexpired records and stored bytes,\n"
	  "last write and e-mail. --name-like takes an SQL LIKE pattern ('%' any\n"
	  "text, '_' one character). --node keeps the accounts of one node\n"
	  "('default': those on this server). --sort usage puts the largest\n"
	  "first, activity the most recently written." },
	{ "user show", 1, 1, OPT(OPT_JSON), cmd_user_show, "NAME [--json]",
	  "show one account: quota, usage per collection, node, status",
	  "Show an account: status, e-mail, node, quota and usage, alert,\n"
	  "creation time, last write, and records, bytes and newest timestamp\n"
	  "per collection." },
	{ "user passwd", 1, 1, OPT(OPT_PASSWORD_FILE), cmd_user_passwd,
	  "NAME " PW_FILE, "set an account's password",
	  "Set a new password (asked twice on a terminal, or --password-file)." },
	{ "user email", 1, 2, OPT(OPT_CLEAR), cmd_user_email, "NAME ADDRESS|--clear",
	  "set or clear an account's e-mail address",
	  "Set the address that password-reset mails go to, or remove it." },
	{ "user quota", 2, 2, 0, cmd_user_quota, "NAME KB|default|none",
	  "set an account's quota",
	  "Set the account's quota in KB; 'default' follows quota_kb of\n"
	  "weave.conf, 'none' (or 0) means no quota." },
	{ "user disable", 1, 1, 0, cmd_user_disable, "NAME",
	  "refuse the account's logins (data is kept)",
	  "Disable the account: every request with its credentials gets 401.\n"
	  "Its records stay." },
	{ "user enable", 1, 1, 0, cmd_user_enable, "NAME",
	  "allow a disabled account again", "Enable a disabled account again." },
	{ "user unlock", 1, 1, 0, cmd_user_unlock, "NAME",
	  "forget an account's failed logins and reset requests (lift a lock)",
	  "After login_limit wrong passwords from one address within login_window\n"
	  "seconds, logins of the account from that address are refused for\n"
	  "login_lockout seconds; after login_account_limit in a day, only\n"
	  "addresses it logged in from lately are checked. This clears the\n"
	  "account's counters, lifting those locks and the reset_limit on\n"
	  "password-reset mails at once. Names that have no account are counted\n"
	  "and locked the same way, so NAME need not exist." },
	{ "user alert", 1, 2, OPT(OPT_CLEAR), cmd_user_alert, "NAME TEXT|--clear",
	  "set or clear the X-Weave-Alert text of an account",
	  "Set the text sent as X-Weave-Alert on the account's authenticated\n"
	  "responses (printable text, at most 1024 bytes), or remove it." },
	{ "user node", 2, 2, 0, cmd_user_node, "NAME URL|default",
	  "set an account's storage node URL",
	  "Set the URL that node/weave answers for the account ('default': this\n"
	  "server's public_url). The URL is normalised to end in '/'. Records\n"
	  "are not moved: refused when the new node keeps records in another\n"
	  "database (weave.conf's node.NAME.*) and the account has some there;\n"
	  "'user move' moves them." },

	{ "user move", 1, 1, OPT(OPT_TO) | OPT(OPT_PAUSE), cmd_user_move,
	  "NAME --to NODE [--pause MS]",
	  "move an account's records to another storage node, online",
	  "Move the account to NODE ('default', a node name of weave.conf or a\n"
	  "node URL) with its records, record history and write log, while it\n"
	  "syncs on: everything is copied, then for the time it takes to copy\n"
	  "what changed meanwhile (usually well under a second) its storage\n"
	  "requests answer 503 with Retry-After, then users.node switches and,\n"
	  "5 seconds later, the old node's copy is deleted. The clients are told\n"
	  "nothing: every web server serves every node. Stopped anywhere (a\n"
	  "crash, kill -9), the same command finishes the move; no acknowledged\n"
	  "write is lost. --pause MS waits between the phases (to watch them).\n"
	  "docs/shards.md." },
	{ "user history", 1, 1, OPT(OPT_COLLECTION) | OPT(OPT_SINCE) | OPT(OPT_JSON),
	  cmd_user_history, "NAME [--collection C] [--since TIME] [--json]",
	  "list an account's writes that replaced or deleted records",
	  "List the account's logged writes, oldest first: when (UTC, and the\n"
	  "Weave timestamp), the collection, records written, of those how many\n"
	  "replaced existing ones, records deleted, the bytes of the old versions\n"
	  "kept, and the client (User-Agent) that wrote. Also how much history\n"
	  "the account holds and from when on it is whole: 'user restore' can go\n"
	  "back that far. TIME is a Weave timestamp (1796367600.12) or an ISO\n"
	  "date-time (2026-12-04T07:00:00Z, 2026-12-04 08:00+01:00, 2026-12-04);\n"
	  "without an offset it is UTC. Writes are kept while history_days > 0." },
	{ "user restore", 1, 1,
	  OPT(OPT_COLLECTION) | OPT(OPT_AS_OF) | OPT(OPT_DRY_RUN) | OPT(OPT_YES) |
		  OPT(OPT_KEEP_NEWER),
	  cmd_user_restore,
	  "NAME [--collection C] --as-of TIME [--dry-run] [--yes] [--keep-newer]",
	  "put an account's records back as they were at a time",
	  "Put the collection (without --collection: every collection) back as it\n"
	  "was at TIME, in one transaction: records replaced since get their old\n"
	  "payload back, deleted ones come back, and records created since are\n"
	  "deleted (--keep-newer keeps them). Restored records get a new\n"
	  "timestamp, so every device downloads them at its next sync. The\n"
	  "restore is a logged write itself: restoring as of the moment before it\n"
	  "undoes it. Refused when the history does not reach back to TIME.\n"
	  "--dry-run shows what would change; on a terminal it asks first,\n"
	  "elsewhere it needs --yes. TIME as for 'user history'." },

	{ "node add", 1, 1, OPT(OPT_CAPACITY), cmd_node_add, "URL [--capacity N]",
	  "add a storage node for new accounts",
	  "Add a storage node. New accounts go to the node with room and the\n"
	  "fewest accounts; --capacity limits how many accounts a node takes\n"
	  "(default: unlimited). While the node table is empty every account\n"
	  "lives on this server." },
	{ "node capacity", 2, 2, 0, cmd_node_capacity, "URL N|unlimited",
	  "change a node's capacity", "Change how many accounts a node takes." },
	{ "node list", 0, 0, OPT(OPT_JSON), cmd_node_list, "[--json]",
	  "list nodes with capacity and accounts",
	  "List the storage nodes with their capacity and assigned accounts." },
	{ "node remove", 1, 1, 0, cmd_node_remove, "URL",
	  "remove a node that has no accounts",
	  "Remove a storage node. Refused while accounts are assigned to it:\n"
	  "move them first ('node drain')." },
	{ "node assign", 1, 2, 0, cmd_node_assign, "NAME [URL]",
	  "assign an account to a node (or to the emptiest)",
	  "Assign the account to the node URL (which must be in the node list),\n"
	  "or without URL to the node with room and the fewest accounts.\n"
	  "Records are not moved, so refused when they would be left in another\n"
	  "database: 'user move' moves them." },

	{ "node drain", 1, 1, OPT(OPT_TO) | OPT(OPT_PAUSE), cmd_node_drain,
	  "NODE [--to NODE] [--pause MS]",
	  "move every account off a storage node",
	  "Set the node's capacity to 0 (no new account goes there) and move its\n"
	  "accounts one by one as 'user move' does: each to --to, or to the node\n"
	  "of the node list with room and the fewest accounts. NODE is\n"
	  "'default', a node name of weave.conf or a URL. Stopped anywhere, run\n"
	  "it again: an unfinished move is finished first." },

	{ "throttle list", 0, 0, OPT(OPT_JSON), cmd_throttle_list, "[--json]",
	  "show failed-login and reset-request counters, and locks",
	  "List the live counters: failed logins per account in its day\n"
	  "(login/account; locked: only known addresses are checked), per\n"
	  "client address (login/address) and per account and address\n"
	  "(login/pair, \"NAME ADDRESS\"); password-reset requests per account,\n"
	  "and requests and wrong codes per address (reset/...); addresses the\n"
	  "account logged in from correctly (known/pair: many, so the table\n"
	  "only counts them; --json lists them). With the start of\n"
	  "their window and, for locked ones, when the lock ends. Locked ones\n"
	  "come first. Times are UTC; --json gives seconds since the epoch.\n"
	  "IPv6 addresses are counted by their /64." },
	{ "throttle clear", 1, 1, 0, cmd_throttle_clear, "ADDRESS",
	  "forget a client address's failed logins and reset requests",
	  "Clear the counters of a client address (REMOTE_ADDR, or behind\n"
	  "trusted_proxies the address the proxy saw; an IPv6 address clears\n"
	  "its /64), and of every account at it, lifting their locks.\n"
	  "Addresses that must never be locked (a monitoring host, say) belong\n"
	  "in throttle_exempt of weave.conf instead." },

	{ "purge", 0, 0,
	  OPT(OPT_BATCH) | OPT(OPT_PAUSE) | OPT(OPT_DRY_RUN) | OPT(OPT_QUIET) | OPT(OPT_JSON),
	  cmd_purge, "[--batch N] [--pause MS] [--dry-run] [--quiet] [--json]",
	  "remove expired (ttl) records and old record history in small batches",
	  "Delete records whose ttl has expired, collection by collection (it reads\n"
	  "every record about once, without locks), --batch records (default\n"
	  "1000) per short transaction with a --pause (default 50 ms) after every\n"
	  "--batch records deleted, so it can run from cron while the server\n"
	  "serves; failed-login counters whose window has ended; and record\n"
	  "history older than history_days (all of it when history_days is 0),\n"
	  "--batch logged writes with their kept versions at a time. --dry-run\n"
	  "only counts; --quiet prints nothing on success." },
	{ "stats", 0, 0, OPT(OPT_TOP) | OPT(OPT_JSON), cmd_stats, "[--top N] [--json]",
	  "users, records and bytes per collection, largest users",
	  "Print account counts, unexpired records and bytes per collection,\n"
	  "expired records waiting for purge, and the --top (default 10)\n"
	  "largest accounts." },
	{ "export", 1, 2, OPT(OPT_QUIET) | OPT(OPT_FORCE), cmd_export,
	  "NAME [FILE|-] [--force] [--quiet]",
	  "write an account's records as JSON lines",
	  "Write every record of the account, expired ones included, to FILE\n"
	  "(default '-', standard output) as JSON lines, one object per record\n"
	  "with every column:\n"
	  "  {\"collection\":C,\"id\":I,\"parentid\":P|null,\"predecessorid\":P|null,\n"
	  "   \"sortindex\":N|null,\"modified\":CENTISECONDS,\"expires\":CENTISECONDS|null,\n"
	  "   \"payload\":S|null}\n"
	  "modified and expires are integer centiseconds (modified 126540283712\n"
	  "is 1265402837.12 on the wire); expires null means no ttl. Records are\n"
	  "ordered by collection and id, so two exports of the same data are\n"
	  "byte-identical. A FILE is written to a temporary name and renamed;\n"
	  "an existing FILE is replaced only with --force." },
	{ "import", 2, 2, OPT(OPT_REPLACE) | OPT(OPT_QUIET), cmd_import,
	  "NAME FILE|- [--replace] [--quiet]",
	  "restore records written by export, in one transaction",
	  "Restore records from an export file into an existing account, exactly\n"
	  "(ids, timestamps, sortindex, expiry), in one transaction: a bad line\n"
	  "changes nothing. Records with the same collection and id are\n"
	  "replaced; --replace first deletes every record the account has. The\n"
	  "account's last write is raised to the newest imported timestamp." },
	{ "backup", 1, 1,
	  OPT(OPT_USER) | OPT(OPT_USERS_FILE) | OPT(OPT_FORCE) | OPT(OPT_QUIET) | OPT(OPT_JSON),
	  cmd_backup,
	  "FILE [--user NAME[,NAME...]]\n"
	  "                      [--users-file FILE] [--force] [--quiet] [--json]",
	  "the whole server or chosen accounts, in one consistent snapshot",
	  "Write every account (password hash, e-mail, quota, status, alert,\n"
	  "node), its records and record history, and the nodes table, to FILE:\n"
	  "gzip'd JSON lines with a header and a checksummed trailer\n"
	  "(docs/backup.md). Everything is read in one consistent snapshot, so\n"
	  "the server keeps serving. --user (comma-separated) or --users-file\n"
	  "(one name a line) limits it to those accounts (without the nodes\n"
	  "table). FILE (mode 0600: it holds password hashes) is written beside\n"
	  "its name and renamed; an existing FILE is replaced only with --force.\n"
	  "Operator settings (backoff, maintenance) are not backed up." },
	{ "restore", 1, 1,
	  OPT(OPT_USER) | OPT(OPT_USERS_FILE) | OPT(OPT_REPLACE) | OPT(OPT_DRY_RUN) |
		  OPT(OPT_QUIET) | OPT(OPT_JSON),
	  cmd_restore,
	  "FILE [--user NAME[,NAME...]]\n"
	  "                      [--users-file FILE] [--replace] [--dry-run] [--json]",
	  "restore a backup: accounts, passwords, records, history",
	  "Read FILE twice: first check every line, the counts and the checksum\n"
	  "(a truncated or damaged file is refused before anything is written)\n"
	  "and refuse if an account exists already, unless --replace; then\n"
	  "write each account in a transaction of its own, and add the nodes\n"
	  "that are missing. Running servers drop what they keep of each\n"
	  "account. --user / --users-file restore only those accounts;\n"
	  "--dry-run only checks." },
	{ "migrate", 0, 0,
	  OPT(OPT_FROM) | OPT(OPT_FORMAT) | OPT(OPT_PASSWORD_FILE) | OPT(OPT_DRY_RUN) |
		  OPT(OPT_QUIET),
	  cmd_migrate,
	  "--from SOURCE\n"
	  "                      [--format fsyncms|php|weave-minimal]\n"
	  "                      " PW_FILE " [--dry-run] [--quiet]",
	  "import users and data from an older Weave server",
	  "SOURCE is sqlite:FILE, sqlite:DIRECTORY or\n"
	  "mysql://USER@HOST[:PORT]/DATABASE[?OPTIONS].\n"
	  "Copy accounts, password hashes, e-mail and records from FSyncMS (an\n"
	  "SQLite file or MySQL, either fork; --format fsyncms, or its old name\n"
	  "minimal), the original PHP server (MySQL, or the directory of its\n"
	  "SQLite engine; --format php) or weave-minimal (its data directory;\n"
	  "--format weave-minimal). Without --format it is guessed. MD5, bcrypt,\n"
	  "{SSHA}, scrypt and weave-minimal's hashes are kept and replaced by\n"
	  "scrypt at each user's first login; a hash over the KDF caps is not\n"
	  "copied. Each account is one transaction; existing ones are skipped,\n"
	  "so a run can be repeated. The source is only read. The MySQL\n"
	  "password comes from --password-file or WEAVE_MIGRATE_PASSWORD, never\n"
	  "the URL; OPTIONS: socket=PATH, tls=off|on|verify (verify is the\n"
	  "default for another host), ca=FILE, joined by &. --dry-run reports\n"
	  "what it would copy. See docs/migration.md." },

	{ "backoff", 1, 1, 0, cmd_backoff, "SECONDS|off|default",
	  "send X-Weave-Backoff on every response",
	  "Make every process add X-Weave-Backoff: SECONDS (1-86400) within\n"
	  "5 seconds; 'off' stops it, 'default' follows weave.conf again." },
	{ "maintenance", 1, 1, OPT(OPT_RETRY_AFTER), cmd_maintenance,
	  "on|off|default [--retry-after SECONDS]",
	  "answer every request with 503 (or stop doing so)",
	  "'on': every request gets 503 with Retry-After and X-Weave-Backoff\n"
	  "within 5 seconds; 'off' serves again; 'default' follows weave.conf.\n"
	  "--retry-after (with 'on') sets the Retry-After seconds (1-86400) sent\n"
	  "with 503; 'off' and 'default' give Retry-After back to weave.conf." },
	{ "status", 0, 0, OPT(OPT_JSON), cmd_status, "[--json]",
	  "the server at a glance: database, schema, accounts, settings",
	  "Show the version, the configuration file, public_url, whether sign-up\n"
	  "is open, the database and its schema version, the number of accounts,\n"
	  "then the operator settings as 'settings' shows them. 'check' says what\n"
	  "is wrong.", CMD_NO_SCHEMA },
	{ "settings", 0, 0, OPT(OPT_JSON), cmd_settings, "[--json]",
	  "show backoff, maintenance and retry_after in force",
	  "Show the operator settings in force and where each comes from\n"
	  "(the database, set by weave-admin, or weave.conf)." },
	{ "cache", 0, 0, OPT(OPT_JSON), cmd_cache, "[--json]",
	  "show what the host-wide caches did",
	  "Read the account cache file (account_cache_file) that this host's\n"
	  "server processes share: how many password verifications (KDF runs)\n"
	  "they made since it was created, how often verified credentials,\n"
	  "kept account rows and info/collections answers served a request,\n"
	  "how many logins a verification stored in the database vouched for\n"
	  "(shared_hits), how many found max_concurrent_kdf reached (503), and how\n"
	  "many accounts and claims the file holds. Run as root or as the\n"
	  "server's user. Asks no database, so it answers while the database\n"
	  "is down.", CMD_NO_DATABASE },

	{ "secret", 0, 0, 0, cmd_secret, "",
	  "print a fresh random value for admin_secret, captcha_secret or cache_secret",
	  "Print 32 random bytes as 43 characters of base64url, for\n"
	  "admin_secret, captcha_secret or cache_secret in weave.conf (each at least\n"
	  "16 bytes long). Reads no config file, so it works while the one in\n"
	  "place is refused:\n\n"
	  "    echo \"admin_secret = $(weave-admin secret)\" >> weave.conf",
	  CMD_NO_CONFIG },

	{ "setup", 0, 0,
	  OPT(OPT_YES) | OPT(OPT_SERVER_NAME) | OPT(OPT_CERT) | OPT(OPT_KEY) |
		  OPT(OPT_FIRST_USER) | OPT(OPT_PASSWORD_FILE),
	  cmd_setup,
	  "[--yes --server-name HOST] [--cert FILE --key FILE]\n"
	  "                      [--first-user NAME " PW_FILE "]",
	  "install: database, weave.conf, Apache with HTTPS, first account",
	  SETUP_HELP, CMD_OWN_CONFIG },
	{ "check", 0, 0, OPT(OPT_MAIL) | OPT(OPT_JSON), cmd_check, "[--mail ADDRESS] [--json]",
	  "say what is wrong with this installation, and how to fix it",
	  CHECK_HELP, CMD_OWN_CONFIG },
};
#pragma GCC diagnostic pop

#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* Options: name, short name, and whether a value follows. */
static const struct {
	const char *name;
	const char *short_name;
	bool has_value;
} options[OPT__MAX] = {
	[OPT_CONFIG] = { "--config", NULL, true },
	[OPT_HELP] = { "--help", "-h", false },
	[OPT_JSON] = { "--json", NULL, false },
	[OPT_YES] = { "--yes", "-y", false },
	[OPT_QUIET] = { "--quiet", "-q", false },
	[OPT_EMAIL] = { "--email", NULL, true },
	[OPT_PASSWORD_FILE] = { "--password-file", NULL, true },
	[OPT_NODE] = { "--node", NULL, true },
	[OPT_ENABLED] = { "--enabled", NULL, false },
	[OPT_DISABLED] = { "--disabled", NULL, false },
	[OPT_NAME_LIKE] = { "--name-like", NULL, true },
	[OPT_SORT] = { "--sort", NULL, true },
	[OPT_LIMIT] = { "--limit", NULL, true },
	[OPT_CAPACITY] = { "--capacity", NULL, true },
	[OPT_CLEAR] = { "--clear", NULL, false },
	[OPT_RETRY_AFTER] = { "--retry-after", NULL, true },
	[OPT_FROM] = { "--from", NULL, true },
	[OPT_FORMAT] = { "--format", NULL, true },
	[OPT_DRY_RUN] = { "--dry-run", "-n", false },
	[OPT_BATCH] = { "--batch", NULL, true },
	[OPT_PAUSE] = { "--pause", NULL, true },
	[OPT_TOP] = { "--top", NULL, true },
	[OPT_REPLACE] = { "--replace", NULL, false },
	[OPT_MAIL] = { "--mail", NULL, true },
	[OPT_SERVER_NAME] = { "--server-name", NULL, true },
	[OPT_CERT] = { "--cert", NULL, true },
	[OPT_KEY] = { "--key", NULL, true },
	[OPT_FIRST_USER] = { "--first-user", NULL, true },
	[OPT_FORCE] = { "--force", "-f", false },
	[OPT_COLLECTION] = { "--collection", NULL, true },
	[OPT_SINCE] = { "--since", NULL, true },
	[OPT_AS_OF] = { "--as-of", NULL, true },
	[OPT_KEEP_NEWER] = { "--keep-newer", NULL, false },
	[OPT_USER] = { "--user", NULL, true },
	[OPT_USERS_FILE] = { "--users-file", NULL, true },
	[OPT_TO] = { "--to", NULL, true },
};

static const char exit_text[] =
	"Exit status: 0 success, 1 the operation failed (e.g. no such user),\n"
	"2 usage error, 3 configuration error, 4 database unavailable or error.\n";

#define HELP_WIDTH 80

/* lead, then text's words filled to HELP_WIDTH columns; continuation
 * lines start with indent blanks. Help fits an 80-column terminal. */
static void print_wrapped(FILE *out, const char *lead, size_t indent, const char *text)
{
	size_t col = strlen(lead);
	bool first = true;
	fputs(lead, out);
	for (const char *p = text + strspn(text, " \n"); *p != '\0'; first = false) {
		size_t n = strcspn(p, " \n");
		if (!first && col + 1 + n > HELP_WIDTH) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, n, out);
		col += n;
		p += n;
		p += strspn(p, " \n");
	}
	fputc('\n', out);
}

static void print_overview(FILE *out, const char *group)
{
	fputs("Usage: weave-admin [--config FILE] [--json] COMMAND [ARGS...] [--help]\n"
	      "       weave-admin help [COMMAND]\n\n", out);
	if (group == NULL)
		fputs("Administer a weave-server installation: schema, accounts, storage\n"
		      "nodes, data and operator settings. Reads the same weave.conf as\n"
		      "weave.fcgi.\n\n",
		      out);
	fputs("Commands:\n", out);
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const struct command *c = &commands[i];
		size_t glen = group ? strlen(group) : 0;
		if (group != NULL && (strncmp(c->words, group, glen) != 0 ||
				      c->words[glen] != ' '))
			continue;
		char lead[64];
		snprintf(lead, sizeof lead, "  %-16s ", c->words);
		print_wrapped(out, lead, 19, c->summary);
	}
	fputs("\nOptions:\n"
	      "  --config FILE   config file (default: $WEAVE_CONFIG, else\n"
	      "                  " WEAVE_DEFAULT_CONFIG ")\n"
	      "  --json          JSON output, for the commands that have it\n"
	      "  --help          show help; after a command, that command's help\n"
	      "  --version       show the version\n\n",
	      out);
	fputs("'weave-admin COMMAND --help' shows a command's arguments and options;\n"
	      "weave-admin(8) has everything.\n\n", out);
	fputs(exit_text, out);
}

static void print_command_help(const struct command *c)
{
	char lead[128];
	snprintf(lead, sizeof lead, "Usage: weave-admin [--config FILE] %s ", c->words);
	print_wrapped(stdout, lead, strlen(lead) <= 40 ? strlen(lead) : 11, c->synopsis);
	printf("\n%s\n\n", c->help);
	fputs(exit_text, stdout);
}

/* Is word the first word of some command ("user", "node", "db")? */
static bool is_group(const char *word)
{
	size_t len = strlen(word);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strncmp(commands[i].words, word, len) == 0 &&
		    commands[i].words[len] == ' ')
			return true;
	return false;
}

/* "add, delete, list, ..." for a group word. */
static void group_words(const char *group, char *out, size_t cap)
{
	size_t len = strlen(group), used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < NCOMMANDS && used < cap; i++) {
		const char *w = commands[i].words;
		if (strncmp(w, group, len) != 0 || w[len] != ' ')
			continue;
		int n = snprintf(out + used, cap - used, "%s%s", used ? ", " : "", w + len + 1);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* Edit distance of two short words (for "did you mean"). */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[64];
	if (la >= 63 || lb >= 63)
		return 64;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The command closest to what was typed ("usr add" -> "user add"), or NULL. */
static const char *closest_command(int argc, char **argv)
{
	char typed[128];
	const char *best = NULL;
	size_t best_d = 3;
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *w = commands[i].words;
		if (strchr(w, ' ') != NULL && argc >= 2)
			snprintf(typed, sizeof typed, "%s %s", argv[0], argv[1]);
		else
			snprintf(typed, sizeof typed, "%s", argv[0]);
		size_t d = distance(typed, w);
		if (d < best_d) {
			best_d = d;
			best = w;
		}
	}
	return best;
}

/* The command named by argv[0] (and argv[1]); *used gets the word count. */
static const struct command *find_command(int argc, char **argv, int *used)
{
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *w = commands[i].words;
		const char *space = strchr(w, ' ');
		if (space == NULL) {
			if (strcmp(w, argv[0]) == 0) {
				*used = 1;
				return &commands[i];
			}
			continue;
		}
		size_t glen = (size_t)(space - w);
		if (argc >= 2 && strlen(argv[0]) == glen &&
		    strncmp(w, argv[0], glen) == 0 && strcmp(space + 1, argv[1]) == 0) {
			*used = 2;
			return &commands[i];
		}
	}
	return NULL;
}

static int option_index(const char *arg, size_t len)
{
	for (int o = 0; o < OPT__MAX; o++) {
		const char *n = options[o].name;
		const char *s = options[o].short_name;
		if ((strlen(n) == len && strncmp(n, arg, len) == 0) ||
		    (s != NULL && strlen(s) == len && strncmp(s, arg, len) == 0))
			return o;
	}
	return -1;
}

/* Options and positional arguments after the command words. */
static int parse_args(const struct command *c, int argc, char **argv,
		      struct args *a)
{
	bool only_positional = false;
	memset(a, 0, sizeof *a);
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		if (only_positional || arg[0] != '-' || arg[1] == '\0') {
			if (a->npos == ARGS_MAX || a->npos >= c->max_args)
				return usage_error("too many arguments ('%s')", arg);
			a->pos[a->npos++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_positional = true;
			continue;
		}
		const char *eq = strchr(arg, '=');
		size_t len = eq && arg[1] == '-' ? (size_t)(eq - arg) : strlen(arg);
		int o = option_index(arg, len);
		if (o < 0)
			return usage_error("unknown option '%.*s'", (int)len, arg);
		if (o != OPT_CONFIG && o != OPT_HELP && !(c->options & OPT(o)))
			return usage_error("option %s does not apply to '%s'",
					   options[o].name, c->words);
		if (!options[o].has_value) {
			if (eq != NULL && len < strlen(arg))
				return usage_error("option %s takes no value", options[o].name);
			a->opt[o] = "";
		} else if (eq != NULL && len < strlen(arg)) {
			a->opt[o] = eq + 1;
		} else if (i + 1 < argc) {
			a->opt[o] = argv[++i];
		} else {
			return usage_error("option %s needs a value", options[o].name);
		}
	}
	return EXIT_OK;
}

/* Why running servers cannot be told of account changes ("": they can,
 * or none runs on this host). */
static char board_error[4200];

/*
 * Account changes reach the servers' kept rows through the board that
 * weave.fcgi creates (change_board.h). No board: no server on this host
 * keeps rows, so there is nobody to tell.
 */
static void open_change_board(const struct config *c)
{
	char path[4096];
	struct stat st;
	if (change_board_path(c, path, sizeof path) < 0)
		return;
	if (stat(path, &st) != 0 && errno == ENOENT)
		return;
	change_board_open(path, false, board_error, sizeof board_error);
}

/* Before 'db init', say so once instead of every statement's SQL error. */
static int schema_installed(void)
{
	int64_t version = 0;
	enum db_status st = db_schema_version(&version);
	if (st != DB_OK)
		return db_fail(st, "reading the schema version");
	if (version == 0)
		return fail(EXIT_DATABASE, "database %s has no weave schema yet: run "
			    "'weave-admin db init'", admin_cfg.db_name);
	return EXIT_OK;
}

/* The command line, as far as the dispatcher has read it. */
struct invocation {
	const char *config_path;    /* --config, before or after the command */
	bool json;                  /* --json before the command */
	bool help;                  /* "help COMMAND" */
	const struct command *cmd;
	struct args args;
};

/* Not an exit code: the dispatcher goes on to its next step. */
#define GO_ON (-1)

static bool is_help_option(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* Options before the command; *i ends at the command word. */
static int global_options(int argc, char **argv, int *i, struct invocation *inv)
{
	for (; *i < argc && argv[*i][0] == '-'; (*i)++) {
		const char *arg = argv[*i];
		if (strcmp(arg, "--json") == 0) {
			inv->json = true;
		} else if (is_help_option(arg)) {
			print_overview(stdout, NULL);
			return EXIT_OK;
		} else if (strcmp(arg, "--version") == 0) {
			puts("weave-admin " PACKAGE_VERSION);
			return EXIT_OK;
		} else if (strcmp(arg, "--config") == 0 && *i + 1 < argc) {
			inv->config_path = argv[++*i];
		} else if (strncmp(arg, "--config=", 9) == 0) {
			inv->config_path = arg + 9;
		} else {
			return usage_error("unknown or incomplete option '%s'", arg);
		}
	}
	if (*i >= argc)
		return usage_error("no command given");
	return GO_ON;
}

/* argv[0] is a group ("user") but argv[1] none of its commands. */
static int unknown_in_group(int argc, char **argv, const char *near)
{
	char subs[512];
	group_words(argv[0], subs, sizeof subs);
	if (argc < 2)
		fprintf(stderr, "weave-admin: '%s' needs one of: %s\n", argv[0], subs);
	else if (near != NULL && strchr(near, ' ') != NULL)
		fprintf(stderr, "weave-admin: unknown command '%s %s'; did you mean '%s'? "
			"'%s' takes: %s\n", argv[0], argv[1], near, argv[0], subs);
	else
		fprintf(stderr, "weave-admin: unknown command '%s %s'; '%s' takes: %s\n",
			argv[0], argv[1], argv[0], subs);
	fprintf(stderr, "Try 'weave-admin %s --help'.\n", argv[0]);
	return EXIT_USAGE;
}

/* No command matches argv: a group's overview if asked, else a usage error
 * with the nearest command. */
static int unknown_command(int argc, char **argv, bool help_word)
{
	const char *near = closest_command(argc, argv);
	if (is_group(argv[0])) {
		if (help_word || (argc >= 2 && is_help_option(argv[1]))) {
			print_overview(stdout, argv[0]);
			return EXIT_OK;
		}
		return unknown_in_group(argc, argv, near);
	}
	if (near != NULL)
		fprintf(stderr, "weave-admin: unknown command '%s'; did you mean '%s'?\n",
			argv[0], near);
	else
		fprintf(stderr, "weave-admin: unknown command '%s'\n", argv[0]);
	fputs("Try 'weave-admin help'.\n", stderr);
	return EXIT_USAGE;
}

/* The command and its arguments; help printed here ends the run. */
static int read_command(int argc, char **argv, struct invocation *inv)
{
	/* "help [COMMAND]" is "[COMMAND] --help". */
	inv->help = strcmp(argv[0], "help") == 0;
	if (inv->help && argc == 1) {
		print_overview(stdout, NULL);
		return EXIT_OK;
	}
	argc -= inv->help;
	argv += inv->help;
	int used = 0;
	inv->cmd = find_command(argc, argv, &used);
	if (inv->cmd == NULL)
		return unknown_command(argc, argv, inv->help);
	admin_set_command(inv->cmd);
	int rc = parse_args(inv->cmd, argc - used, argv + used, &inv->args);
	return rc == EXIT_OK ? GO_ON : rc;
}

/* What the table cannot say per option: help, --json placement, counts. */
static int check_args(struct invocation *inv)
{
	const struct command *c = inv->cmd;
	struct args *a = &inv->args;
	if (has_opt(a, OPT_HELP) || inv->help) {
		print_command_help(c);
		return EXIT_OK;
	}
	/* --json before the command counts as after it. */
	if (inv->json && !(c->options & OPT(OPT_JSON)))
		return usage_error("'%s' has no JSON output", c->words);
	if (inv->json)
		a->opt[OPT_JSON] = "";
	if (a->npos < c->min_args)
		return usage_error("'%s' needs %s", c->words,
				   c->min_args - a->npos == 1 && a->npos == 0
					   ? "an argument"
					   : "more arguments");
	if (has_opt(a, OPT_CONFIG))
		inv->config_path = a->opt[OPT_CONFIG];
	return GO_ON;
}

/* A users row changed while a board could not be opened: say what that means. */
static void note_missed_bumps(void)
{
	if (change_board_missed_bumps() > 0 && board_error[0] != '\0' &&
	    admin_cfg.account_cache_seconds > 0)
		fprintf(stderr,
			"weave-admin: note: running servers may answer from the old "
			"account data for up to account_cache_seconds (%" PRId64 " s): %s\n",
			admin_cfg.account_cache_seconds, board_error);
}

/* The usual run: weave.conf, the database unless the row says none, the
 * change board (cache reads it; others bump it), the schema unless the
 * row says it may be missing. */
static int run_configured(const struct command *c, const struct args *a)
{
	char err[512];
	if (config_load(&admin_cfg, admin_config_path, err, sizeof err) < 0) {
		fprintf(stderr, "weave-admin: %s\n", err);
		return EXIT_CONFIG;
	}
	if (!(c->flags & CMD_NO_DATABASE))
		db_configure(&admin_cfg);
	open_change_board(&admin_cfg);
	int rc = c->flags & (CMD_NO_SCHEMA | CMD_NO_DATABASE) ? EXIT_OK : schema_installed();
	if (rc == EXIT_OK)
		rc = c->run(a);
	note_missed_bumps();
	change_board_close();
	return rc;
}

/* Prepare what the command's flags ask for, run it, release it all. */
static int run_command(const struct invocation *inv)
{
	const struct command *c = inv->cmd;
	if (c->flags & CMD_NO_CONFIG) /* for a config that may not load yet */
		return c->run(&inv->args);
	admin_config_path = inv->config_path != NULL ? inv->config_path
						     : config_path_from_env();
	config_defaults(&admin_cfg);
	int rc = c->flags & CMD_OWN_CONFIG ? c->run(&inv->args)
					   : run_configured(c, &inv->args);
	db_disconnect();
	config_free(&admin_cfg);
	return rc;
}

int main(int argc, char **argv)
{
	struct invocation inv = { 0 };
	int i = 1;

	log_set_program("weave-admin");
	log_set_level(LOG_LEVEL_ERROR);
	db_allow_long_statements(); /* db_read_timeout is weave.fcgi's */
	int rc = global_options(argc, argv, &i, &inv);
	if (rc == GO_ON)
		rc = read_command(argc - i, argv + i, &inv);
	if (rc == GO_ON)
		rc = check_args(&inv);
	if (rc == GO_ON)
		rc = run_command(&inv);
	return rc;
}
