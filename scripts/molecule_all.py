#!/usr/bin/env python3
"""Run molecule scenarios and print how long each took.

    scripts/molecule_all.py [SCENARIO|ROLE ...]      default: every scenario under molecule/ but EXPLICIT_ONLY

Role scenarios (MOLECULE_LAB_SHARED true, the base config's default) share one lab, mol-roles: it is created by the
first of them, kept between them (SPARKFLEET_LAB_KEEP=1) and removed at the end. Integration scenarios (default,
fabric, kubernetes_node, arm64) have their own lab each and run after the role scenarios (the shared lab is
removed before them). Every scenario runs even when one
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
# Scenarios a plain run leaves out (name them, or set SPARKFLEET_MOLECULE_ALL=1): why, in one line.
EXPLICIT_ONLY = {
    "arm64": "the whole site.yml with an emulated arm64 node costs about 30 min on a 2-core machine (image 5, converge "
             "14, idempotence 5, verify 4): run it with `make test SCENARIO=arm64`",
}


def is_shared(name: str) -> bool:
    text = (MOLECULE / name / "molecule.yml").read_text()
    return 'MOLECULE_LAB_SHARED: "false"' not in text


def scenarios(wanted: list[str]) -> list[str]:
    found = sorted(p.parent.name for p in MOLECULE.glob("*/molecule.yml"))
    unknown = [w for w in wanted if w not in found]
    if unknown:
        sys.exit(f"molecule_all: no scenario {', '.join(unknown)} (scenarios: {', '.join(found)})")
    chosen = wanted or [n for n in found if n not in EXPLICIT_ONLY or os.environ.get("SPARKFLEET_MOLECULE_ALL") == "1"]
    for n in sorted(set(found) - set(chosen)):
        if n in EXPLICIT_ONLY:
            print(f"molecule_all: {n} not run: {EXPLICIT_ONLY[n]}", flush=True)
    # Role scenarios first (one shared lab), then the integration scenarios.
    return sorted(chosen, key=lambda n: (not is_shared(n), n))


def main(argv: list[str]) -> int:
    names = scenarios([a for a in argv if a])
    env = dict(os.environ, SPARKFLEET_LAB_KEEP="1")
    rows, failed = [], []
    start = time.time()
    shared_up = False

    def shared_down() -> None:
        # Before the integration scenarios: they need the machine's memory and CPU, not an idle lab.
        subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "down", "--name", SHARED_LAB], check=False)

    try:
        for name in names:
            if shared_up and not is_shared(name):
                shared_down()
                shared_up = False
            shared_up = shared_up or is_shared(name)
            t0 = time.time()
            print(f"molecule_all: === {name}", flush=True)
            rc = subprocess.run(["molecule", "test", "-s", name], cwd=ROOT, env=env, check=False).returncode
            rows.append((name, "role (shared lab)" if is_shared(name) else "integration", time.time() - t0, rc))
            if rc:
                failed.append(name)
    finally:
        if shared_up:
            shared_down()
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
