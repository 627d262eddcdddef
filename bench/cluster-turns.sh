# shellcheck shell=bash
# shellcheck disable=SC2034 # its variables are read by bench/run, which sources it
# bench/cluster-turns.sh: workload 12 of bench/run, turns on tests/cluster.
# The accounts of bench/run turns polled and uploaded in turn on the
# cluster topology (three Galera nodes, front-ends A and B sharing one
# cache_secret as a deployment does, each with its
# own account cache file), cold and warm, through A alone and through A
# and B at once, beside this stack's single host in the same run. With
# both front-ends the accounts are split between them (bench/turn.lua,
# BENCH_SHARD): a pass still asks each account once, each front-end half
# of them, and each gets CONC connections, as workload 9 does. Everything
# shares this machine's cores: the rows measure what replication and the
# second host's own caches cost or gain on the same CPU, not what more
# machines would add.
# Uses from bench/run: CL (set here), STACK, BIN, ADMIN, ROOT, WRKLOG,
# RESULTS, RUN_NO, TURN_*, cold_restart, turn_pass, settle, log_stats,
# cache_counts, count_of, ratio, peak_memory, row, say, die, stamp.

CLUSTER_TURN_NOTE=

# The cluster, with the turns accounts and their records copied from this
# stack's database through node 1 (Galera copies them to the others).
cluster_turns_up() {
	CL=$STACK/cluster
	WEAVE_CLUSTER_DIR=$CL WEAVE_FCGI=$BIN WEAVE_ADMIN=$ADMIN "$ROOT/tests/cluster" start >&2 ||
		die "tests/cluster start failed"
	local where="username REGEXP '^(pop[0-9]+|spawn0)\$'" dump=(mariadb-dump --no-defaults
		--socket="$STACK/db/mysqld.sock" -u root --no-create-info --single-transaction --skip-triggers)
	{
		"${dump[@]}" --where="$where" weave users
		"${dump[@]}" --where="user_id IN (SELECT id FROM users WHERE $where)" weave wbo
	} | mariadb --no-defaults --socket="$CL/node1/mysqld.sock" -u root weave ||
		die "copying the turns accounts to the cluster failed"
}

# Front-end F as after a reboot: its Apache stopped, its account cache
# file made anew (as cold_restart does for the single host), started again,
# and with BENCH_TURN_SPAWN its CONC processes started by 8 s of uploads to
# spawn0 (as spawn_processes does for the single host: a pass that finds
# every process busy waits a second in mod_fcgid for each one it starts).
cluster_cold_front() { # F CONC
	local env=(env WEAVE_CLUSTER_DIR="$CL" WEAVE_FCGI="$BIN" WEAVE_ADMIN="$ADMIN")
	"${env[@]}" "$ROOT/tests/cluster" kill-web "$1" >&2 || die "tests/cluster kill-web $1 failed"
	stack_board_new "$CL/web$1/weave.conf"
	"${env[@]}" "$ROOT/tests/cluster" start-web "$1" >&2 || die "tests/cluster start-web $1 failed"
	((TURN_SPAWN)) || return 0
	RUN_NO=$((RUN_NO + 1))
	BENCH_DIR=$ROOT/bench BENCH_THREADS=1 BENCH_PREFIX=spawn BENCH_USERS=1 BENCH_RANDOM=1 \
		BENCH_RUN=$RUN_NO BENCH_BASE=/weave/1.0/ \
		wrk -t1 -c"$2" -d8s --timeout "$WRK_TIMEOUT" -s "$ROOT/bench/upload.lua" \
		"http://127.0.0.1:$(cat "$CL/web$1/port")/" >/dev/null 2>&1 || true
	cluster_settle "$1"
}

# Waits until every front-end's access log is still.
cluster_settle() { # FRONTS...
	local f before after i
	for ((i = 0; i < 30; i++)); do
		before='' after=''
		for f in "$@"; do before+=$(stat -c %s "$CL/web$f/apache/access.log"); done
		sleep 0.5
		for f in "$@"; do after+=$(stat -c %s "$CL/web$f/apache/access.log"); done
		[[ $before == "$after" ]] && break
	done
}

# One pass through the front-ends FRONTS (cold: until N matching answers,
# at most TURN_SECS; warm, CYCLE=1: TURN_WARM_SECS going round), one wrk
# per front-end with its share of the accounts. Sets M_N M_OK M_P50 M_P99
# M_SECS (summed over the front-ends; percentiles over all their answers)
# and C_KDF (verifications the front-ends made during the pass).
cluster_turn_pass() { # OP N CONC CYCLE FRONTS...
	local op=$1 n=$2 c=$3 cycle=$4 f i s=0 match t0 t1 secs=$TURN_SECS total
	shift 4
	local -A off v0
	local -a pids=()
	match="GET /weave/1.0/pop[0-9]+/info/collections HTTP/1.1\" [0-9]{3} "
	[[ $op == upload ]] && match="POST /weave/1.0/pop[0-9]+/storage/history HTTP/1.1\" [0-9]{3} "
	((cycle)) && secs=$TURN_WARM_SECS
	RUN_NO=$((RUN_NO + 1))
	for f in "$@"; do
		off[$f]=$(stat -c %s "$CL/web$f/apache/access.log")
		v0[$f]=$(cache_counts "$CL/web$f/weave.conf")
	done
	t0=$(date +%s.%N)
	for f in "$@"; do
		BENCH_DIR=$ROOT/bench BENCH_THREADS=1 BENCH_SHARDS=$# BENCH_SHARD=$s BENCH_OP=$op BENCH_PREFIX=pop \
			BENCH_USERS=$n BENCH_RUN=$RUN_NO BENCH_BASE=/weave/1.0/ BENCH_CYCLE=$cycle \
			wrk -t 1 -c "$c" -d "$((cycle ? secs : 600))s" --timeout "$WRK_TIMEOUT" -s "$ROOT/bench/turn.lua" \
			"http://127.0.0.1:$(cat "$CL/web$f/port")/" >>"$WRKLOG" 2>&1 &
		pids+=($!)
		s=$((s + 1))
	done
	if ((cycle)); then
		wait "${pids[@]}" || true
	else
		for ((i = 0; i < secs * 20 && i < 12000; i++)); do
			total=0
			for f in "$@"; do
				total=$((total + $(tail -c +$((${off[$f]} + 1)) "$CL/web$f/apache/access.log" | grep -cE "$match" || true)))
			done
			((total >= n)) && break
			sleep 0.05
		done
		kill "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	t1=$(date +%s.%N)
	cluster_settle "$@"
	# The answers of all the front-ends in one file, for the percentiles.
	: >"$STACK/cluster-pass.log"
	C_KDF=0
	for f in "$@"; do
		tail -c +$((${off[$f]} + 1)) "$CL/web$f/apache/access.log" >>"$STACK/cluster-pass.log"
		C_KDF=$((C_KDF + $(count_of verifications "$(cache_counts "$CL/web$f/weave.conf")") -
			$(count_of verifications "${v0[$f]}")))
	done
	local saved=$ACCESS
	ACCESS=$STACK/cluster-pass.log
	read -r M_N M_OK < <(log_stats 0 /weave/1.0/pop | head -n 1)
	read -r M_P50 M_P99 < <(log_stats 0 /weave/1.0/pop | tail -n 1)
	ACCESS=$saved
	M_SECS=$(echo "$t1 - $t0" | bc -l)
}

# A row for the cluster pass just measured; "vs web" holds its req/s as a
# share of the single host's pass of the same kind (SINGLE).
cluster_turn_row() { # OP N CONC LABEL SINGLE LOAD0
	local ok=$M_OK rps recs=-
	[[ $4 == *cold ]] && ((ok > $2)) && ok=$2 # answers after the stop are not timed
	rps=$(printf '%.1f' "$(echo "$ok / $M_SECS" | bc -l)")
	[[ $1 == upload ]] && recs=$(printf '%.0f' "$(echo "$rps * 100" | bc -l)")
	row "cluster turns $1 $2" "$3" "$4" "$rps" "$recs" "$M_P50" "$M_P99" "$(ratio "$rps" "$5")" - \
		"$(peak_memory weave.fcgi)" $((M_N - M_OK)) - "$C_KDF/$2"
	CLUSTER_TURN_NOTE+="$1 $2 c=$3 $4 $(ratio "$rps" "$5") (load $6->$(cut -d' ' -f1 /proc/loadavg)); "
}

run_clusterturns() {
	local op n c what label single_cold single_warm load0
	say "12 clusterturns: $CLUSTER_TURN_USERS accounts in turn on 3 Galera nodes and 2 front-ends, c = $TURN_CONC"
	cluster_turns_up
	W_RPS=- # no web ceiling here: the single host's passes are the comparison
	PHP_COLD=- PHP_WARM=-
	for op in $TURN_OPS; do
		for n in $CLUSTER_TURN_USERS; do
			for c in $TURN_CONC; do
				# The single host's passes, as in turns (rows "cold", "warm").
				cold_restart "$c"
				TURN_WORKLOAD="cluster turns" turn_pass "$op" "$n" "$c" "one host cold"
				# shellcheck disable=SC2153 # set by turn_row
				single_cold=$T_RPS
				TURN_WORKLOAD="cluster turns" turn_pass "$op" "$n" "$c" "one host warm" 1
				single_warm=$T_RPS
				for what in "A" "A B"; do
					for f in $what; do cluster_cold_front "$f" "$c"; done
					label="front-end ${what// /+}"
					load0=$(cut -d' ' -f1 /proc/loadavg)
					# shellcheck disable=SC2086 # the front-ends, one per word
					cluster_turn_pass "$op" "$n" "$c" 0 $what
					cluster_turn_row "$op" "$n" "$c" "$label cold" "$single_cold" "$load0"
					((M_OK >= n)) || CLUSTER_TURN_NOTE+="($label cold pass cut short: $M_OK of $n) "
					load0=$(cut -d' ' -f1 /proc/loadavg)
					# shellcheck disable=SC2086
					cluster_turn_pass "$op" "$n" "$c" 1 $what
					cluster_turn_row "$op" "$n" "$c" "$label warm" "$single_warm" "$load0"
				done
			done
		done
	done
	WEAVE_CLUSTER_DIR=$CL "$ROOT/tests/cluster" stop >&2 || true
}
