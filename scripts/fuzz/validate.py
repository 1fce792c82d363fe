"""Validates an OpenAPI document with openapi-spec-validator; prints the first errors.

usage: validate.py DOCUMENT.json [MAX_SHOWN]
Exit 0 when valid, 1 when not: prints the count, the errors grouped by kind (with where they
are), and the first MAX_SHOWN errors one per line.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict

from openapi_spec_validator.shortcuts import get_validator_cls

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def headline(error) -> str:  # type: ignore[no-untyped-def]
    return str(error.message).strip().splitlines()[0][:300]


def where(error) -> str:  # type: ignore[no-untyped-def]
    """The error's place in the document, as `METHOD /path …` when it is inside an operation."""
    parts = [str(p) for p in error.absolute_path]
    if len(parts) >= 3 and parts[0] == "paths" and parts[2] in METHODS:
        rest = "".join(f"[{p}]" for p in parts[3:])
        return f"{parts[2].upper()} {parts[1]} {rest}".strip()
    return "/".join(parts) or "?"


def kind(message: str) -> str:
    """The message with its particulars (quoted names, paths) blanked, to group alike errors."""
    return re.sub(r"'[^']*'", "'…'", message)


def duplicate_parameters(document: dict) -> list[str]:
    """Operations that declare one parameter twice (the validator does not say where)."""
    found = []
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            params = [(p.get("name"), p.get("in")) for p in item.get("parameters", []) + op.get("parameters", [])]
            dups = sorted({f"{n} ({loc})" for n, loc in params if params.count((n, loc)) > 1})
            if dups:
                found.append(f"{method.upper()} {path}: {', '.join(dups)}")
    return found


def main() -> int:
    document = json.load(open(sys.argv[1], encoding="utf-8"))
    shown = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    cls = get_validator_cls(document)
    errors = list(cls(document).iter_errors())
    print(f"openapi-spec-validator ({cls.__name__}, openapi {document.get('openapi')}): ", end="")
    if not errors:
        print("valid")
        return 0
    print(f"{len(errors)} error(s)")
    groups: dict[str, list[str]] = defaultdict(list)
    for e in errors:
        groups[kind(headline(e))].append(where(e) if e.absolute_path else headline(e))
    print("  by kind:")
    for k, places in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"    {len(places):4}  {k}")
        if k.startswith("Duplicate parameter"):
            places = duplicate_parameters(document)
        for place in places[:6]:
            print(f"            {place}")
        if len(places) > 6:
            print(f"            … and {len(places) - 6} more")
    print(f"  the first {min(shown, len(errors))}:")
    for i, e in enumerate(errors[:shown], 1):
        print(f"    [{i}] {where(e) if e.absolute_path else ''}: {headline(e)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
