"""Summarises a schemathesis run of scripts/fuzz.sh from its NDJSON event report.

Prints: operations tested, test cases generated, failures grouped by check (which operations,
how many, one example each), server errors (5xx) by operation, errors schemathesis hit, the
fixture's re-logins, and panics in the server log. Exit 1 on any finding, else 0.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

OPERATION = re.compile(r"^[A-Z]+ /")


def first_line(text: str, limit: int = 220) -> str:
    line = " ".join(text.strip().split("\n")[:3]) if text else ""
    line = re.sub(r"\s+", " ", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", required=True)
    ap.add_argument("--server-log", required=True)
    ap.add_argument("--fixture-log")
    ap.add_argument("--validation", default="valid")
    ap.add_argument("--seed", default="?")
    ap.add_argument("--elapsed", default="?")
    ap.add_argument("--schemathesis-exit", default="0")
    ap.add_argument("--details", help="write every failing operation and message, with an example, to this file")
    ap.add_argument("--examples", type=int, default=3, help="operations listed per finding before '… and N more'")
    args = ap.parse_args()

    selected = total = None
    tested: set[str] = set()
    skipped: dict[str, str] = {}
    phases: dict[str, str] = {}
    cases: set[str] = set()
    requests_sent = 0
    # (check, title) -> operation -> message -> count; one example request per (check, title, operation, message)
    failures: dict[tuple[str, str], dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    examples: dict[tuple[str, str, str, str], str] = {}
    tally: Counter = Counter()  # (check, status) -> results
    server_errors: dict[str, Counter] = defaultdict(Counter)
    server_error_example: dict[str, str] = {}
    errors: list[str] = []
    stop_reason = "unknown"
    reauth = 0

    path = Path(args.events)
    if not path.exists():
        print(f"no event report at {path}: schemathesis did not run")
        return 1
    for line in path.open(encoding="utf-8"):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        (kind, body), = event.items()
        if kind == "LoadingFinished":
            ops = body.get("statistic", {}).get("operations", {})
            total, selected = ops.get("total"), ops.get("selected")
        elif kind == "PhaseFinished":
            phase = body["phase"]
            status = body.get("status", "?")
            if not phase.get("is_enabled", True):
                status = f"skipped ({phase.get('skip_reason', '?')})"
            phases[phase["name"]] = status
        elif kind == "ScenarioFinished":
            if body.get("phase") == "auth_bootstrap":
                continue
            recorder = body["recorder"]
            label = recorder.get("label") or "?"
            is_operation = OPERATION.match(label) is not None
            if body.get("status") == "skip":
                if is_operation:
                    skipped.setdefault(label, body.get("skip_reason") or "")
            elif is_operation:
                tested.add(label)
            tested.update(collect(recorder, label if is_operation else None, cases, failures, examples, server_errors, server_error_example, tally))
            requests_sent += len(recorder.get("interactions", {}))
        elif kind == "FuzzScenarioFinished":
            recorder = body["recorder"]
            tested.update(collect(recorder, None, cases, failures, examples, server_errors, server_error_example, tally))
            requests_sent += len(recorder.get("interactions", {}))
        elif kind in ("NonFatalError", "FatalError"):
            info = body.get("info") or body.get("value") or body
            label = body.get("label", "")
            errors.append(f"{label}: {first_line(json.dumps(info) if not isinstance(info, str) else info, 300)}")
        elif kind == "EngineFinished":
            stop_reason = body.get("stop_reason", stop_reason)
            reauth = (body.get("payload") or {}).get("reauth_count", 0)
    never_tested = {k: v for k, v in skipped.items() if k not in tested}

    print(f"seed {args.seed}; {args.elapsed}s in all; schemathesis stopped: {stop_reason} (exit {args.schemathesis_exit})")
    print(f"document: {args.validation}")
    print(f"operations: {len(tested)} tested of {selected} selected ({total} in the document)")
    for label, why in sorted(never_tested.items()):
        print(f"  not tested: {label}: {why}")
    print("phases: " + ", ".join(f"{k} {v}" for k, v in phases.items() if k not in ("probing", "schema_analysis", "auth_bootstrap")))
    print(f"test cases: {len(cases)} generated, {requests_sent} requests recorded")
    names = sorted({name for name, _ in tally}, key=lambda n: -sum(v for (c, _), v in tally.items() if c == n))
    print("checks run (passed/failed): " + ", ".join(f"{n} {tally[(n, 'success')]}/{tally[(n, 'failure')]}" for n in names))

    findings = 0
    by_check: Counter = Counter()
    for (check, _), ops in failures.items():
        by_check[check] += sum(sum(m.values()) for m in ops.values())
    distinct = sum(len(m) for ops in failures.values() for m in ops.values())
    print(f"\nfailures by check: {sum(by_check.values())} failing check results, {distinct} distinct (operation, check, message)")
    if not failures:
        print("  none")
    details: list[str] = []
    for check, n in by_check.most_common():
        groups = [(title, ops) for (c, title), ops in failures.items() if c == check]
        print(f"  {check}: {n}")
        for title, ops in sorted(groups, key=lambda g: -sum(sum(m.values()) for m in g[1].values())):
            findings += 1
            ranked = sorted(ops.items(), key=lambda kv: -sum(kv[1].values()))
            print(f"    {title}: {len(ops)} operation(s), {sum(sum(m.values()) for m in ops.values())} result(s)")
            details.append(f"\n## {check}: {title} ({len(ops)} operations)\n")
            for i, (op, messages) in enumerate(ranked):
                for j, (message, count) in enumerate(messages.most_common()):
                    example = examples.get((check, title, op, message), "")
                    details.append(f"- {op} ×{count}: {message}\n  e.g. {example}")
                    if i < args.examples and j < 2:
                        print(f"      {op} ×{count}: {message}")
                        if example:
                            print(f"        e.g. {first_line(example, 400)}")
                if i < args.examples and len(messages) > 2:
                    print(f"        (+{len(messages) - 2} other message(s))")
            if len(ranked) > args.examples:
                print(f"      … and {len(ranked) - args.examples} more: {', '.join(op for op, _ in ranked[args.examples:])}")
    if args.details:
        Path(args.details).write_text("# Failures by check, every operation and message\n" + "\n".join(details) + "\n", encoding="utf-8")
        print(f"  (every operation and message, with an example each: {args.details})")

    print(f"\nserver errors (5xx): {sum(sum(c.values()) for c in server_errors.values())}")
    for op, statuses in sorted(server_errors.items()):
        findings += 1
        print(f"  {op}: " + ", ".join(f"{s} ×{n}" for s, n in sorted(statuses.items())) + f"  e.g. {server_error_example[op]}")

    if errors:
        print(f"\nerrors schemathesis met ({len(errors)}):")
        for e in errors[:20]:
            print(f"  {e}")
        findings += len(errors)

    log = Path(args.server_log).read_text(encoding="utf-8", errors="replace") if Path(args.server_log).exists() else ""
    panics = [l for l in log.splitlines() if "panicked at" in l]
    print(f"\npanics in the server log: {len(panics)}")
    for p in panics[:10]:
        print(f"  {first_line(p, 300)}")
    findings += len(panics)
    logged = Counter(re.sub(r"^\[[^\]]*\]\s*", "", l)[:200] for l in log.splitlines() if " ERROR " in l[:60])
    if logged:
        print(f"ERROR lines in the server log (not counted as findings): {sum(logged.values())}")
        for line, n in logged.most_common(5):
            print(f"  ×{n} {line}")

    if args.fixture_log and Path(args.fixture_log).exists():
        events = Counter(l.split()[1] for l in Path(args.fixture_log).read_text().splitlines() if len(l.split()) > 1)
        print(
            f"\nfixture: {reauth} request(s) replayed after a 401 re-login; "
            + (", ".join(f"{k} ×{n}" for k, n in sorted(events.items())) or "no re-logins or replacements")
        )

    print(f"\n{'FAIL' if findings else 'OK'}: {findings} distinct finding(s)")
    return 1 if findings else 0


def collect(recorder, label, cases, failures, examples, server_errors, server_error_example, tally):  # type: ignore[no-untyped-def]
    """Adds one recorder's cases, failures and 5xx answers; returns the operations it exercised."""
    case_ops = {}
    for case_id, entry in recorder.get("cases", {}).items():
        value = entry.get("value", {})
        op = f"{value.get('method', '?').upper()} {value.get('path', '?')}"
        case_ops[case_id] = op
        cases.add(case_id)
    interactions = recorder.get("interactions", {})
    for case_id, results in recorder.get("checks", {}).items():
        for result in results:
            tally[(result.get("name", "?"), result.get("status", "?"))] += 1
            if result.get("status") != "failure":
                continue
            failure = (result.get("failure_info") or {}).get("failure") or {}
            op = failure.get("operation") or case_ops.get(case_id) or label or "?"
            key = (result["name"], f"{failure.get('code', '')} {failure.get('title', '')}".strip())
            message = first_line(failure.get("message", "")) or failure.get("title", "")
            failures[key][op][message] += 1
            if (*key, op, message) not in examples and case_id in interactions:
                examples[(*key, op, message)] = describe(interactions[case_id])
    for case_id, interaction in interactions.items():
        response = interaction.get("response") or {}
        status = response.get("status_code")
        if isinstance(status, int) and status >= 500:
            op = label or case_ops.get(case_id) or "?"
            server_errors[op][status] += 1
            server_error_example.setdefault(op, describe(interaction))
    return {op for op in case_ops.values() if OPERATION.match(op)} if label is None else set()


def payload(value) -> str:  # type: ignore[no-untyped-def]
    """A recorded body as text: cassettes keep it as {"string": …} or {"$base64": …}."""
    if not isinstance(value, dict):
        return ""
    if "string" in value:
        return str(value["string"])
    if "$base64" in value:
        return base64.b64decode(value["$base64"]).decode("utf-8", errors="replace")
    return ""


def describe(interaction) -> str:  # type: ignore[no-untyped-def]
    request = interaction.get("request") or {}
    response = interaction.get("response") or {}
    text = f"{request.get('method', '?')} {re.sub(r'^https?://[^/]+', '', request.get('uri', '?'))}"
    body = payload(request.get("body"))
    if body:
        text += f" {first_line(body, 160)}"
    status = response.get("status_code")
    if status is not None:
        text += f" → {status}"
        content = payload(response.get("content"))
        if content:
            text += f" {first_line(content, 200)}"
    return text


if __name__ == "__main__":
    sys.exit(main())
