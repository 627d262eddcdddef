-- bench/turn.lua: the population "in turn" (bench/run turns). Thread k of
-- n takes the accounts k, k+n, k+2n, ... in order, one request each: one
-- run asks every account BENCH_PREFIX0 .. BENCH_USERS-1 once, as hourly
-- syncs do. A thread done with its share asks /bench-idle (outside the
-- measured paths) every 10 s per connection until bench/run stops wrk, so
-- that a fast thread never starts a second pass while a slow one finishes
-- the first. BENCH_OP=poll: GET info/collections; BENCH_OP=upload: POST
-- 100 new records to storage/history (ids unique to BENCH_RUN).
-- BENCH_CYCLE=1 (the web ceiling's timed run): start over instead.
-- BENCH_SHARDS=m, BENCH_SHARD=s (0 .. m-1): this wrk is one of m sharing
-- the accounts (bench/run clusterturns: one per front-end), its thread k
-- taking the accounts s*n+k, s*n+k+m*n, ... so that together they still
-- ask each account once per pass.
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local mine, base, sent, op, tag = {}, nil, 0, nil, nil
local cycle = os.getenv("BENCH_CYCLE") == "1"

function init(args)
	local users = c.users()
	local threads = tonumber(c.env("BENCH_THREADS"))
	local shards, shard = tonumber(c.env("BENCH_SHARDS", "1")), tonumber(c.env("BENCH_SHARD", "0"))
	for j = shard * threads + (thread_index or 0) + 1, #users, threads * shards do
		mine[#mine + 1] = users[j]
	end
	base = c.env("BENCH_BASE")
	op = c.env("BENCH_OP", "poll")
	tag = "n" .. c.env("BENCH_RUN", "0") .. "-"
end

function delay()
	return (sent > #mine and not cycle) and 10000 or 0
end

-- wrk calls request() once on thread 0 to check the script before it runs:
-- that call must not use up the thread's first account.
local checked = false

function request()
	if not checked and (thread_index or 0) == 0 then
		checked = true
		return wrk.format("GET", "/bench-idle")
	end
	checked = true
	sent = sent + 1
	if sent > #mine and not cycle then
		return wrk.format("GET", "/bench-idle")
	end
	local u = mine[(sent - 1) % #mine + 1]
	if op == "upload" then
		return wrk.format("POST", base .. u.name .. "/storage/history",
			{ ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" },
			c.batch(tag, sent * 100, 100))
	end
	return wrk.format("GET", base .. u.name .. "/info/collections",
		{ ["Authorization"] = u.auth })
end
