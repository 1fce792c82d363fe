#!/usr/bin/env python3
"""The money path as a load: each flow creates an order, pays it on the pay platform stand-in,
waits for the notification to make it `paid`, refunds it in full, has the stand-in settle the
refund and waits for `refunded`. Flows run CONCURRENCY at a time for DURATION seconds (then
the flows under way finish); every request to Atrium goes to the next of the --base URLs in
turn, as a round-robin balancer without sticky sessions would send it.

Standard library only: one thread per concurrent flow, each with its own keep-alive
connections. Loopback URLs only. Prints flows/s and p50/p99 per step, and writes the same as
JSON to --out for bench/scale.sh.
"""
import argparse
import http.client
import itertools
import json
import os
import re
import sys
import threading
import time
import urllib.parse

AMOUNT = 8800  # 2 × 4400 fen, as in docs/orders.md
STEPS = ["create", "pay", "platform_pay", "wait_paid", "refund", "platform_refund", "wait_refunded", "flow"]


class FlowError(Exception):
    pass


class Client:
    """Keep-alive connections of one thread, one per host:port."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.conns = {}

    def request(self, base, method, path, body=None, headers=None, retries=3):
        u = urllib.parse.urlsplit(base)
        if u.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise SystemExit(f"{base}: loopback URLs only")
        key = (u.hostname, u.port)
        data = None if body is None else json.dumps(body).encode()
        h = {"content-type": "application/json"} if data is not None else {}
        h.update(headers or {})
        for attempt in range(retries + 1):
            conn = self.conns.get(key)
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=self.timeout)
                self.conns[key] = conn
            try:
                conn.request(method, u.path.rstrip("/") + path, body=data, headers=h)
                resp = conn.getresponse()
                raw = resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                self.conns.pop(key, None)
                if attempt == retries:
                    raise FlowError(f"{method} {path}: {e}")
                time.sleep(0.05 * (attempt + 1))
                continue
            # A 502/503/504 is retried with the same Idempotency-Key: the request runs again
            # under the same numbers (docs/payments.md, Idempotency).
            if status in (502, 503, 504) and attempt < retries:
                time.sleep(0.05 * (attempt + 1))
                continue
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = None
            return status, doc, raw
        raise FlowError(f"{method} {path}: no answer")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.times = {s: [] for s in STEPS}
        self.started = 0
        self.ok = 0
        self.failed = 0
        self.errors = {}
        self.polls = 0
        self.notify_retried = 0
        self.notify_why = {}

    def add(self, step, secs):
        with self.lock:
            self.times[step].append(secs)

    def error(self, msg):
        with self.lock:
            self.failed += 1
            self.errors[msg] = self.errors.get(msg, 0) + 1


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", action="append", required=True, help="an Atrium instance's base URL (repeat for each)")
    ap.add_argument("--standin", required=True, help="the pay platform stand-in's base URL (an atrium with the sandbox)")
    ap.add_argument("--token", required=True, help="a platform administrator's access token")
    ap.add_argument("--tenants", required=True, help="comma-separated tenant ids, each with a payment configuration")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds during which new flows start (at most 600)")
    ap.add_argument("--max-flows", type=int, default=0, help="stop starting flows after this many (0: no limit)")
    ap.add_argument("--run", required=True, help="a label that makes this run's keys and subjects unique")
    ap.add_argument("--wait", type=float, default=20.0, help="deadline in seconds for an order to reach a status")
    ap.add_argument("--poll", type=float, default=0.05, help="seconds before the second read while waiting for a status")
    ap.add_argument("--poll-max", type=float, default=0.2, help="the pause between reads doubles up to this")
    ap.add_argument("--out", help="write the summary as JSON here")
    a = ap.parse_args()
    if not 0 < a.duration <= 600:
        raise SystemExit("--duration must be between 0 and 600 seconds")
    tenants = [int(t) for t in a.tenants.split(",") if t]
    auth = {"authorization": f"Bearer {a.token}"}
    rr = itertools.count()  # next() on a count is atomic under the GIL
    flow_no = itertools.count()
    stats = Stats()
    stop_at = time.monotonic() + a.duration

    def atrium(cl, method, path, body=None, key=None, expect=(200, 201)):
        base = a.base[next(rr) % len(a.base)]
        h = dict(auth)
        if key:
            h["Idempotency-Key"] = key
        status, doc, raw = cl.request(base, method, path, body, h)
        if status not in expect:
            raise FlowError(f"{method} {re.sub(r'/[0-9]+', '/{id}', path)}: {status} {raw[:160]!r}")
        return doc

    def platform(cl, path, body):
        status, doc, raw = cl.request(a.standin, "POST", path, body)
        if status != 200:
            raise FlowError(f"POST {path}: {status} {raw[:160]!r}")
        # The stand-in posts the notification before it answers. An attempt that fails (a
        # keep-alive connection closed under it, a time-out) is retried by the stand-in after
        # 1, 3 and 10 s, as the real platform retries: the flow goes on and waits for the
        # order's status; such attempts are counted.
        attempts = ((doc or {}).get("notification") or {}).get("attempts") or []
        if not attempts or attempts[0].get("status") != 204:
            with stats.lock:
                stats.notify_retried += 1
                why = (attempts[0].get("error") or attempts[0].get("status")) if attempts else "no attempt"
                stats.notify_why[str(why)] = stats.notify_why.get(str(why), 0) + 1
        return doc

    def wait_for(cl, order_id, status):
        deadline = time.monotonic() + a.wait
        pause = a.poll
        while True:
            doc = atrium(cl, "GET", f"/api/v1/orders/{order_id}", expect=(200,))
            with stats.lock:
                stats.polls += 1
            if doc["data"]["status"] == status:
                return doc["data"]
            if time.monotonic() >= deadline:
                raise FlowError(f"order not {status} within {a.wait:g} s (still {doc['data']['status']})")
            # Backing off (a payer's page would, too) keeps the reads from being most of the load.
            time.sleep(pause)
            pause = min(pause * 2, a.poll_max)

    def one_flow(cl, n):
        tenant = tenants[n % len(tenants)]
        key = f"{a.run}-{n}"
        t0 = time.monotonic()

        def step(name, fn):
            t = time.monotonic()
            out = fn()
            stats.add(name, time.monotonic() - t)
            return out

        order = step("create", lambda: atrium(cl, "POST", "/api/v1/orders", {
            "tenant_id": tenant, "subject": f"scale {key}",
            "items": [{"name": "Beans 500 g", "quantity": 2, "unit_price": AMOUNT // 2}], "openid": "o_scale"},
            key=f"c-{key}"))["data"]
        oid = order["id"]
        pay = step("pay", lambda: atrium(cl, "POST", f"/api/v1/orders/{oid}/pay", {"method": "wechat_jsapi"},
                                         key=f"p-{key}"))["data"]
        step("platform_pay", lambda: platform(cl, "/sandbox/control/pay", {"pay_params": pay["pay_params"], "result": "SUCCESS"}))
        step("wait_paid", lambda: wait_for(cl, oid, "paid"))
        refund = step("refund", lambda: atrium(cl, "POST", f"/api/v1/orders/{oid}/refund",
                                               {"amount": AMOUNT, "reason": "scale bench"}, key=f"r-{key}"))["data"]
        out_refund_no = refund["refund"]["out_refund_no"]
        step("platform_refund", lambda: platform(cl, "/sandbox/control/refund", {"out_refund_no": out_refund_no, "result": "SUCCESS"}))
        final = step("wait_refunded", lambda: wait_for(cl, oid, "refunded"))
        if final["paid_amount"] != AMOUNT or final["refunded_amount"] != AMOUNT:
            raise FlowError(f"refunded order shows paid {final['paid_amount']}, refunded {final['refunded_amount']}")
        stats.add("flow", time.monotonic() - t0)

    def worker():
        cl = Client(timeout=30)
        while time.monotonic() < stop_at:
            n = next(flow_no)
            if a.max_flows and n >= a.max_flows:
                break
            with stats.lock:
                stats.started += 1
            try:
                one_flow(cl, n)
                with stats.lock:
                    stats.ok += 1
            except FlowError as e:
                stats.error(str(e))
            except Exception as e:  # a malformed answer: count it, keep the load going
                stats.error(f"{type(e).__name__}: {e}")

    began = time.monotonic()
    threads = [threading.Thread(target=worker, daemon=True) for _ in range(a.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began

    summary = {
        "run": a.run,
        "instances": len(a.base),
        "concurrency": a.concurrency,
        "elapsed_s": round(elapsed, 2),
        "flows_started": stats.started,
        "flows_ok": stats.ok,
        "flows_failed": stats.failed,
        "flows_per_s": round(stats.ok / elapsed, 2) if elapsed else 0,
        "status_reads": stats.polls,
        "notifications_retried": stats.notify_retried,
        "notification_first_attempts": stats.notify_why,
        "driver_cpu_s": round(os.times().user + os.times().system, 2),
        "steps_ms": {s: {"n": len(v), "p50": round(1000 * pct(v, 50), 1) if v else None,
                         "p99": round(1000 * pct(v, 99), 1) if v else None} for s, v in stats.times.items()},
        "errors": stats.errors,
    }
    print(f"{a.run}: {len(a.base)} instance(s), {a.concurrency} flows at a time, {elapsed:.1f} s: "
          f"{stats.ok} flows ok, {stats.failed} failed, {summary['flows_per_s']} flows/s")
    if stats.notify_retried:
        print(f"  notifications whose first attempt failed (the stand-in retries them): {stats.notify_retried} {stats.notify_why}")
    for s in STEPS:
        m = summary["steps_ms"][s]
        if m["n"]:
            print(f"  {s:<16} p50 {m['p50']:>8.1f} ms   p99 {m['p99']:>8.1f} ms   ({m['n']})")
    for msg, n in sorted(stats.errors.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  error x{n}: {msg}", file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
