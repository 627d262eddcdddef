-- bench/turn.lua: the population "in turn" (bench/run turns). Thread k of
-- n takes the accounts k, k+n, k+2n, ... in order, one request each, then
-- starts over: one pass over BENCH_PREFIX0 .. BENCH_USERS-1 asks every
-- account once, as an hourly sync does. BENCH_OP=poll: GET
-- info/collections; BENCH_OP=upload: POST 100 new records to
-- storage/history (ids unique to BENCH_RUN and the pass). bench/run stops
-- wrk once the access log shows a pass answered (or its time is up).
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local mine, base, sent, op, tag = {}, nil, 0, nil, nil

function init(args)
	local users = c.users()
	local threads = tonumber(c.env("BENCH_THREADS"))
	for j = (thread_index or 0) + 1, #users, threads do mine[#mine + 1] = users[j] end
	base = c.env("BENCH_BASE")
	op = c.env("BENCH_OP", "poll")
	tag = "n" .. c.env("BENCH_RUN", "0") .. "-"
end

function request()
	local u = mine[sent % #mine + 1]
	local pass = math.floor(sent / #mine)
	sent = sent + 1
	if op == "upload" then
		return wrk.format("POST", base .. u.name .. "/storage/history",
			{ ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" },
			c.batch(tag .. pass .. "-", 0, 100))
	end
	return wrk.format("GET", base .. u.name .. "/info/collections",
		{ ["Authorization"] = u.auth })
end
