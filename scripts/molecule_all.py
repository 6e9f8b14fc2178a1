#!/usr/bin/env python3
"""Run molecule scenarios and print how long each took.

    scripts/molecule_all.py [SCENARIO|ROLE ...]      default: every scenario under molecule/

Role scenarios (MOLECULE_LAB_SHARED true, the base config's default) share one lab, mol-roles: it is created by the
first of them, kept between them (SPARKFLEET_LAB_KEEP=1) and removed at the end. Integration scenarios (default,
fabric, kubernetes_node) have their own lab each and run after the role scenarios. Every scenario runs even when one
before it failed; the exit code is non-zero when any failed. The table goes to stdout and reports/molecule-times.md.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOLECULE = ROOT / "molecule"
SHARED_LAB = "mol-roles"


def is_shared(name: str) -> bool:
    text = (MOLECULE / name / "molecule.yml").read_text()
    return 'MOLECULE_LAB_SHARED: "false"' not in text


def scenarios(wanted: list[str]) -> list[str]:
    found = sorted(p.parent.name for p in MOLECULE.glob("*/molecule.yml"))
    unknown = [w for w in wanted if w not in found]
    if unknown:
        sys.exit(f"molecule_all: no scenario {', '.join(unknown)} (scenarios: {', '.join(found)})")
    chosen = wanted or found
    # Role scenarios first (one shared lab), then the integration scenarios.
    return sorted(chosen, key=lambda n: (not is_shared(n), n))


def main(argv: list[str]) -> int:
    names = scenarios([a for a in argv if a])
    env = dict(os.environ, SPARKFLEET_LAB_KEEP="1")
    rows, failed = [], []
    start = time.time()
    try:
        for name in names:
            t0 = time.time()
            print(f"molecule_all: === {name}", flush=True)
            rc = subprocess.run(["molecule", "test", "-s", name], cwd=ROOT, env=env, check=False).returncode
            rows.append((name, "role (shared lab)" if is_shared(name) else "integration", time.time() - t0, rc))
            if rc:
                failed.append(name)
    finally:
        if any(is_shared(n) for n in names):
            subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "down", "--name", SHARED_LAB], check=False)
    lines = ["| scenario | kind | seconds | result |", "| --- | --- | --- | --- |"]
    lines += [f"| {n} | {k} | {s:.0f} | {'passed' if rc == 0 else f'FAILED (rc {rc})'} |" for n, k, s, rc in rows]
    lines.append(f"| all ({len(rows)}) | | {time.time() - start:.0f} | {len(rows) - len(failed)} passed, {len(failed)} failed |")
    table = "\n".join(lines)
    (ROOT / "reports").mkdir(exist_ok=True)
    (ROOT / "reports" / "molecule-times.md").write_text(table + "\n")
    print("molecule_all: time per scenario\n" + table, flush=True)
    if failed:
        print(f"molecule_all: failed scenarios: {' '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
