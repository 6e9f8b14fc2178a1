#!/usr/bin/env python3
"""Run molecule scenarios and print how long each took.

    scripts/molecule_all.py [SCENARIO|ROLE ...]      default: every scenario under molecule/ but EXPLICIT_ONLY

Role scenarios (MOLECULE_LAB_SHARED true, the base config's default) share one lab, mol-roles: it is created by the
first of them, kept between them (SPARKFLEET_LAB_KEEP=1) and removed at the end. Integration scenarios (default,
fabric, kubernetes_node) have their own lab each and run after the role scenarios (the shared lab is removed before
them). The arm64 scenario (BESIDE) runs at the same time as all of these, on its own lab and subnets, when other
scenarios run too: its log goes to reports/molecule-arm64.log and is printed when it ends. Every scenario runs even
when one before it failed; the exit code is non-zero when any failed. The table goes to stdout and
reports/molecule-times.md. SPARKFLEET_MOLECULE_SKIP=arm64 (comma-separated) leaves scenarios out.
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
# Scenarios that run beside the others rather than after them. The whole site.yml with an emulated arm64 node takes
# about 25 min of mostly one busy qemu process; the other scenarios leave about a third of the 2 cores idle (waits on
# services, timers and SSH), so side by side the whole run grows by much less than 25 min.
BESIDE = ("arm64",)


def is_shared(name: str) -> bool:
    text = (MOLECULE / name / "molecule.yml").read_text()
    return 'MOLECULE_LAB_SHARED: "false"' not in text


def scenarios(wanted: list[str]) -> list[str]:
    found = sorted(p.parent.name for p in MOLECULE.glob("*/molecule.yml"))
    unknown = [w for w in wanted if w not in found]
    if unknown:
        sys.exit(f"molecule_all: no scenario {', '.join(unknown)} (scenarios: {', '.join(found)})")
    skip = {s for s in os.environ.get("SPARKFLEET_MOLECULE_SKIP", "").split(",") if s}
    chosen = wanted or [n for n in found if n not in skip]
    for n in sorted(skip & set(found) - set(chosen)):
        print(f"molecule_all: {n} not run (SPARKFLEET_MOLECULE_SKIP)", flush=True)
    # Role scenarios first (one shared lab), then the integration scenarios.
    return sorted(chosen, key=lambda n: (not is_shared(n), n))


def main(argv: list[str]) -> int:
    names = scenarios([a for a in argv if a])
    env = dict(os.environ, SPARKFLEET_LAB_KEEP="1")
    rows, failed = [], []
    start = time.time()
    (ROOT / "reports").mkdir(exist_ok=True)
    shared_up = False

    def shared_down() -> None:
        # Before the integration scenarios: they need the machine's memory and CPU, not an idle lab.
        subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "down", "--name", SHARED_LAB], check=False)

    beside = {}
    if len(names) > 1:
        for name in [n for n in names if n in BESIDE]:
            names.remove(name)
            log = open(ROOT / "reports" / f"molecule-{name}.log", "w")
            print(f"molecule_all: === {name} (beside the others; log: reports/molecule-{name}.log)", flush=True)
            beside[name] = (subprocess.Popen(["molecule", "test", "-s", name], cwd=ROOT, env=env, stdout=log,
                                             stderr=subprocess.STDOUT), log, time.time())
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
        for name, (proc, log, t0) in beside.items():
            rc = proc.wait()
            log.close()
            print(f"molecule_all: === {name} (ran beside the others): its log\n"
                  + (ROOT / "reports" / f"molecule-{name}.log").read_text(errors="replace"), flush=True)
            rows.append((name, "integration (beside)", time.time() - t0, rc))
            if rc:
                failed.append(name)
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
