-- bench/download.lua: workload 3, the incremental download of one account:
-- GET storage/history?newer=T&full=1&sort=index&limit=1500, newlines.
-- BENCH_NEWER is T (a timestamp in seconds, "1265402837.12").
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
local path, headers

function init(args)
	local users = c.users()
	local u = users[1]
	path = c.env("BENCH_BASE") .. u.name .. "/storage/history?newer=" ..
		c.env("BENCH_NEWER") .. "&full=1&sort=index&limit=1500"
	headers = { ["Authorization"] = u.auth, ["Accept"] = "application/newlines" }
end

function request()
	return wrk.format("GET", path, headers)
end
