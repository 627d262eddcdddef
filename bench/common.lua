-- bench/common.lua: helpers shared by the wrk scripts (loaded with dofile
-- from the directory in BENCH_DIR). Settings come from the environment,
-- which bench/run sets: BENCH_BASE (e.g. /weave/1.0/), BENCH_PREFIX and
-- BENCH_USERS (accounts PREFIX0 .. PREFIX<n-1>), BENCH_PASSWORD.
local M = {}

local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

function M.base64(s)
	local out = {}
	for i = 1, #s, 3 do
		local a, b, c = s:byte(i, i + 2)
		local n = a * 65536 + (b or 0) * 256 + (c or 0)
		local d = {}
		for k = 3, 0, -1 do
			local v = math.floor(n / 64 ^ k) % 64
			d[#d + 1] = alphabet:sub(v + 1, v + 1)
		end
		if not b then d[3] = "=" end
		if not c then d[4] = "=" end
		out[#out + 1] = table.concat(d)
	end
	return table.concat(out)
end

function M.env(name, default)
	local v = os.getenv(name)
	if v == nil or v == "" then
		if default == nil then error("bench: " .. name .. " is not set") end
		return default
	end
	return v
end

-- The accounts: { name = ..., auth = "Basic ..." } for PREFIX0 .. PREFIXn-1.
function M.users()
	local prefix, n = M.env("BENCH_PREFIX"), tonumber(M.env("BENCH_USERS"))
	local password = M.env("BENCH_PASSWORD")
	local list = {}
	for i = 0, n - 1 do
		local name = prefix .. i
		list[#list + 1] = { name = name, auth = "Basic " .. M.base64(name .. ":" .. password) }
	end
	return list
end

-- A ~600-byte encrypted-looking payload (the JSON text of a Weave record's
-- ciphertext/IV/hmac), different for every seed.
local b64chars = {}
for i = 1, 64 do b64chars[i] = alphabet:sub(i, i) end
function M.payload(seed)
	local x = seed * 7919 + 17
	local ct = {}
	for i = 1, 512 do
		x = (x * 1103515245 + 12345) % 2147483648
		ct[i] = b64chars[math.floor(x / 65536) % 64 + 1]
	end
	local s = table.concat(ct)
	return '{"ciphertext":"' .. s .. '","IV":"' .. s:sub(101, 124) ..
		'","hmac":"' .. string.format("%064x", seed):sub(1, 64) .. '"}'
end

-- Payloads come from a pool of 1000 made once per thread: making 51 200
-- pseudo-random characters for every 100-record request took the client
-- 1.7 ms, time counted against the server at concurrency 1 (the ids, and
-- so the records, are still all new).
local pool = {}
local function pooled_payload(n)
	local k = n % 1000
	if pool[k] == nil then
		-- the payload is a JSON string: its quotes are escaped
		pool[k] = M.payload(k):gsub('"', '\\"')
	end
	return pool[k]
end

-- A JSON array of count records for POST storage/<coll>; ids tag..N.
-- BENCH_PAYLOAD_OFFSET shifts which payload each id gets, so that a second
-- upload of the same ids replaces every payload with a different one.
local payload_offset = tonumber(os.getenv("BENCH_PAYLOAD_OFFSET") or "0")
function M.batch(tag, first, count)
	local items = {}
	for i = 0, count - 1 do
		local n = first + i
		local p = pooled_payload(n + payload_offset)
		items[#items + 1] = string.format('{"id":"%s%07d","sortindex":%d,"payload":"%s"}',
			tag, n, (n * 37) % 1000, p)
	end
	return "[" .. table.concat(items, ",") .. "]"
end

-- Per-thread numbering: setup() gives each thread its index.
local counter = 0
function M.setup(thread)
	thread:set("thread_index", counter)
	counter = counter + 1
end

return M
