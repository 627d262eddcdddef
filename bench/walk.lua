-- bench/walk.lua: the warm-up of workload 6. Thread k of n requests
-- info/collections of accounts k, k+n, k+2n, ... in order, twice over, so
-- that every account's password has been verified and its row kept (from
-- the second read on), as on a server that has run for a while. bench/run
-- stops wrk when the access log shows all of them.
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local mine, base, sent = {}, nil, 0

function init(args)
	local users = c.users()
	local threads = tonumber(c.env("BENCH_THREADS"))
	for j = (thread_index or 0) + 1, #users, threads do mine[#mine + 1] = users[j] end
	base = c.env("BENCH_BASE")
end

function request()
	local u = mine[sent % #mine + 1]
	sent = sent + 1
	return wrk.format("GET", base .. u.name .. "/info/collections",
		{ ["Authorization"] = u.auth })
end
