-- Replays signed pay notifications: each line of the file $NOTIFICATIONS_FILE is
-- timestamp, nonce, signature, serial and body, tab-separated. With wrk -t2 each thread
-- takes every other line, so the threads do not send the same event.
local counter = 0

function setup(thread)
  thread:set("index", counter)
  counter = counter + 1
end

local requests, next = {}, 0

function init(args)
  local n = 0
  for line in io.lines(os.getenv("NOTIFICATIONS_FILE")) do
    if n % 2 == index then
      local ts, nonce, sig, serial, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
      requests[#requests + 1] = wrk.format("POST", nil, {
        ["Content-Type"] = "application/json",
        ["Wechatpay-Timestamp"] = ts,
        ["Wechatpay-Nonce"] = nonce,
        ["Wechatpay-Signature"] = sig,
        ["Wechatpay-Serial"] = serial,
        ["Wechatpay-Signature-Type"] = "WECHATPAY2-SHA256-RSA2048",
      }, body)
    end
    n = n + 1
  end
end

function request()
  next = next % #requests + 1
  return requests[next]
end
