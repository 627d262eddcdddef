-- bench/poll.lua: workload 1, the sync poll. GET info/collections with
-- Basic auth, cycling over many accounts (BENCH_RANDOM=1: each request
-- for an account picked at random, as on a server with many).
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local users, base, i
local random = os.getenv("BENCH_RANDOM") == "1"

function init(args)
	users = c.users()
	base = c.env("BENCH_BASE")
	i = (thread_index or 0) * 7919
	math.randomseed(os.time() * 1000 + i)
end

function request()
	i = i + 1
	local u = random and users[math.random(#users)] or users[i % #users + 1]
	return wrk.format("GET", base .. u.name .. "/info/collections",
		{ ["Authorization"] = u.auth })
end
