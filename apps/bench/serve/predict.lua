-- wrk script of apps/bench/torch_serve.py: :predict requests whose bodies are the lines of
-- BODIES (one JSON body a line), each thread from its own line on, round robin. Prints one
-- JSON line. env: MODEL, BODIES
local model = os.getenv("MODEL") or "dlrm"
local threads = {}
local counter = 0
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do
  table.insert(bodies, line)
end

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  failed = 0
  next_body = (id * 7919) % #bodies
  path = "/v1/models/" .. model .. ":predict"
  headers = {["Content-Type"] = "application/json", ["X-Darcy-App"] = "wrk"}
end

function request()
  next_body = next_body % #bodies + 1
  return wrk.format("POST", path, headers, bodies[next_body])
end

function response(status, headers, body)
  if status ~= 200 then
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local failed_total = 0
  for _, t in ipairs(threads) do
    failed_total = failed_total + t:get("failed")
  end
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write +
                 summary.errors.timeout
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "qps": %.1f, "p50_ms": %.3f, "p99_ms": %.3f, ' ..
    '"max_ms": %.3f, "failed": %d, "socket_errors": %d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    failed_total, errors))
end
