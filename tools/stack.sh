# shellcheck shell=bash
# tools/stack.sh: start and stop a private MariaDB and a private Apache +
# mod_fcgid serving weave.fcgi, all under one directory, on 127.0.0.1 only.
# Sourced by tools/quickstart, tests/run and tests/e2e/dbctl.
#
#   stack_free_port [PORT...]             print a free TCP port on 127.0.0.1 (not PORT)
#   stack_mariadb_start DIR PORT          init (first time) + start + db/user
#                                         (STACK_MARIADB_OPTIONS: extra mariadbd
#                                         options, e.g. --thread-handling=...)
#   stack_mariadb_stop DIR                clean shutdown (kill as fallback)
#   stack_mariadb_restart DIR [PORT]      stop + start (PORT defaults to last)
#   stack_db_password DIR                 print the weave db user's password
#   stack_write_config FILE DB_PORT DB_PASSWORD PUBLIC_URL [LOG_LEVEL] [LINE...]
#   stack_apache_start DIR PORT FCGI_BINARY CONFIG_FILE [NAME=VALUE...]
#                                         (STACK_APACHE_INCLUDE=FILE: extra
#                                         directives, included after the snippet)
#   stack_apache_stop DIR
#
# Functions print "stack: ..." on stderr and return non-zero on failure; they
# never exit, so callers decide (most run under `set -e`). Every process is
# started with setsid so that Ctrl-C in the terminal reaches only the calling
# script, whose trap then stops the stack in order.

STACK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACK_APACHE_MODULES=${STACK_APACHE_MODULES:-/usr/lib/apache2/modules}
# The snippet admins install; its binary path is swapped for the one under test.
STACK_APACHE_SNIPPET=${STACK_APACHE_SNIPPET:-$STACK_ROOT/apache/weave.conf}
STACK_INSTALLED_BINARY=/usr/local/libexec/weave/weave.fcgi
# Apache children and the FastCGI processes run as this user.
STACK_WWW_USER=www-data

stack__err() { echo "stack: $*" >&2; }

# Last lines of a log file, indented, for error messages.
stack__tail() {
	if [[ -s $1 ]]; then
		echo "---- last lines of $1 ----" >&2
		tail -n "${2:-25}" "$1" | sed 's/^/    /' >&2
		echo "----" >&2
	else
		echo "(log $1 is empty or missing)" >&2
	fi
}

stack__alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; }

# Prints the PID in FILE, or nothing. Always succeeds: callers use it in
# assignments under `set -e`.
stack__pidfile_pid() { [[ -s $1 ]] && tr -dc 0-9 <"$1"; return 0; }

# Prints the port remembered in DIR/port, or nothing.
stack__saved_port() { cat "$1/port" 2>/dev/null; return 0; }

# True when something accepts TCP connections on 127.0.0.1:PORT.
stack__port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A port below the kernel's ephemeral range: a port handed out by bind(0)
# can be taken again by any outgoing connection before our server binds
# it, and Galera binds its state-transfer port only while a transfer runs
# (CI once saw node 1's SST port become front-end A's). PORTs given as
# arguments are skipped (ones handed out already but not yet bound).
stack_free_port() {
	/usr/bin/python3 - "$@" <<-'EOF'
		import random, socket, sys
		taken = {int(a) for a in sys.argv[1:] if a.isdigit()}
		try:
		    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
		except (OSError, ValueError, IndexError):
		    low = 32768
		candidates = list(range(10000, low)) if low > 11000 else []
		random.shuffle(candidates)
		for port in candidates[:2000] + [0]:
		    if port in taken:
		        continue
		    s = socket.socket()
		    try:
		        s.bind(("127.0.0.1", port))
		    except OSError:
		        continue
		    got = s.getsockname()[1]
		    s.close()
		    if got not in taken:
		        print(got)
		        sys.exit(0)
		sys.exit("stack_free_port: no free port on 127.0.0.1")
	EOF
}

# A random hex string (no quoting trouble in SQL or config files).
stack__random() { /usr/bin/python3 -c 'import secrets; print(secrets.token_hex(16))'; }

# Can the Apache user read (-r) or execute (-x) PATH? Also explains why not:
# the usual cause is a parent directory such as /root without o+x.
stack__www_can() {
	local test=$1 path=$2 dir
	if runuser -u "$STACK_WWW_USER" -- test "$test" "$path" 2>/dev/null; then
		return 0
	fi
	stack__err "$STACK_WWW_USER cannot access $path (test $test)"
	dir=$(dirname "$path")
	while [[ $dir != / ]]; do
		if ! runuser -u "$STACK_WWW_USER" -- test -x "$dir" 2>/dev/null; then
			stack__err "  directory $dir is not searchable by $STACK_WWW_USER ($(stat -c '%A %U:%G' "$dir"))"
			stack__err "  fix: chmod o+x $dir, or build/copy the tree somewhere $STACK_WWW_USER can reach"
			return 1
		fi
		dir=$(dirname "$dir")
	done
	stack__err "  the file itself: $(stat -c '%A %U:%G' "$path" 2>/dev/null || echo missing)"
	return 1
}

# PIDs of every process in session SID (Apache's parent calls setsid, so its
# children, mod_fcgid's process manager and the FastCGI applications share
# its session). Read from /proc: procps may not be installed.
stack__session_pids() {
	local sid=$1 f line rest s
	for f in /proc/[0-9]*/stat; do
		{ read -r line <"$f"; } 2>/dev/null || continue   # process may be gone
		rest=${line##*) }      # fields after "(comm)": state ppid pgrp session
		read -r _ _ _ s _ <<<"$rest"
		[[ $s == "$sid" ]] && { f=${f#/proc/}; echo "${f%/stat}"; }
	done
	return 0
}

# ---------------------------------------------------------------- MariaDB

stack__mysql_root() {
	local dir=$1
	shift
	mariadb --no-defaults --socket="$dir/mysqld.sock" --user=root "$@"
}

stack_mariadb_start() {
	local dir port pid i pw
	local -a extra
	read -ra extra <<<"${STACK_MARIADB_OPTIONS:-}"
	dir=$(realpath -m "${1:?usage: stack_mariadb_start DIR PORT}")
	port=${2:?usage: stack_mariadb_start DIR PORT}
	mkdir -p "$dir/tmp"
	chmod 700 "$dir"   # holds the password file and the data

	pid=$(stack__pidfile_pid "$dir/mysqld.pid")
	if stack__alive "$pid"; then
		if [[ $(stack__saved_port "$dir") != "$port" ]]; then
			stack__err "MariaDB in $dir already runs (pid $pid) on port $(stack__saved_port "$dir"); stop it first"
			return 1
		fi
	else
		if stack__port_open "$port"; then
			stack__err "port $port on 127.0.0.1 is already in use; pick another (e.g. WEAVE_DB_PORT)"
			return 1
		fi
		if [[ ! -d $dir/data/mysql ]]; then
			# Root connects through the socket with unix_socket auth: no
			# root password to keep anywhere.
			if ! mariadb-install-db --no-defaults --user=root --datadir="$dir/data" \
				--auth-root-authentication-method=socket --skip-test-db \
				>"$dir/install-db.log" 2>&1; then
				stack__err "mariadb-install-db failed"
				stack__tail "$dir/install-db.log"
				return 1
			fi
		fi
		echo "$port" >"$dir/port"
		# Small buffers and relaxed flushing: this is a test/demo server.
		# utf8mb4 matches Debian's packaged server defaults (50-server.cnf),
		# which --no-defaults would otherwise drop.
		setsid mariadbd --no-defaults --user=root \
			--datadir="$dir/data" --socket="$dir/mysqld.sock" \
			--pid-file="$dir/mysqld.pid" --log-error="$dir/mariadb.log" \
			--tmpdir="$dir/tmp" \
			--bind-address=127.0.0.1 --port="$port" --skip-name-resolve \
			--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
			--max-connections=200 \
			--innodb-buffer-pool-size=64M --innodb-log-file-size=32M \
			--innodb-flush-log-at-trx-commit=2 --skip-log-bin \
			"${extra[@]}" \
			</dev/null >>"$dir/mariadb.log" 2>&1 &
		echo $! >"$dir/mariadbd.pid"   # ours, until mysqld.pid appears
		pid=$!
		for ((i = 0; i < 600; i++)); do
			if mariadb-admin --no-defaults --socket="$dir/mysqld.sock" --user=root \
				--connect-timeout=2 ping >/dev/null 2>&1; then
				break
			fi
			if ! stack__alive "$pid"; then
				stack__err "mariadbd exited during startup"
				stack__tail "$dir/mariadb.log"
				return 1
			fi
			sleep 0.1
		done
		if ((i == 600)); then
			stack__err "MariaDB did not answer within 60 s"
			stack__tail "$dir/mariadb.log"
			return 1
		fi
	fi

	# The application's account. The password is kept so that a second run
	# (and the config file) reuse it; ALTER USER re-syncs it if the file was
	# lost or the data dir is older than the file.
	if [[ ! -s $dir/db-password ]]; then
		(umask 077 && stack__random >"$dir/db-password")
	fi
	pw=$(<"$dir/db-password")
	if ! stack__mysql_root "$dir" >/dev/null 2>"$dir/setup.err" <<-SQL
		CREATE DATABASE IF NOT EXISTS weave;
		CREATE USER IF NOT EXISTS 'weave'@'127.0.0.1' IDENTIFIED BY '$pw';
		CREATE USER IF NOT EXISTS 'weave'@'localhost' IDENTIFIED BY '$pw';
		ALTER USER 'weave'@'127.0.0.1' IDENTIFIED BY '$pw';
		ALTER USER 'weave'@'localhost' IDENTIFIED BY '$pw';
		GRANT ALL ON weave.* TO 'weave'@'127.0.0.1';
		GRANT ALL ON weave.* TO 'weave'@'localhost';
	SQL
	then
		stack__err "creating database/user failed:"
		sed 's/^/    /' "$dir/setup.err" >&2
		return 1
	fi
	rm -f "$dir/setup.err"
}

stack_mariadb_stop() {
	local dir pid i
	dir=$(realpath -m "${1:?usage: stack_mariadb_stop DIR}")
	pid=$(stack__pidfile_pid "$dir/mysqld.pid")
	stack__alive "$pid" || pid=$(stack__pidfile_pid "$dir/mariadbd.pid")
	if ! stack__alive "$pid"; then
		return 0
	fi
	mariadb-admin --no-defaults --socket="$dir/mysqld.sock" --user=root \
		--connect-timeout=5 shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 600; i++)); do
		stack__alive "$pid" || break
		sleep 0.1
	done
	if stack__alive "$pid"; then
		stack__err "MariaDB (pid $pid) did not stop within 60 s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.5
	fi
	rm -f "$dir/mariadbd.pid"
}

stack_mariadb_restart() {
	local dir port
	dir=$(realpath -m "${1:?usage: stack_mariadb_restart DIR [PORT]}")
	port=${2:-$(stack__saved_port "$dir")}
	if [[ -z $port ]]; then
		stack__err "no port given and none remembered in $dir/port"
		return 1
	fi
	stack_mariadb_stop "$dir" && stack_mariadb_start "$dir" "$port"
}

stack_db_password() { cat "${1:?usage: stack_db_password DIR}/db-password"; }

# ---------------------------------------------------------------- config

# The account cache file (the board) of the stack whose weave.conf is
# FILE: in /dev/shm as in a deployment (weave.fcgi's default place), not
# beside the config. On a disk's file system every page the processes
# write to is tracked for writeback and write-protected again after it,
# so a poll would pay page faults (and the disk its writes) that a
# deployment never sees. One name per stack directory, so a stack made
# again in the same place reuses its file instead of leaving another.
stack_board_path() {
	local dir
	dir=$(dirname "$(realpath -m "${1:?usage: stack_board_path CONFIG_FILE}")")
	echo "/dev/shm/weave-stack-$(printf '%s' "$dir" | md5sum | cut -c1-16)"
}

# PATH made anew: empty, the Apache user's, mode 0600.
stack__www_file_new() {
	rm -f "$1" && install -o "$STACK_WWW_USER" -g "$STACK_WWW_USER" -m 0600 /dev/null "$1"
}

# The board of the stack whose weave.conf is FILE made anew, empty (the
# first FastCGI process sizes it), as after a reboot.
stack_board_new() {
	stack__www_file_new "$(stack_board_path "${1:?usage: stack_board_new CONFIG_FILE}")"
}

# Removes the board of the stack whose weave.conf is FILE (its processes
# stopped first: a running one would make it anew).
stack_board_remove() {
	local board
	board=$(stack_board_path "${1:?usage: stack_board_remove CONFIG_FILE}")
	rm -f "$board" "$board.changes" "$board.metrics"
}

# Writes the weave config file. Readable by root and group www-data only: it
# holds the database password and the FastCGI processes must read it.
# Extra arguments are written as further lines ("key = value").
stack_write_config() {
	local file=${1:?usage: stack_write_config FILE DB_PORT DB_PASSWORD PUBLIC_URL [LOG_LEVEL] [LINE...]}
	local db_port=${2:?db port missing} db_password=${3:?db password missing}
	local public_url=${4:?public url missing}
	shift 4
	local log_level=${1:-info}
	(($#)) && shift
	local tmp board
	board=$(stack_board_path "$file")
	stack__www_file_new "$board"
	stack__www_file_new "$board.changes"
	stack__www_file_new "$board.metrics"
	tmp=$(mktemp "$file.XXXXXX")
	{
		echo "# weave-server configuration, written by tools/stack.sh"
		echo "db_host = 127.0.0.1"
		echo "db_port = $db_port"
		echo "db_name = weave"
		echo "db_user = weave"
		echo "db_password = $db_password"
		echo "public_url = $public_url"
		echo "log_level = $log_level"
		# The account-change board (docs/admin.md, "Kept account rows"), in
		# /dev/shm (stack_board_path): made here, empty, for the FastCGI
		# processes (www-data) to size and fill.
		echo "account_cache_file = $board"
		# Keys the account cache (docs/security.md); a new one per config.
		echo "cache_secret = $(stack__random)"
		local line
		for line in "$@"; do echo "$line"; done
	} >"$tmp"
	chgrp "$STACK_WWW_USER" "$tmp" && chmod 0640 "$tmp" && mv -f "$tmp" "$file"
}

# ---------------------------------------------------------------- Apache

stack_apache_start() {
	local usage="usage: stack_apache_start DIR PORT FCGI_BINARY CONFIG_FILE [NAME=VALUE...]"
	local dir port bin config pid i kv snippet
	dir=$(realpath -m "${1:?$usage}")
	port=${2:?$usage}
	bin=$(realpath -m "${3:?$usage}")
	config=$(realpath -m "${4:?$usage}")
	shift 4

	if [[ ! -f $bin || ! -x $bin ]]; then
		stack__err "FastCGI binary $bin does not exist or is not executable (built yet?)"
		return 1
	fi
	if [[ ! -f $config ]]; then
		stack__err "config file $config does not exist"
		return 1
	fi
	# mod_fcgid 2.3.9 silently cuts every FcgidInitialEnv value to 127 bytes
	# (INITENV_VAL_LEN): refuse rather than hand the application a truncated
	# path. Long sanitizer options belong in a file (ASAN_OPTIONS=include=F).
	local value
	for kv in "WEAVE_CONFIG=$config" "$@"; do
		value=${kv#*=}
		if ((${#value} > 127)); then
			stack__err "environment value for ${kv%%=*} is longer than 127 bytes, which mod_fcgid truncates: $value"
			return 1
		fi
	done
	stack__www_can -x "$bin" || return 1
	stack__www_can -r "$config" || return 1
	if [[ ! -r $STACK_APACHE_SNIPPET ]]; then
		stack__err "Apache snippet $STACK_APACHE_SNIPPET not found"
		return 1
	fi
	pid=$(stack__pidfile_pid "$dir/httpd.pid")
	if stack__alive "$pid"; then
		stack__err "Apache in $dir already runs (pid $pid); stop it first"
		return 1
	fi
	if stack__port_open "$port"; then
		stack__err "port $port on 127.0.0.1 is already in use; pick another (e.g. WEAVE_PORT)"
		return 1
	fi

	mkdir -p "$dir/run" "$dir/htdocs"
	rm -f "$dir/httpd.pid"
	# The logs hold client addresses, account names and request lines:
	# root (which opens them, for Apache and its children) reads them,
	# nobody else. Apache keeps the mode of a file that exists.
	local log
	for log in "$dir/error.log" "$dir/access.log"; do
		(umask 077 && touch "$log") && chmod 0600 "$log" || return 1
	done
	# mod_fcgid's sockets (IPCDIR/PID.N) are made by its www-data process
	# manager. A Unix socket path holds at most 107 bytes, so a deep tree
	# gets a short directory under /tmp instead (removed again on stop).
	local ipc=$dir/fcgid
	if ((${#ipc} > 80)); then
		ipc=$(mktemp -d /tmp/weave-fcgid.XXXXXX)
		echo "$ipc" >"$dir/fcgid-ipc-dir"
	fi
	mkdir -p "$ipc"
	chown "$STACK_WWW_USER:$STACK_WWW_USER" "$ipc"
	chmod 0700 "$ipc"
	# www-data must be able to traverse to its sockets.
	chmod o+x "$dir"

	# The admin snippet, with the binary under test in place of the installed
	# one (quoted: build paths may contain spaces).
	snippet=$(<"$STACK_APACHE_SNIPPET")
	if [[ $snippet != *"$STACK_INSTALLED_BINARY"* ]]; then
		stack__err "$STACK_APACHE_SNIPPET does not mention $STACK_INSTALLED_BINARY"
		return 1
	fi
	printf '%s\n' "${snippet//"$STACK_INSTALLED_BINARY"/\"$bin\"}" >"$dir/weave.conf"

	local m=$STACK_APACHE_MODULES
	{
		cat <<-EOF
			# Private Apache for weave-server tests, written by tools/stack.sh.
			ServerRoot "$dir"
			ServerName 127.0.0.1
			Listen 127.0.0.1:$port
			PidFile "$dir/httpd.pid"
			DefaultRuntimeDir "$dir/run"
			Mutex file:$dir/run default
			ErrorLog "$dir/error.log"
			LogLevel ${STACK_APACHE_LOGLEVEL:-warn}
			LogFormat "%h %t \"%r\" %>s %b %Dus" weave
			CustomLog "$dir/access.log" weave

			# prefork: measured ~15 % faster than event for this
			# workload on 2 cores (docs/HACKING.md, Apache and
			# mod_fcgid). Room for 32 clients with keep-alive; the
			# children a burst started stay (MaxSpareServers), so a
			# keep-alive client never waits for one to be forked.
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
			LoadModule env_module $m/mod_env.so
			LoadModule headers_module $m/mod_headers.so
			LoadModule setenvif_module $m/mod_setenvif.so
			LoadModule fcgid_module $m/mod_fcgid.so
			# mod_unixd (User/Group) and mod_log_config are built into Debian's apache2.

			# TraceEnable Off comes from the admin snippet (apache/weave.conf),
			# whose hardening test_hardening.py checks.

			User $STACK_WWW_USER
			Group $STACK_WWW_USER
			TypesConfig /etc/mime.types

			# Like Debian's apache2.conf: nothing is served unless allowed,
			# except an (empty) document root as Debian allows /var/www.
			# Without that grant every request logs AH01630, because Apache
			# looks PATH_INFO up under the document root for PATH_TRANSLATED.
			<Directory />
			    AllowOverride None
			    Require all denied
			</Directory>
			DocumentRoot "$dir/htdocs"
			<Directory "$dir/htdocs">
			    Require all granted
			</Directory>

			FcgidIPCDir "$ipc"
			FcgidProcessTableFile "$dir/run/fcgid_shm"
			FcgidInitialEnv WEAVE_CONFIG "$config"
		EOF
		for kv in "$@"; do
			if [[ $kv != *=* || ${kv%%=*} == "" ]]; then
				stack__err "extra environment '$kv' is not NAME=VALUE"
				return 1
			fi
			local v=${kv#*=}
			v=${v//\\/\\\\}
			v=${v//\"/\\\"}
			echo "FcgidInitialEnv ${kv%%=*} \"$v\""
		done
		echo
		echo "Include \"$dir/weave.conf\""
		# More mounts under the same settings (bench/run's ceiling program).
		if [[ -n ${STACK_APACHE_INCLUDE:-} ]]; then
			echo "Include \"$STACK_APACHE_INCLUDE\""
		fi
	} >"$dir/httpd.conf" || return 1

	# A clean environment: the caller's (ASAN_OPTIONS for weave-admin, say)
	# must not leak into Apache; the application gets only FcgidInitialEnv.
	local -a apache=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C
		apache2 -f "$dir/httpd.conf")
	if ! "${apache[@]}" -t >"$dir/configtest.log" 2>&1; then
		stack__err "Apache configuration test failed ($dir/httpd.conf):"
		sed 's/^/    /' "$dir/configtest.log" >&2
		return 1
	fi
	if ! setsid "${apache[@]}" -k start </dev/null >"$dir/start.log" 2>&1; then
		stack__err "apache2 -k start failed:"
		sed 's/^/    /' "$dir/start.log" >&2
		stack__tail "$dir/error.log"
		return 1
	fi
	for ((i = 0; i < 300; i++)); do
		pid=$(stack__pidfile_pid "$dir/httpd.pid")
		if stack__alive "$pid" && stack__port_open "$port"; then
			return 0
		fi
		sleep 0.1
	done
	stack__err "Apache did not come up on 127.0.0.1:$port within 30 s"
	stack__tail "$dir/start.log"
	stack__tail "$dir/error.log"
	return 1
}

# Stops Apache and waits until every process it started, the FastCGI
# applications included, has gone: sanitizer reports are written at exit.
stack_apache_stop() {
	local dir pid i left
	dir=$(realpath -m "${1:?usage: stack_apache_stop DIR}")
	pid=$(stack__pidfile_pid "$dir/httpd.pid")
	if ! stack__alive "$pid"; then
		stack__remove_ipc "$dir"
		return 0
	fi
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C \
		apache2 -f "$dir/httpd.conf" -k stop >/dev/null 2>&1 ||
		kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 300; i++)); do
		left=$(stack__session_pids "$pid")
		[[ -z $left ]] && break
		sleep 0.1
	done
	if [[ -n $left ]]; then
		stack__err "Apache processes still running after 30 s, killing: $(tr "\n" " " <<<"$left")"
		# shellcheck disable=SC2086 # one PID per word
		kill -KILL $left 2>/dev/null || true
	fi
	stack__remove_ipc "$dir"
	return 0
}

# Removes the short /tmp socket directory stack_apache_start may have made.
stack__remove_ipc() {
	local ipc
	ipc=$(cat "$1/fcgid-ipc-dir" 2>/dev/null) || return 0
	[[ $ipc == /tmp/weave-fcgid.* ]] && rm -rf "$ipc"
	rm -f "$1/fcgid-ipc-dir"
}
