# shellcheck shell=bash
# shellcheck disable=SC2034 # its variables are read by bench/run, which sources it
# bench/php-anchor.sh: the PHP 1.0 anchor, sourced by bench/run.
# Mozilla's 2009 Weave PHP server (server/sync/1.0 of a checkout of
# https://github.com/mozillalabs-syncer/weaveserver-obsolote, whose path is
# BENCH_PHP_SERVER) served by a second private Apache (prefork + mod_php)
# on another 127.0.0.1 port, with its own database (weavephp) and schema
# on this stack's MariaDB, so that the same wrk scripts can be sent to it
# and to weave.fcgi in the same run. None of its code is in this project:
# it is copied into the stack's scratch directory at run time, its config
# written there from its .dist, and the edits PHP 8.2 needs applied to the
# copy (docs/performance.md, "The PHP 1.0 anchor").
# Uses from bench/run: STACK, DBPORT, PASSWORD, sql, say, die, wrk_measure,
# settle, ratio, row, RESULTS, ACCESS, BASE_URL, WEB_BASE, RUN_NO.

PHP_DIR='' PHP_PORT='' PHP_BASE=/php/1.0/
PHP_NOTES=

php_anchor_enabled() { [[ -n ${BENCH_PHP_SERVER:-} ]]; }

# The copy, with the one edit PHP 8 needs to parse it: array and string
# offsets written with braces ($a{$k}, removed in PHP 8.0) become brackets
# ($a[$k]): report_problem's status line, the JSON outputter's id lists
# and the SQLite store's path (the last two are not run here). The same
# expression with other brackets: no request does anything else.
php_anchor_copy() { # DEST
	local src=$BENCH_PHP_SERVER/server/sync/1.0 f
	[[ -f $src/index.php && -f $src/default_constants.php.dist ]] ||
		die "BENCH_PHP_SERVER=$BENCH_PHP_SERVER has no server/sync/1.0 (a checkout of weaveserver-obsolote?)"
	mkdir -p "$1"
	cp "$src"/*.php "$src/default_constants.php.dist" "$1/"
	# shellcheck disable=SC2016 # PHP's dollars, not the shell's
	sed -i 's/\(\$[A-Za-z_][A-Za-z_0-9]*\){\([^{}]*\)}/\1[\2]/g' "$1"/*.php
	for f in "$1"/*.php; do
		php -l "$f" >/dev/null 2>&1 || die "PHP 1.0 anchor: $f does not parse under $(php -r 'echo PHP_VERSION;')"
	done
}

# Its config: the .dist with the private MariaDB (TCP, this stack's port:
# the host constant goes into PDO's DSN as is), its database and user.
php_anchor_config() { # DIR DB_PASSWORD
	sed -e "s/'localhost'/'127.0.0.1;port=$DBPORT'/" \
		-e "s/_DB', 'weave'/_DB', 'weavephp'/" \
		-e "s/_USER', 'weave'/_USER', 'weavephp'/" \
		-e "s/_PASS', 'weave'/_PASS', '$2'/" \
		"$1/default_constants.php.dist" >"$1/default_constants.php"
	grep -q "port=$DBPORT" "$1/default_constants.php" || die "PHP 1.0 anchor: its .dist has no 'localhost' host"
}

# The tables as its code documents them (weave_storage.php and
# server/user/1/weave_user.php, MySQL), in its own database.
php_anchor_schema() { # DB_PASSWORD
	sql -e "CREATE DATABASE weavephp;
		CREATE USER 'weavephp'@'127.0.0.1' IDENTIFIED BY '$1';
		GRANT ALL ON weavephp.* TO 'weavephp'@'127.0.0.1';
		CREATE TABLE weavephp.users (id int(11) NOT NULL PRIMARY KEY auto_increment,
			username varchar(32), md5 varbinary(32), email varbinary(64), location text,
			status tinyint(4) default '1', alert text, KEY (username)) ENGINE=InnoDB;
		CREATE TABLE weavephp.collections (userid int(11) NOT NULL, collectionid smallint(6) NOT NULL,
			name varchar(32) NOT NULL, PRIMARY KEY (userid, collectionid),
			KEY nameindex (userid, name)) ENGINE=InnoDB;
		CREATE TABLE weavephp.wbo (username int(11) NOT NULL, collection smallint(6) NOT NULL default '0',
			id varbinary(64) NOT NULL default '', parentid varbinary(64) default NULL,
			predecessorid varbinary(64) default NULL, sortindex int(11) default NULL,
			modified bigint(20) default NULL, payload longtext, payload_size int(11) default NULL,
			PRIMARY KEY (username, collection, id), KEY parentindex (username, collection, parentid),
			KEY modified (username, collection, modified), KEY weightindex (username, collection, sortindex),
			KEY predecessorindex (username, collection, predecessorid),
			KEY size_index (username, payload_size)) ENGINE=InnoDB"
}

# Apache for it: the limits of tools/stack.sh's (prefork, same server and
# keep-alive settings, same log format) with mod_php instead of mod_fcgid.
php_anchor_apache_conf() { # DIR SCRIPTS
	local m=${STACK_APACHE_MODULES:-/usr/lib/apache2/modules} php
	php=$(find "$m" -name 'libphp*.so' | head -n 1)
	[[ -n $php ]] || die "PHP 1.0 anchor: no mod_php in $m (libapache2-mod-php)"
	mkdir -p "$1/run" "$1/htdocs"
	cat >"$1/httpd.conf" <<-EOF
		# Private Apache + mod_php for the PHP 1.0 anchor (bench/php-anchor.sh).
		ServerRoot "$1"
		ServerName 127.0.0.1
		Listen 127.0.0.1:$PHP_PORT
		PidFile "$1/httpd.pid"
		DefaultRuntimeDir "$1/run"
		Mutex file:$1/run default
		ErrorLog "$1/error.log"
		LogLevel warn
		LogFormat "%h %t \"%r\" %>s %b %Dus" weave
		CustomLog "$1/access.log" weave
		LoadModule mpm_prefork_module $m/mod_mpm_prefork.so
		StartServers 8
		MinSpareServers 4
		MaxSpareServers 64
		ServerLimit 64
		MaxRequestWorkers 64
		MaxConnectionsPerChild 0
		KeepAlive On
		MaxKeepAliveRequests 1000
		KeepAliveTimeout 5
		LoadModule authz_core_module $m/mod_authz_core.so
		LoadModule alias_module $m/mod_alias.so
		LoadModule mime_module $m/mod_mime.so
		LoadModule php_module $php
		User $STACK_WWW_USER
		Group $STACK_WWW_USER
		TypesConfig /etc/mime.types
		<Directory />
		    AllowOverride None
		    Require all denied
		</Directory>
		DocumentRoot "$1/htdocs"
		<Directory "$1/htdocs">
		    Require all granted
		</Directory>
		# /php/1.0/USER/... runs index.php with PATH_INFO /USER/..., as its
		# README's Alias to the sync directory's index.php does.
		Alias ${PHP_BASE%/} "$2/index.php"
		<Directory "$2">
		    Require all granted
		    AcceptPathInfo On
		    <FilesMatch "\.php\$">
		        SetHandler application/x-httpd-php
		    </FilesMatch>
		    # PHP 8.2 deprecates utf8_encode, which it calls on every
		    # request: keep the notices out of the error log.
		    php_admin_value error_reporting 8191
		    php_admin_flag display_errors off
		    php_admin_flag log_errors on
		</Directory>
	EOF
	# 8191 is E_ALL & ~E_DEPRECATED & ~E_USER_DEPRECATED in PHP 8.
}

php_anchor_apache_start() {
	local dir=$STACK/apache-php i log
	rm -f "$dir/httpd.pid"
	for log in "$dir/error.log" "$dir/access.log"; do (umask 077 && touch "$log"); done
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C apache2 -f "$dir/httpd.conf" -t \
		>"$dir/configtest.log" 2>&1 || die "PHP 1.0 anchor: Apache config test failed ($dir/configtest.log)"
	setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C apache2 -f "$dir/httpd.conf" -k start \
		</dev/null >"$dir/start.log" 2>&1 || die "PHP 1.0 anchor: Apache did not start ($dir/start.log)"
	for ((i = 0; i < 300; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$PHP_PORT") 2>/dev/null && return 0
		sleep 0.1
	done
	die "PHP 1.0 anchor: Apache did not come up on port $PHP_PORT"
}

# As after a reboot: new Apache processes (it keeps nothing else).
php_anchor_restart() {
	stack_apache_stop "$STACK/apache-php" >&2
	php_anchor_apache_start
}

# Accounts PREFIX<FIRST> .. PREFIX<COUNT-1> in its users table, with its
# password scheme (unsalted MD5, weave_authentication.php), and a copy of
# the records the same names have in weave's database, mapped to its
# collection numbers (WEAVE_COLLECTION_KEYS in weave_storage.php).
php_anchor_users() { # PREFIX COUNT [FIRST]
	sql -e "INSERT INTO weavephp.users (username, md5, status)
		SELECT CONCAT('$1', seq), MD5('$PASSWORD'), 1 FROM seq_${3:-0}_to_$(($2 - 1));
		INSERT INTO weavephp.wbo (username, collection, id, sortindex, modified, payload, payload_size)
		SELECT p.id, FIELD(w.collection, 'clients', 'crypto', 'forms', 'history', 'keys', 'meta',
			'bookmarks', 'prefs', 'tabs', 'passwords'), w.id, w.sortindex, w.modified, w.payload,
			w.payload_size
		FROM weavephp.users p JOIN weave.users u ON u.username = p.username
		JOIN weave.wbo w ON w.user_id = u.id
		WHERE p.username LIKE '$1%' AND FIELD(w.collection, 'clients', 'crypto', 'forms',
			'history', 'keys', 'meta', 'bookmarks', 'prefs', 'tabs', 'passwords') > 0"
}

# One 1-record POST and one poll, as an account of its own (phpcheck0,
# outside every measured name): both must answer 200, the POST store its
# record and the poll show it, or the anchor is not measuring what it
# should.
php_anchor_check() {
	local url=http://127.0.0.1:$PHP_PORT${PHP_BASE}phpcheck0 out
	php_anchor_users phpcheck 1
	out=$(curl -s -u "phpcheck0:$PASSWORD" -w ' %{http_code}' -d '[{"id":"check1","payload":"{}"}]' \
		"$url/storage/history") || true
	[[ $out == *'"success":["check1"]'*' 200' ]] ||
		die "PHP 1.0 anchor: POST storage/history answered: $out (see $PHP_DIR/error.log)"
	out=$(curl -s -u "phpcheck0:$PASSWORD" -w ' %{http_code}' "$url/info/collections") || true
	[[ $out == *'"history"'*' 200' ]] || die "PHP 1.0 anchor: GET info/collections answered: $out"
}

php_anchor_start() {
	local pw dir=$STACK/php/sync
	say "PHP 1.0 anchor: $BENCH_PHP_SERVER under Apache prefork + mod_php"
	# mod_php, PDO MySQL, and mbstring: it sizes payloads with mb_strlen.
	"$ROOT/tools/deps" libapache2-mod-php php-mysql php-mbstring curl >&2
	pw=$(/usr/bin/python3 -c 'import secrets; print(secrets.token_hex(16))')
	php_anchor_copy "$dir"
	php_anchor_config "$dir" "$pw"
	chmod 0711 "$STACK/php"
	chgrp -R "$STACK_WWW_USER" "$dir" && chmod 0750 "$dir" && chmod 0640 "$dir"/*
	php_anchor_schema "$pw"
	PHP_PORT=$(stack_free_port)
	PHP_DIR=$STACK/apache-php
	php_anchor_apache_conf "$PHP_DIR" "$dir"
	php_anchor_apache_start
}

# Point wrk_measure (and settle) at weave or at the anchor.
php_target() { # weave|php
	if [[ $1 == php ]]; then
		ACCESS=$PHP_DIR/access.log BASE_URL=http://127.0.0.1:$PHP_PORT/
	else
		ACCESS=$STACK/apache/access.log BASE_URL=http://127.0.0.1:$WEBPORT/
	fi
}

# Records with ids LIKE IDS a server holds in accounts LIKE, and 100 x the
# POSTs to paths REGEX it answered 200 (from its whole access log): equal
# when every POST stored its 100 records (the anchor answers 200 with a
# "failed" list too). IDS keeps out the records loaded before the run.
php_stored() { # weave|php LIKE REGEX IDS
	local have posts log=$STACK/apache/access.log
	if [[ $1 == php ]]; then
		log=$PHP_DIR/access.log
		have=$(sql -e "SELECT COUNT(*) FROM weavephp.wbo w JOIN weavephp.users u ON u.id = w.username
			WHERE u.username LIKE '$2' AND w.collection = 4 AND w.id LIKE '$4'")
	else
		have=$(sql -e "SELECT COUNT(*) FROM wbo w JOIN users u ON u.id = w.user_id
			WHERE u.username LIKE '$2' AND w.collection = 'history' AND w.id LIKE '$4'")
	fi
	posts=$(grep -cE "POST $3/storage/history HTTP/1.1\" 200 " "$log") || true
	echo "$1 $have records for $((posts * 100)) answered"
}

# ---------------------------------------------------------------- turns
# The anchor's passes for bench/run turns, right after the web ceiling and
# before weave's: cold (its Apache restarted, one pass asking each account
# once) and warm (going round the same accounts for TURN_WARM_SECS). It
# keeps nothing between requests, so cold and warm should match; both are
# run so that each of weave's rows has its own. Sets PHP_COLD, PHP_WARM
# (req/s) for weave's "vs PHP" column.
PHP_COLD=- PHP_WARM=-
php_turns() { # OP N CONC
	local op=$1 n=$2 c=$3 match label ok rps recs load0 cpu0 ids=n%
	PHP_COLD=- PHP_WARM=-
	((n <= PHP_USERS)) || return 0
	if [[ $op == upload ]]; then
		match="POST ${PHP_BASE}pop[0-9]+/storage/history HTTP/1.1\" [0-9]{3} "
	else
		match="GET ${PHP_BASE}pop[0-9]+/info/collections HTTP/1.1\" [0-9]{3} "
	fi
	php_target php
	php_anchor_restart
	spawn_processes "$c" "$PHP_BASE"
	for label in cold warm; do
		RUN_NO=$((RUN_NO + 1))
		settle
		load0=$(cut -d' ' -f1 /proc/loadavg) cpu0=$(cpu_ticks)
		if [[ $label == cold ]]; then
			BENCH_OP=$op BENCH_PREFIX=pop BENCH_USERS=$n BENCH_RUN=$RUN_NO BENCH_BASE=$PHP_BASE WARM=0 \
				BENCH_CYCLE=0 wrk_measure "$c" "$TURN_SECS" "$BASE_URL" turn.lua "$PHP_BASE" "$n" "$match"
		else
			BENCH_OP=$op BENCH_PREFIX=pop BENCH_USERS=$n BENCH_RUN=$RUN_NO BENCH_BASE=$PHP_BASE WARM=0 \
				BENCH_CYCLE=1 wrk_measure "$c" "$TURN_WARM_SECS" "$BASE_URL" turn.lua "$PHP_BASE"
		fi
		CPU_NOTES+="turns $op $n c=$c php $label: $(cpu_per_request "$cpu0" "$(cpu_ticks)" "$M_N"); "
		settle
		ok=$M_OK
		[[ $label == cold ]] && ((ok > n)) && ok=$n # answers after the stop are not timed
		rps=$(printf '%.1f' "$(echo "$ok / $M_SECS" | bc -l)")
		recs=-
		[[ $op == upload ]] && recs=$(printf '%.0f' "$(echo "$rps * 100" | bc -l)")
		row "turns $op $n" "$c" "php $label" "$rps" "$recs" "$M_P50" "$M_P99" "$(ratio "$rps" "$W_RPS")" - - \
			$((M_N - M_OK)) - -
		[[ $label == cold ]] && PHP_COLD=$rps || PHP_WARM=$rps
		TURN_NOTES+="$op $n c=$c php $label $load0->$(cut -d' ' -f1 /proc/loadavg); "
	done
	php_target weave
	if [[ $op == upload ]]; then
		PHP_NOTES+="turns upload $n c=$c: $(php_stored php pop% "${PHP_BASE}pop[0-9]+" "$ids"); "
	fi
}

# ---------------------------------------------------------------- anchor
# bench/run anchor: 100 new records per POST, weave and the anchor back to
# back in ANCHOR_ROUNDS rounds of SECS, alternating which goes first, each
# after a warm-up of WARM s of its own; each row gives the rounds' answered
# POSTs over their total time and the p50/p99 of all its timed rounds. The accounts: for
# each N of ANCHOR_USERS and each concurrency, N of their own on each side
# (anchor_prefix), every POST to one picked at random among them, with ids
# new in every round and thread (upload.lua, BENCH_RANDOM=1). Over N > 1
# accounts this is issue 24's own measurement (interleaved, warm-up, 10 s
# runs): every weave account is verified and asked once before the first
# round, so the rounds are warm. The weave row over N accounts also gives
# its p99 against one account's at the same concurrency ("vs one"; 1
# first in ANCHOR_USERS).
run_anchor() {
	local n c
	if ! php_anchor_enabled; then
		say "11 anchor: skipped (set BENCH_PHP_SERVER to a checkout of weaveserver-obsolote)"
		return 0
	fi
	# One account and many side by side at each concurrency: the
	# database's state (its size, the redo log's fill) drifts over a run,
	# and "vs one" compares the two.
	for c in $ANCHOR_CONC; do
		say "11 anchor: POST 100 records to $(anchor_label "${ANCHOR_USERS%% *}") .. $(
			anchor_label "${ANCHOR_USERS##* }"), weave and PHP 1.0, c = $c"
		for n in $ANCHOR_USERS; do
			anchor_rounds "$n" "$c"
		done
	done
}
ANCHOR_PHP_RPS=-
declare -A ANCHOR_ONE_P99=()

# one<c>x0 for one account (as before N was added), a<N>c<c>x0 .. x<N-1>.
anchor_prefix() { # N CONC
	(($1 == 1)) && echo "one${2}x" || echo "a${1}c${2}x"
}
anchor_label() { # N
	(($1 == 1)) && echo "1 account" || echo "$1 accounts"
}

anchor_rounds() { # N CONC
	local n=$1 c=$2 prefix r side first second rps recs p50 p99 errors vs_one
	local cpu0 v0 w0
	local -A posts spent errs cpu asked
	prefix=$(anchor_prefix "$n" "$c")
	: >"$STACK/anchor-weave.lat"
	: >"$STACK/anchor-php.lat"
	if ((n > 1)); then
		php_target weave
		verify_all "$prefix" "$n"
		warm_all "$prefix" "$n"
	fi
	for ((r = 1; r <= ANCHOR_ROUNDS; r++)); do
		first=weave second=php
		((r % 2)) || { first=php second=weave; }
		for side in $first $second; do
			php_target "$side"
			anchor_post "$c" "$WARM" "$side" "$prefix" "$n" # warm-up, ids of its own
			v0=$(cache_counts) w0=$(row_lock_waits)
			cpu0=$(cpu_ticks)
			anchor_post "$c" "$SECS" "$side" "$prefix" "$n"
			cat "$STACK/lat.tmp" >>"$STACK/anchor-$side.lat" # log_stats' latencies
			cpu[$side]=$(cpu_add "${cpu[$side]:-0 0 0}" "$cpu0" "$(cpu_ticks)")
			[[ $side == weave ]] && TURN_COUNTS+="anchor $n c=$c round $r: $(
				count_changes "$v0" "$(cache_counts)")row_lock_waits+$(($(row_lock_waits) - w0)); "
			asked[$side]=$((${asked[$side]:-0} + M_N))
			posts[$side]=$((${posts[$side]:-0} + M_OK))
			spent[$side]=$(echo "${spent[$side]:-0} + $M_SECS" | bc -l)
			errs[$side]=$((${errs[$side]:-0} + M_N - M_OK))
		done
	done
	php_target weave
	for side in php weave; do
		rps=$(printf '%.1f' "$(echo "${posts[$side]} / ${spent[$side]}" | bc -l)")
		recs=$(printf '%.0f' "$(echo "$rps * 100" | bc -l)")
		read -r p50 p99 < <(percentiles "$STACK/anchor-$side.lat")
		errors=${errs[$side]}
		vs_one=-
		if [[ $side == weave ]]; then
			((n == 1)) && ANCHOR_ONE_P99[$c]=$p99
			((n > 1)) && [[ -n ${ANCHOR_ONE_P99[$c]:-} ]] &&
				vs_one="p99 x$(printf '%.2f' "$(echo "$p99 / ${ANCHOR_ONE_P99[$c]}" | bc -l)")"
		fi
		row "anchor upload $(anchor_label "$n")" "$c" "$([[ $side == php ]] && echo "php 1.0" || echo weave)" \
			"$rps" "$recs" "$p50" "$p99" - - "$([[ $side == weave ]] && peak_memory weave.fcgi || echo -)" \
			"$errors" "$vs_one" - "$([[ $side == weave ]] && ratio "$rps" "$ANCHOR_PHP_RPS" || echo -)"
		[[ $side == php ]] && ANCHOR_PHP_RPS=$rps
		CPU_NOTES+="anchor $n c=$c $side: $(cpu_per_request "0 0 0" "${cpu[$side]}" "${asked[$side]}"); "
	done
	PHP_NOTES+="anchor $n c=$c: $(php_stored weave "$prefix%" "$WEB_BASE${prefix}[0-9]+" r%), $(
		php_stored php "$prefix%" "$PHP_BASE${prefix}[0-9]+" r%); "
}

# SUM plus the ticks between BEFORE and AFTER, kind by kind (cpu_ticks).
cpu_add() { # SUM BEFORE AFTER
	local -a s b a
	read -r -a s <<<"$1"
	read -r -a b <<<"$2"
	read -r -a a <<<"$3"
	echo $((s[0] + a[0] - b[0])) $((s[1] + a[1] - b[1])) $((s[2] + a[2] - b[2]))
}

# One timed upload run with ids of its own (a run number of its own).
anchor_post() { # CONC SECONDS weave|php PREFIX USERS
	RUN_NO=$((RUN_NO + 1))
	BENCH_PREFIX=$4 BENCH_USERS=$5 BENCH_RANDOM=1 BENCH_RUN=$RUN_NO \
		BENCH_BASE=$(anchor_base "$3") WARM=0 \
		wrk_measure "$1" "$2" "$BASE_URL" upload.lua "$(anchor_base "$3")$4"
}

anchor_base() { [[ $1 == php ]] && echo "$PHP_BASE" || echo "$WEB_BASE"; }
