-- bench/upload.lua: workload 2, the first-sync upload. POSTs 100-record
-- batches of new records to storage/history. Thread k of n owns the
-- accounts k, k+n, k+2n, ... (BENCH_THREADS = the -t given to wrk) and
-- cycles over them, so that concurrent requests hit different accounts.
-- It never stops by itself: bench/run stops wrk once the access log shows
-- that every account got BENCH_RECORDS records (wrk has no request count,
-- and it may drop a request it generated, so counting here is unreliable).
-- BENCH_RANDOM=1: each POST goes to an account picked at random among all,
-- with ids unique to the run (BENCH_RUN) and thread; it runs for a time.
-- BENCH_STORED=K (random mode): K of the 100 records take ids from a set
-- of 200 shared by the whole run (s0000000..s0000199), so that once the
-- accounts have them, each POST replaces K stored records and adds
-- 100 - K new ones, as an hourly sync of a visited page's history does.
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local mine, base, sent = {}, nil, 0
local random = os.getenv("BENCH_RANDOM") == "1"
local stored = tonumber(os.getenv("BENCH_STORED") or "0")
local all, tag

function init(args)
	local users = c.users()
	all = users
	tag = "r" .. c.env("BENCH_RUN", "0") .. "t" .. (thread_index or 0) .. "-"
	math.randomseed(os.time() * 1000 + (thread_index or 0) * 7919)
	local threads = tonumber(c.env("BENCH_THREADS"))
	local k = thread_index or 0
	for j = k + 1, #users, threads do mine[#mine + 1] = users[j] end
	base = c.env("BENCH_BASE")
end

function request()
	if random then
		local u = all[math.random(#all)]
		sent = sent + 1
		local body = c.batch(tag, sent * 100, 100 - stored)
		if stored > 0 then
			local old = c.batch("s", math.random(0, 200 - stored), stored)
			body = stored == 100 and old or old:sub(1, -2) .. "," .. body:sub(2)
		end
		return wrk.format("POST", base .. u.name .. "/storage/history",
			{ ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" },
			body)
	end
	local u = mine[sent % #mine + 1]
	local batch = math.floor(sent / #mine)
	sent = sent + 1
	return wrk.format("POST", base .. u.name .. "/storage/history",
		{ ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" },
		c.batch("u", batch * 100, 100))
end
