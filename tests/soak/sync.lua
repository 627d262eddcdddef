-- tests/soak/sync.lua: wrk script that plays the Weave 1.0 client's sync
-- traffic (docs/protocol.md, What the 1.0 add-on sends) for many users at
-- once.
--
-- usage: wrk -s tests/soak/sync.lua URL -- USERS_FILE [REPORT_FILE]
--   URL         the mount point, e.g. http://127.0.0.1:8080/weave/
--   USERS_FILE  one "name<TAB>Authorization value" per line
--   REPORT_FILE where done() writes "status count" lines (default: stdout only)
--
-- Each wrk thread runs sync sessions back to back, each for a random user:
--   GET info/collections, GET meta/global, GET clients?full=1 (+ PUT of
--   this client's record), then for 2-4 engines: GET <engine>?newer=..&
--   full=1&sort=index&limit=1500 (application/newlines), a POST of up to
--   100 records (100 in most sessions: the first-sync upload), sometimes a
--   DELETE of duplicates by ids, and sometimes an id-only GET. Each
--   connection keeps one request in flight; statuses are tallied per thread.

local engines = { "bookmarks", "history", "forms", "passwords", "prefs", "tabs" }
local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
local pad = string.rep("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 16) -- ~560 bytes of base64

local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("thread_no", #threads) -- a global of that thread's script
end

local users = {}
local queue = {}
local head = 1
local base
local last_seen = 0 -- newest X-Weave-Timestamp seen (seconds)
statuses = {}       -- status -> count; read by done() through thread:get
responses = 0

local function guid()
   local t = {}
   for i = 1, 10 do
      local k = math.random(1, #chars)
      t[i] = chars:sub(k, k)
   end
   return table.concat(t)
end

local function push(method, path, headers, body)
   queue[#queue + 1] = wrk.format(method, path, headers, body)
end

local function records(n, engine)
   local t = {}
   for i = 1, n do
      local id = guid()
      t[i] = string.format(
         '{"id":"%s","sortindex":%d,"payload":"{\\"ciphertext\\":\\"%s\\",\\"IV\\":\\"%s\\",\\"engine\\":\\"%s\\"}"}',
         id, math.random(0, 1000), pad, guid(), engine)
   end
   return "[" .. table.concat(t, ",") .. "]"
end

-- One sync session for one user, as a list of requests.
local function plan_session()
   local u = users[math.random(1, #users)]
   local root = base .. "1.0/" .. u.name .. "/"
   local h = { ["Authorization"] = u.auth, ["Content-Type"] = "text/plain" }
   local newer = ""
   if last_seen > 0 then
      newer = string.format("newer=%.2f&", last_seen - math.random(0, 600))
   end
   push("GET", root .. "info/collections", h)
   push("GET", root .. "storage/meta/global", h)
   push("GET", root .. "storage/clients?" .. newer .. "full=1", h)
   push("PUT", root .. "storage/clients/" .. u.client, h,
        '{"payload":"%7B%22name%22%3A%22soak%22%2C%22type%22%3A%22desktop%22%7D"}')
   local nl = { ["Authorization"] = u.auth, ["Accept"] = "application/newlines" }
   for _ = 1, math.random(2, 4) do
      local e = engines[math.random(1, #engines)]
      push("GET", root .. "storage/" .. e .. "?" .. newer .. "full=1&sort=index&limit=1500", nl)
      local n = math.random() < 0.7 and 100 or math.random(1, 99)
      push("POST", root .. "storage/" .. e, h, records(n, e))
      if math.random() < 0.25 then
         local ids = {}
         for i = 1, math.random(1, 20) do ids[i] = guid() end
         push("DELETE", root .. "storage/" .. e .. "?ids=" .. table.concat(ids, ","), h)
      end
      if math.random() < 0.2 then
         push("GET", root .. "storage/" .. e .. "?" .. newer .. "sort=index", h)
      end
   end
end

function init(args)
   math.randomseed(os.time() * 100 + (thread_no or 0)) -- thread_no: see setup()
   base = wrk.path
   if base:sub(-1) ~= "/" then base = base .. "/" end
   local file = assert(io.open(args[1], "r"), "cannot open users file " .. tostring(args[1]))
   for line in file:lines() do
      local name, auth = line:match("^([^\t]+)\t(.+)$")
      if name then
         users[#users + 1] = { name = name, auth = auth, client = guid() }
      end
   end
   file:close()
   assert(#users > 0, "no users in " .. args[1])
   report_file = args[2]
end

function request()
   if head > #queue then
      queue, head = {}, 1
      plan_session()
   end
   local r = queue[head]
   head = head + 1
   return r
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
   responses = responses + 1
   local ts = tonumber(headers["X-Weave-Timestamp"])
   if ts and ts > last_seen then last_seen = ts end
end

function done(summary, latency, requests)
   local total = {}
   local report
   for _, t in ipairs(threads) do
      local s = t:get("statuses")
      for status, n in pairs(s or {}) do
         total[status] = (total[status] or 0) + n
      end
      report = report or t:get("report_file")
   end
   local lines = {}
   for status, n in pairs(total) do
      lines[#lines + 1] = string.format("status %d %d", status, n)
   end
   table.sort(lines)
   local e = summary.errors
   lines[#lines + 1] = string.format("requests %d", summary.requests)
   lines[#lines + 1] = string.format("errors connect %d read %d write %d timeout %d status %d",
                                     e.connect, e.read, e.write, e.timeout, e.status)
   lines[#lines + 1] = string.format("latency_ms p50 %.1f p99 %.1f max %.1f",
                                     latency:percentile(50) / 1000,
                                     latency:percentile(99) / 1000, latency.max / 1000)
   local text = table.concat(lines, "\n") .. "\n"
   io.write(text)
   if report then
      local f = assert(io.open(report, "w"))
      f:write(text)
      f:close()
   end
end
