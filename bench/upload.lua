-- bench/upload.lua: workload 2, the first-sync upload. POSTs 100-record
-- batches of new records to storage/history. Thread k of n owns the
-- accounts k, k+n, k+2n, ... (BENCH_THREADS = the -t given to wrk) and
-- cycles over them, so that concurrent requests hit different accounts.
-- It never stops by itself: bench/run stops wrk once the access log shows
-- that every account got BENCH_RECORDS records (wrk has no request count,
-- and it may drop a request it generated, so counting here is unreliable).
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local mine, base, sent = {}, nil, 0

function init(args)
	local users = c.users()
	local threads = tonumber(c.env("BENCH_THREADS"))
	local k = thread_index or 0
	for j = k + 1, #users, threads do mine[#mine + 1] = users[j] end
	base = c.env("BENCH_BASE")
end

function request()
	local u = mine[sent % #mine + 1]
	local batch = math.floor(sent / #mine)
	sent = sent + 1
	return wrk.format("POST", base .. u.name .. "/storage/history",
		{ ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" },
		c.batch("u", batch * 100, 100))
end
