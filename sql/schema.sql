-- weave-server schema for MariaDB / MySQL (InnoDB).
--
-- `weave-admin db init` runs this file (it is compiled into the tool) on an
-- empty database and records the version in weave_schema; later releases
-- add numbered upgrade steps that `db init` / `db upgrade` apply in place.
--
-- Timestamps are integer centiseconds (seconds * 100) so that the wire
-- format "1265402837.12" is exact. Record ids and collection names are
-- VARBINARY so they compare case-sensitively (base64url ids differ only
-- in case).

CREATE TABLE IF NOT EXISTS weave_schema (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT,
  version INT NOT NULL,
  installed BIGINT NOT NULL COMMENT 'seconds since the epoch',
  PRIMARY KEY (id)
) ENGINE=InnoDB;
-- Galera replicates only tables with a primary key well: schema version 4
-- gives the two tables that had none one.
ALTER TABLE weave_schema ADD COLUMN IF NOT EXISTS id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY FIRST;

CREATE TABLE IF NOT EXISTS users (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT,
  username VARBINARY(32) NOT NULL COMMENT 'lower case, [a-z0-9._-]',
  password_hash VARBINARY(255) NOT NULL COMMENT '$scrypt$..., or a legacy hash',
  email VARCHAR(254) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  status TINYINT NOT NULL DEFAULT 1 COMMENT '1 enabled, 0 disabled, 2 moving (docs/shards.md)',
  quota_kb BIGINT NULL COMMENT 'NULL: quota_kb of weave.conf; 0: no quota',
  node VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL
    COMMENT 'storage node base URL; NULL: public_url of weave.conf',
  alert TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL
    COMMENT 'sent as X-Weave-Alert',
  last_write BIGINT NOT NULL DEFAULT 0
    COMMENT 'centiseconds; every new write is stamped strictly above it',
  created BIGINT NOT NULL DEFAULT 0 COMMENT 'seconds since the epoch',
  PRIMARY KEY (id),
  UNIQUE KEY username (username)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Operator settings that every weave.fcgi process reads (within a few
-- seconds), written by `weave-admin backoff` and `weave-admin maintenance`.
-- They override the keys of the same name in weave.conf.
CREATE TABLE IF NOT EXISTS settings (
  name VARBINARY(64) NOT NULL,
  value VARCHAR(255) NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB;

-- One pending password-reset code per user (only its SHA-256 is kept).
CREATE TABLE IF NOT EXISTS reset_codes (
  user_id INT UNSIGNED NOT NULL,
  code_hash VARBINARY(32) NOT NULL,
  expires BIGINT NOT NULL COMMENT 'seconds since the epoch',
  PRIMARY KEY (user_id)
) ENGINE=InnoDB;

-- Successful registrations per client address, for the rate limit.
CREATE TABLE IF NOT EXISTS registration_log (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  address VARBINARY(64) NOT NULL,
  created BIGINT NOT NULL COMMENT 'seconds since the epoch',
  PRIMARY KEY (id),
  KEY by_address (address, created),
  KEY by_created (created)
) ENGINE=InnoDB;
ALTER TABLE registration_log ADD COLUMN IF NOT EXISTS id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY FIRST;

-- Failed logins and password-reset requests per account name and per
-- client address (throttle.c): every process sees the same counters.
-- Seconds since the epoch; a row is live until `expires`.
CREATE TABLE IF NOT EXISTS throttle (
  kind TINYINT UNSIGNED NOT NULL
    COMMENT '1 logins per name, 2 logins per address, 3 resets per name, 4 resets per address',
  subject VARBINARY(64) NOT NULL COMMENT 'user name or client address',
  events INT UNSIGNED NOT NULL COMMENT 'failures (or requests) in the window',
  window_start BIGINT NOT NULL,
  locked_until BIGINT NOT NULL DEFAULT 0 COMMENT '0: not locked',
  expires BIGINT NOT NULL COMMENT 'the later of the window end and the lock end',
  PRIMARY KEY (kind, subject),
  KEY by_expires (expires)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS wbo (
  user_id INT UNSIGNED NOT NULL,
  collection VARBINARY(32) NOT NULL,
  id VARBINARY(64) NOT NULL,
  parentid VARBINARY(64) NULL,
  predecessorid VARBINARY(64) NULL,
  sortindex INT NULL COMMENT 'signed: -999999999 .. 999999999',
  modified BIGINT NOT NULL COMMENT 'centiseconds',
  payload MEDIUMBLOB NULL COMMENT 'the JSON string value, exactly as sent; NULL: never sent',
  payload_size INT UNSIGNED NOT NULL DEFAULT 0 COMMENT 'bytes, for quota',
  expires BIGINT NOT NULL DEFAULT 9223372036854775807
    COMMENT 'absolute expiry in centiseconds (ttl)',
  PRIMARY KEY (user_id, collection, id),
  KEY by_modified (user_id, collection, modified)
) ENGINE=InnoDB;
-- Earlier releases kept a key for each of the parentid and predecessorid
-- filters and one for sort=index. No client we know sends those filters
-- (docs/protocol.md, "What the 1.0 add-on sends"), and none of Mozilla's
-- later servers kept a key on sortindex: sort=index reads the collection
-- through by_modified (newer=) or the primary key and sorts what it read,
-- a few milliseconds more for a large collection's first download. Each
-- key cost every record written an index entry; the sortindex one, whose
-- values land anywhere in the account's range, about a quarter of the
-- database's work per upload (docs/performance.md, "Two keys fewer" and
-- "Uploads, session 13"). A key on expires went too: weave-admin purge
-- walks the accounts through the primary key instead (tools/db_admin.c),
-- and that key's entries, one per record like the primary key's, were a
-- fifth of the database's work per upload over many accounts ("Uploads,
-- session 16"). Dropping a key is instant, and so is this statement once
-- they are gone.
ALTER TABLE wbo DROP INDEX IF EXISTS by_parentid, DROP INDEX IF EXISTS by_predecessorid,
  DROP INDEX IF EXISTS by_sortindex, DROP INDEX IF EXISTS by_expires;

-- Challenges that already verified once (captcha.c), kept until they expire.
CREATE TABLE IF NOT EXISTS captcha_used (nonce VARBINARY(16) NOT NULL, expires BIGINT NOT NULL, PRIMARY KEY (nonce), KEY by_expires (expires)) ENGINE=InnoDB;

-- Storage nodes that new accounts are spread over (`weave-admin node ...`,
-- docs/protocol.md, Storage nodes): a new account goes to the node with
-- room and the fewest accounts, and users.node holds its URL. An empty
-- table means every account lives on this server (public_url of
-- weave.conf).
CREATE TABLE IF NOT EXISTS nodes (
  url VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
    COMMENT 'base URL ending in /, as in users.node',
  capacity INT UNSIGNED NULL COMMENT 'most accounts; NULL: unlimited',
  created BIGINT NOT NULL DEFAULT 0 COMMENT 'seconds since the epoch',
  PRIMARY KEY (url)
) ENGINE=InnoDB;

-- Every account that a statement changed (a write's last_write, password,
-- status, e-mail, quota, alert, node, a new or deleted account), whoever
-- ran it, logged by the triggers below in the same transaction. Each web
-- server reads the last seconds of it about once a second so that its
-- processes drop what they keep of those accounts (src/change_log.h);
-- rows older than ten minutes are deleted by the same readers.
CREATE TABLE IF NOT EXISTS account_changes (
  seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  user_id INT UNSIGNED NOT NULL,
  changed BIGINT NOT NULL COMMENT 'centiseconds, the database clock',
  PRIMARY KEY (seq),
  KEY by_changed (changed)
) ENGINE=InnoDB;
CREATE TRIGGER IF NOT EXISTS users_logged_insert AFTER INSERT ON users FOR EACH ROW INSERT INTO account_changes (user_id, changed) VALUES (NEW.id, CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 100) AS SIGNED));
CREATE TRIGGER IF NOT EXISTS users_logged_update AFTER UPDATE ON users FOR EACH ROW INSERT INTO account_changes (user_id, changed) VALUES (NEW.id, CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 100) AS SIGNED));
CREATE TRIGGER IF NOT EXISTS users_logged_delete AFTER DELETE ON users FOR EACH ROW INSERT INTO account_changes (user_id, changed) VALUES (OLD.id, CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 100) AS SIGNED));
-- Verified passwords shared by every web server (src/shared_credential.h):
-- when the password KDF accepts a login, a keyed MAC of (account id,
-- fingerprint of the stored hash, password) under a key derived from
-- cache_secret of weave.conf (never stored here), and when it was made. A
-- later login on any web server with the same cache_secret whose MAC
-- matches, within auth_cache_seconds, skips the KDF. A cache: never backed
-- up, deleted with the account and on a password change (src/db_user.c),
-- useless without the key, and dead by construction once the stored hash
-- changes. Apart from users so that writing it fires no trigger of the
-- change log. Schema version 5.
CREATE TABLE IF NOT EXISTS login_verifiers (
  user_id INT UNSIGNED NOT NULL,
  mac BINARY(32) NOT NULL COMMENT 'HMAC-SHA256, src/cache_key.h',
  made BIGINT NOT NULL COMMENT 'seconds since the epoch, the web server clock',
  PRIMARY KEY (user_id)
) ENGINE=InnoDB;
-- Record history (src/db_history.c, weave-admin user history / restore):
-- while history_days (weave.conf) is above 0, a write that replaces or
-- deletes records first copies them here, in its own transaction, so a
-- stale device's overwrite can be undone. Kept history_days, at most
-- history_max_kb per account (the oldest writes go first), apart from the
-- quota; weave-admin purge removes what is older.
--
-- One row per write (per collection it touched): what it did and which
-- client did it. collection is empty for DELETE storage (every one).
CREATE TABLE IF NOT EXISTS write_log (
  user_id INT UNSIGNED NOT NULL,
  stamp BIGINT NOT NULL COMMENT 'centiseconds: the timestamp of the write',
  collection VARBINARY(32) NOT NULL,
  previous BIGINT NOT NULL COMMENT 'the account last_write before this write',
  written INT UNSIGNED NOT NULL COMMENT 'records uploaded',
  replaced INT UNSIGNED NOT NULL COMMENT 'of those, records that existed (kept)',
  deleted INT UNSIGNED NOT NULL COMMENT 'records deleted (kept)',
  bytes BIGINT NOT NULL COMMENT 'payload bytes of the versions kept',
  agent VARBINARY(255) NOT NULL COMMENT 'User-Agent of the client, cut at 255 bytes',
  PRIMARY KEY (user_id, stamp, collection),
  KEY by_stamp (stamp)
) ENGINE=InnoDB;

-- The versions: each row is a record as it was just before the write
-- stamped `replaced` replaced or deleted it. The key puts a write's
-- versions together (a write appends; purge and the cap remove whole
-- writes); a restore reads one account's versions, which is rare.
CREATE TABLE IF NOT EXISTS wbo_history (
  user_id INT UNSIGNED NOT NULL,
  collection VARBINARY(32) NOT NULL,
  id VARBINARY(64) NOT NULL,
  replaced BIGINT NOT NULL COMMENT 'centiseconds: the write that replaced or deleted it',
  parentid VARBINARY(64) NULL,
  predecessorid VARBINARY(64) NULL,
  sortindex INT NULL,
  modified BIGINT NOT NULL,
  payload MEDIUMBLOB NULL,
  payload_size INT UNSIGNED NOT NULL DEFAULT 0,
  expires BIGINT NOT NULL,
  PRIMARY KEY (user_id, replaced, collection, id)
) ENGINE=InnoDB;

-- Per account: bytes of kept versions (for history_max_kb), and the time
-- from which the history is whole (a restore as of an earlier time is
-- refused: versions replaced before it were dropped or never kept).
CREATE TABLE IF NOT EXISTS history_usage (
  user_id INT UNSIGNED NOT NULL,
  bytes BIGINT NOT NULL,
  since BIGINT NOT NULL COMMENT 'centiseconds',
  PRIMARY KEY (user_id)
) ENGINE=InnoDB;

-- Moves of accounts between storage nodes (weave-admin user move,
-- docs/shards.md): a row while a move is unfinished, so that running the
-- command again after a crash goes on from its phase. A node is a
-- users.node value; NULL is public_url, whose records are in this
-- database. Schema version 6.
CREATE TABLE IF NOT EXISTS moves (
  user_id INT UNSIGNED NOT NULL,
  source VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'users.node before',
  target VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NULL COMMENT 'users.node after',
  phase TINYINT NOT NULL COMMENT '1 copying, 2 frozen (storage answers 503), 3 switched (cleaning the source)',
  status_before TINYINT NOT NULL COMMENT 'users.status to give back at the switch',
  started BIGINT NOT NULL COMMENT 'seconds since the epoch',
  PRIMARY KEY (user_id)
) ENGINE=InnoDB;
