-- bench/poll.lua: workload 1, the sync poll. GET info/collections with
-- Basic auth, cycling over many accounts.
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local users, base, i

function init(args)
	users = c.users()
	base = c.env("BENCH_BASE")
	i = (thread_index or 0) * 7919
end

function request()
	i = i + 1
	local u = users[i % #users + 1]
	return wrk.format("GET", base .. u.name .. "/info/collections",
		{ ["Authorization"] = u.auth })
end
