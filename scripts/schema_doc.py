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
import readme_block  # noqa: E402  (scripts/, beside this file)

from ansible_collections.sparkfleet.cluster.plugins.module_utils import inventory_schema  # noqa: E402

BEGIN, END = "<!-- schema:begin (scripts/schema_doc.py) -->", "<!-- schema:end -->"


def main() -> int:
    return readme_block.sync(BEGIN, END, inventory_schema.markdown_table(), "variable table", "--check" in sys.argv)


if __name__ == "__main__":
    sys.exit(main())
