-- wrk script for bench/load/run.sh and tests/integration/load.sh: each wrk
-- thread fetches one of the four endpoints the issue names (run wrk with
-- -t4, or a multiple of 4), so every status is counted against the endpoint
-- that answered it; a 503 carries no Content-Disposition to tell them apart.
--
-- At the end it prints one line per endpoint and a summary, all starting
-- with "load:", for the scripts to read:
--   load: endpoint /debug/pprof/heap 200=1234 503=12 bad=0
--   load: total requests=... ok=... busy=... bad=... socket_errors=... timeouts=...
--   load: latency_ms p50=... p99=... max=...
-- "busy" is a 503 with Retry-After (the documented answer of a server at its
-- cap); "bad" is any other status, or a 503 without Retry-After.
local prefix = os.getenv("LOAD_PREFIX") or ""
local paths = { "/debug/pprof/heap", "/debug/pprof/goroutine", "/debug/pprof/allocs", "/debug/pprof/" }
local threads = {}
local next_path = 1

function setup(thread)
  thread:set("path", prefix .. paths[next_path])
  next_path = next_path % #paths + 1
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
  busy, bad = 0, 0
  req = wrk.format("GET", path)
end

function request()
  return req
end

local function retry_after(headers)
  for k, _ in pairs(headers) do
    if string.lower(k) == "retry-after" then return true end
  end
  return false
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 503 and retry_after(headers) then
    busy = busy + 1
  elseif status ~= 200 then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local by_path, order = {}, {}
  local ok, nbusy, nbad = 0, 0, 0
  for _, t in ipairs(threads) do
    local p = t:get("path")
    if not by_path[p] then by_path[p] = { st = {}, bad = 0 }; table.insert(order, p) end
    for s, n in pairs(t:get("statuses")) do
      by_path[p].st[s] = (by_path[p].st[s] or 0) + n
      if s == 200 then ok = ok + n end
    end
    by_path[p].bad = by_path[p].bad + t:get("bad")
    nbusy = nbusy + t:get("busy")
    nbad = nbad + t:get("bad")
  end
  for _, p in ipairs(order) do
    local parts, codes = {}, {}
    for s, _ in pairs(by_path[p].st) do table.insert(codes, s) end
    table.sort(codes)
    for _, s in ipairs(codes) do table.insert(parts, s .. "=" .. by_path[p].st[s]) end
    io.write(string.format("load: endpoint %s %s bad=%d\n", p, table.concat(parts, " "), by_path[p].bad))
  end
  local e = summary.errors
  io.write(string.format("load: total requests=%d ok=%d busy=%d bad=%d socket_errors=%d timeouts=%d seconds=%.1f\n",
    summary.requests, ok, nbusy, nbad, e.connect + e.read + e.write, e.timeout, summary.duration / 1e6))
  io.write(string.format("load: latency_ms p50=%.1f p99=%.1f max=%.1f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
