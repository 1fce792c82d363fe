#!/usr/bin/env python3
"""The figures table of docs/performance.md from bench/all.sh's results (and, optionally, an
earlier run's, shown as "before → now"). Replaces what lies between the two markers below."""
import argparse
import os
import platform
import re
import subprocess
import sys

BEGIN = "<!-- bench/all.sh: begin -->"
END = "<!-- bench/all.sh: end -->"
EXPLAIN_BEGIN = "<!-- bench/explain.sh: begin -->"
EXPLAIN_END = "<!-- bench/explain.sh: end -->"

# (bench, figure): what it is, and the target where there is one.
ROWS = [
    ("org", "healthz", "`/healthz` (the yardstick; it asks the database)", ""),
    ("org", "employee_detail", "employee detail", ""),
    ("org", "tenant_list_page1", "employees, tenant, page 1", ""),
    ("org", "tenant_list_keyword", "employees, tenant keyword (`worker 99`)", "≥ 15 %"),
    ("org", "tenant_list_filtered", "employees, tenant, status + department, page 2", ""),
    ("org", "platform_list_page1", "employees, platform, page 1", ""),
    ("org", "platform_list_page500", "employees, platform, page 500", "≥ 25 %"),
    ("org", "platform_list_tenant_filter", "employees, platform, `tenant_id`, page 3", ""),
    ("org", "platform_list_keyword", "employees, platform keyword (`worker 999`)", "≥ 15 %, p99 ≤ 20 ms"),
    ("org", "seed_employees", "`atrium seed`, 1,000 × 1,000 employees", "PostgreSQL ≤ 60 s"),
    ("orders", "healthz", "`/healthz`", ""),
    ("orders", "order_detail", "order detail", ""),
    ("orders", "tenant_list_filtered", "orders, tenant, status + created range, page 2", "≥ 20 %"),
    ("orders", "tenant_list_keyword", "orders, tenant keyword", ""),
    ("orders", "platform_list_filtered", "orders, platform, status + `tenant_id`, page 3", ""),
    ("orders", "platform_list_status", "orders, platform, `status=closed`, page 2", "≥ 15 %"),
    ("orders", "create_idempotent", "order create with `Idempotency-Key`", "≥ 3,000/s, p99 ≤ 25 ms"),
    ("payments", "healthz", "`/healthz`", ""),
    ("payments", "unified_order", "unified-order end to end (stand-in in its own process)", "≥ 1,000/s, p99 ≤ 50 ms"),
    ("payments", "unified_order_cpu_server", "… its server's CPU time per order", ""),
    ("payments", "unified_order_cpu_standin", "… the stand-in's CPU time per order", ""),
    ("payments", "unified_order_server_alone", "… what the server alone does on these cores (from its CPU time)", "≥ 1,000/s"),
    ("payments", "notification", "signed payment notifications", "≥ 1,000/s"),
    ("payroll", "calculate_10000", "payroll calculate, 10,000 lines (median)", "≤ 150 ms"),
    ("payroll", "export_xlsx", "export, xlsx, 10,000 lines", ""),
    ("payroll", "export_csv", "export, csv", ""),
    ("payroll", "import_csv", "import, csv", ""),
    ("payroll", "import_xlsx", "import, xlsx", ""),
    ("payroll100k", "calculate_100000", "payroll calculate, 100,000 lines (median)", "≤ 1.5 s"),
]


def load(path):
    figures = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 7:
                continue
            backend, bench, name, value, unit, p99, share = parts[:7]
            figures[(backend, bench, name)] = (float(value), unit, p99, share)
    return figures


def number(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}".rstrip("0").rstrip(".")


def cell(fig):
    if fig is None:
        return "—"
    value, unit, p99, share = fig
    text = f"{number(value)} {unit}"
    if share and unit == "req/s":
        text += f" · {share} %"
    if p99:
        text += f" · p99 {number(float(p99))} ms"
    return text


def both(now, before):
    if before is None:
        return cell(now)
    return f"{cell(before)} → **{cell(now)}**"


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""


def machine(commit=None):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.+)", f.read())
            cpu = m.group(1).strip() if m else ""
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
            mem = f"{kib / 1024 / 1024:.0f} GiB"
    except (OSError, AttributeError):
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem}, Linux {platform.release()}; "
        f"commit {commit or sh('git rev-parse --short HEAD')}, {sh('date -u +%Y-%m-%d')}; "
        f"{sh('psql --version')} (throwaway cluster: fsync and synchronous_commit off)"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--before")
    ap.add_argument("--doc", required=True)
    ap.add_argument("--explain", nargs="*", default=[], help="bench/explain.sh's markdown, one file per backend")
    ap.add_argument("--commit", help="the commit the results were measured on (default: HEAD)")
    a = ap.parse_args()
    now = load(a.results)
    before = load(a.before) if a.before else {}
    lines = [
        BEGIN,
        "",
        f"Machine: {machine(a.commit)}. Each req/s figure is wrk with 2 threads and 16 connections"
        " for 10 s, beside its share of `/healthz` of the same server in"
        " the same run." + (" Cells read *before → **now***." if before else ""),
        "",
        "| bench | SQLite | PostgreSQL | target |",
        "|---|---|---|---|",
    ]
    for bench, name, what, target in ROWS:
        s = ("sqlite", bench, name)
        p = ("postgres", bench, name)
        if s not in now and p not in now:
            continue
        lines.append(f"| {what} | {both(now.get(s), before.get(s))} | {both(now.get(p), before.get(p))} | {target} |")
    lines += ["", END]
    table = "\n".join(lines)
    doc = open(a.doc).read() if os.path.exists(a.doc) else f"# Performance\n\n{BEGIN}\n{END}\n"
    doc = between(doc, BEGIN, END, table)
    if a.explain:
        plans = "\n".join(open(f).read() for f in a.explain)
        doc = between(doc, EXPLAIN_BEGIN, EXPLAIN_END, f"{EXPLAIN_BEGIN}\n\n{plans}\n{EXPLAIN_END}")
    with open(a.doc, "w") as f:
        f.write(doc)


def between(doc, begin, end, text):
    """`doc` with what lies from `begin` to `end` (both included) replaced by `text`."""
    if begin not in doc or end not in doc:
        sys.exit(f"the document has no {begin} … {end} markers")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + text + tail


if __name__ == "__main__":
    main()
