-- bench/session.lua: workload 4, a sync session as the Weave 1.0 client
-- makes it (docs/protocol.md, What the 1.0 add-on sends) for an account
-- that synced before: meta/global, the keys, info/collections, clients
-- down and up, the crypto record of each engine, downloads of the changed
-- engines (history, tabs)
-- with newer=BENCH_NEWER, and uploads of their changes. Each wrk thread
-- walks the steps of a session in order (its connections take turns),
-- for one account after another (BENCH_RANDOM=1: each session for an
-- account picked at random).
local c = dofile(os.getenv("BENCH_DIR") .. "/common.lua")
setup = c.setup
local users, base, newer, step, n, seq = nil, nil, nil, 0, 0, 0
local random, current = os.getenv("BENCH_RANDOM") == "1", nil
local engines = { "bookmarks", "forms", "history", "passwords", "prefs", "tabs" }
local steps = {}

local function get(path, accept) return { "GET", path, accept } end
steps[#steps + 1] = get("/storage/meta/global")
steps[#steps + 1] = get("/storage/keys/pubkey")
steps[#steps + 1] = get("/storage/keys/privkey")
steps[#steps + 1] = get("/info/collections")
steps[#steps + 1] = get("/storage/clients?newer=%s&full=1&sort=index&limit=1500", true)
steps[#steps + 1] = { "PUT", "/storage/clients/bench-clnt" }
for _, e in ipairs(engines) do steps[#steps + 1] = get("/storage/crypto/" .. e) end
steps[#steps + 1] = get("/storage/history?newer=%s&full=1&sort=index&limit=1500", true)
steps[#steps + 1] = get("/storage/tabs?newer=%s&full=1&sort=index&limit=1500", true)
steps[#steps + 1] = { "POST", "/storage/history", 10 }
steps[#steps + 1] = { "POST", "/storage/tabs", 1 }

function init(args)
	users = c.users()
	base = c.env("BENCH_BASE")
	newer = c.env("BENCH_NEWER")
	n = (thread_index or 0) * 7919
	math.randomseed(os.time() * 1000 + n)
end

function request()
	local s = steps[step % #steps + 1]
	if random and (step % #steps == 0 or current == nil) then
		current = users[math.random(#users)]
	end
	local u = random and current or users[math.floor(step / #steps + n) % #users + 1]
	step = step + 1
	local headers = { ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" }
	local path = base .. u.name .. s[2]:gsub("%%s", newer)
	if s[3] == true then headers["Accept"] = "application/newlines" end
	if s[1] == "PUT" then
		local p = ('{"name":"bench","type":"desktop","commands":[]}'):gsub('"', '\\"')
		return wrk.format("PUT", path, headers,
			'{"id":"bench-clnt","payload":"' .. p .. '"}')
	elseif s[1] == "POST" then
		seq = seq + 1
		local tag = string.format("s%d-%d-", thread_index or 0, seq % 50)
		return wrk.format("POST", path, headers, c.batch(tag, 0, s[3]))
	end
	return wrk.format("GET", path, headers)
end
