-- wrk script of apps/bench/serve.sh: batch-1 top-k requests for random known users, the body a
-- client sends (user id, k, deadline, partial answers accepted or not). Prints one JSON line.
-- env: MODEL, USERS, DEADLINE_MS, ALLOW_PARTIAL, SEED
local model = os.getenv("MODEL") or "wals1m"
local users = tonumber(os.getenv("USERS") or "1000000")
local deadline = tonumber(os.getenv("DEADLINE_MS") or "1000")
local allow_partial = os.getenv("ALLOW_PARTIAL") or "false"
local seed = tonumber(os.getenv("SEED") or "7")
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(seed + id)
  partial = 0
  failed = 0
  path = "/v1/models/" .. model .. ":topk"
  headers = {["Content-Type"] = "application/json", ["X-Darcy-App"] = "wrk"}
end

function request()
  local body = string.format('{"user": %d, "k": 10, "deadline_ms": %d, "allow_partial": %s}',
                             math.random(0, users - 1), deadline, allow_partial)
  return wrk.format("POST", path, headers, body)
end

function response(status, headers, body)
  if status ~= 200 then
    failed = failed + 1
  elseif string.find(body, '"partial":true', 1, true) then
    partial = partial + 1
  end
end

function done(summary, latency, requests)
  local partial_total, failed_total = 0, 0
  for _, t in ipairs(threads) do
    partial_total = partial_total + t:get("partial")
    failed_total = failed_total + t:get("failed")
  end
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write +
                 summary.errors.timeout
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "qps": %.1f, "p50_ms": %.3f, "p99_ms": %.3f, ' ..
    '"max_ms": %.3f, "failed": %d, "socket_errors": %d, "partial": %d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    failed_total, errors, partial_total))
end
