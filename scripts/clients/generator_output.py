"""Reads what `openapi-python-client generate` printed and fails on any warning but the two
expected ones. Used by scripts/clients.sh:

    python generator_output.py GENERATOR_OUTPUT_FILE

The generator prints blank-line separated paragraphs: "Generating <path>", then, when it has
something to say, a header, one "WARNING parsing METHOD PATH within TAG. ..." paragraph per
operation followed by paragraphs of detail, schema-level errors (which have no WARNING line),
and a closing line asking for bug reports.

Expected: the two event URLs under /api/v1/miniprogram/component/ take the messaging
platform's `<xml>` bodies, which the generator does not support ("Unsupported content type
text/xml"): it leaves those two operations out, and no client calls them anyway (the
platform does). Anything else is printed and fails.
"""

import re
import sys

BOILERPLATE = [
    re.compile(r"Generating .+"),
    re.compile(r"Warning\(s\) encountered while generating\. Client was generated, but some pieces may be missing"),
    re.compile(r"If you believe this was a mistake or this tool is missing a feature you need, please open an issue at \S+"),
]
WARNING = re.compile(r"WARNING parsing (\S+) (\S+) within \S+\..*")
XML_EVENT_URL = re.compile(r"/api/v1/miniprogram/component/\S+")
XML_DETAIL = re.compile(r"Unsupported content type (text|application)/xml")


def main() -> int:
    lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
    text = "\n".join(line for line in lines if not any(b.fullmatch(line.strip()) for b in BOILERPLATE))
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    expected, unexpected = [], []
    i = 0
    while i < len(paragraphs):
        p = paragraphs[i]
        # A warning and its detail paragraphs, up to the next warning.
        j = i + 1
        if WARNING.fullmatch(p.splitlines()[0]):
            while j < len(paragraphs) and not WARNING.fullmatch(paragraphs[j].splitlines()[0]):
                j += 1
        block = paragraphs[i:j]
        m = WARNING.fullmatch(block[0])
        if (
            m
            and m.group(1) == "POST"
            and XML_EVENT_URL.fullmatch(m.group(2))
            and len(block) == 2
            and XML_DETAIL.fullmatch(block[1])
        ):
            expected.append(m.group(2))
        else:
            unexpected.append("\n\n".join(block))
        i = j
    for block in unexpected:
        print(f"unexpected generator output:\n{block}\n", file=sys.stderr)
    print(
        f"{len(unexpected)} unexpected warning(s)"
        + (f", {len(expected)} expected (XML event URLs left out: {', '.join(expected)})" if expected else "")
    )
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
