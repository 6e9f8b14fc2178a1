"""Rewrite (or check) one generated block of README.md, between its begin and end markers: the variable table
(scripts/schema_doc.py) and the port table (scripts/ports_doc.py)."""
from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def sync(begin: str, end: str, body: str, what: str, check: bool) -> int:
    """0 when README.md holds `body` between the markers (after writing it, unless `check`), 1 with a message."""
    text = README.read_text()
    if begin not in text or end not in text:
        print(f"README.md lacks the markers {begin} ... {end}", file=sys.stderr)
        return 1
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    new = f"{head}{begin}\n{body}\n{end}{tail}"
    if check:
        if new != text:
            print(f"README.md's {what} is out of date: run python3 scripts/{Path(sys.argv[0]).name}", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0
