#!/usr/bin/env python3
"""Write the README's cluster-variable table from the inventory schema (one source of truth).

    python3 scripts/schema_doc.py          # rewrite the table in README.md
    python3 scripts/schema_doc.py --check  # exit 1 when README.md is out of date (the unit tests do this)
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.sparkfleet.cluster.plugins.module_utils import inventory_schema  # noqa: E402

BEGIN, END = "<!-- schema:begin (scripts/schema_doc.py) -->", "<!-- schema:end -->"


def render(readme: str) -> str:
    head, _, rest = readme.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{inventory_schema.markdown_table()}\n{END}{tail}"


def main() -> int:
    path = ROOT / "README.md"
    text = path.read_text()
    if BEGIN not in text or END not in text:
        print(f"README.md lacks the markers {BEGIN} ... {END}", file=sys.stderr)
        return 1
    new = render(text)
    if "--check" in sys.argv:
        if new != text:
            print("README.md's variable table is out of date: run python3 scripts/schema_doc.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
