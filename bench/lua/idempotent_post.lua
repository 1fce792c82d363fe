-- POSTs the JSON in $BODY with the bearer token in $TOKEN and a fresh Idempotency-Key on every
-- request (thread number, then a counter), so each request is a first use of its key.
local threads = 0

function setup(thread)
  thread:set("thread_no", threads)
  threads = threads + 1
end

local sent = 0
local run = tostring(os.time())

function request()
  sent = sent + 1
  return wrk.format("POST", nil, {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("TOKEN"),
    ["Idempotency-Key"] = "bench-" .. run .. "-" .. thread_no .. "-" .. sent,
  }, os.getenv("BODY"))
end
