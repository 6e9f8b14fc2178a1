#!/usr/bin/env python3
"""Run molecule scenarios and print how long each took.

    scripts/molecule_all.py [SCENARIO|ROLE ...]      default: every scenario under molecule/

Two lanes when more than one scenario runs. The first: role scenarios (MOLECULE_LAB_SHARED true, the base config's
default) share one lab, mol-roles: it is created by the first of them, kept between them (SPARKFLEET_LAB_KEEP=1) and
removed at the end; then the default scenario on its own lab. The second, at the same time: the BESIDE integration scenarios (arm64, lifecycle, fabric, kubernetes_node, hgx), one after
another, each on its own lab, subnets and fact cache; their logs go to reports/molecule-NAME.log and are printed when
both lanes are done (a TRY_AGAIN scenario that fails gets a second try on its lab right away). The linters and unit
tests (make test) run at the end of whichever lane is done first. Every scenario runs even when one before it failed; the exit code is non-zero
when any failed. The table goes to stdout and reports/molecule-times.md.
SPARKFLEET_MOLECULE_SKIP=arm64 (comma-separated) leaves scenarios out.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOLECULE = ROOT / "molecule"
SHARED_LAB = "mol-roles"
# Scenarios that run beside the others rather than after them, in this order. arm64 first: the whole site.yml with an
# emulated aarch64 DGX Spark persona node is the longest single run (about 30 min of mostly one busy qemu process), so
# it starts at once, beside the role scenarios; lifecycle (day 2 on its own converged lab, about 20 min), fabric,
# kubernetes_node and hgx (about 2 min each) follow it, beside default.
BESIDE = ("arm64", "lifecycle", "fabric", "kubernetes_node", "hgx")
# Tried once more when they fail: why, in the table. In CI the emulated arm64 node's raylet was marked dead by the GCS
# (health checks unanswered on the busy machine) and left the cluster; the lab now gives its health checks minutes and
# waits 10 min for the join (lab/lab.py), and this try stays as a guard. It keeps the lab: the first try
# runs with `--destroy never`, the second converges again (gated: the roles that converged are skipped, about 5 min
# instead of the 30 of a new emulated lab) and verifies, and the lab is removed after either.
TRY_AGAIN = {"arm64": "second try on the same lab after a failed first (converge again, gated, and verify): read "
                      "reports/molecule-arm64.log"}


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


# `--checks` (make test): the linters and unit tests too. With two lanes, at the end of whichever lane is done first,
# beside the other's last scenario (the two lanes end within minutes of each other, and which is first varies with the
# machine); alone, first, as before.
CHECKS = "lint-unit"
CHECKS_ARGV = ["make", "--no-print-directory", "lint", "unit", "lock-check"]


def run_scenario(name: str, env: dict, log: Path | None = None, argv: list[str] | None = None) -> tuple[float, int]:
    t0 = time.time()
    argv = argv or (CHECKS_ARGV if name == CHECKS else ["molecule", "test", "-s", name])
    if log is None:
        rc = subprocess.run(argv, cwd=ROOT, env=env, check=False).returncode
    else:
        with log.open("w") as out:
            rc = subprocess.run(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    return time.time() - t0, rc


def main(argv: list[str]) -> int:
    checks = "--checks" in argv
    names = scenarios([a for a in argv if a and a != "--checks"])
    env = dict(os.environ, SPARKFLEET_LAB_KEEP="1")
    rows = []
    start = time.time()
    (ROOT / "reports").mkdir(exist_ok=True)
    shared_up = False

    def shared_down() -> None:
        # Before the integration scenarios: they need the machine's memory and CPU, not an idle lab.
        subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "down", "--name", SHARED_LAB], check=False)

    # The second lane: BESIDE scenarios one after another, each logging to its own file, while this thread runs the rest.
    lane = [n for n in BESIDE if n in names] if len(names) > 1 else []
    if checks and not lane:
        print(f"molecule_all: === {CHECKS}", flush=True)
        took, rc = run_scenario(CHECKS, env)
        rows.append((CHECKS, "linters, unit tests", took, rc))
    # With two lanes, the linters and unit tests go to the lane that is done first.
    claimed: list[str] = []
    claim_lock = threading.Lock()

    def claim_checks(who: str) -> bool:
        with claim_lock:
            if checks and lane and not claimed:
                claimed.append(who)
                return True
            return False

    # One row per run, with the log it wrote: (scenario, row name, kind, seconds, rc, log).
    lane_runs: list[tuple[str, str, str, float, int, Path]] = []

    def lane_run(name: str, row: str, kind: str, log: Path, argv: list[str] | None = None) -> int:
        took, rc = run_scenario(name, env, log, argv)
        lane_runs.append((name, row, kind, took, rc, log))
        return rc

    def second_lane() -> None:
        for n in lane:
            log = ROOT / "reports" / f"molecule-{n}.log"
            if n not in TRY_AGAIN:
                lane_run(n, n, "linters, unit tests (beside)" if n == CHECKS else "integration (beside)", log)
                continue
            try:
                if lane_run(n, n, "integration (beside)", log, ["molecule", "test", "-s", n, "--destroy", "never"]):
                    lane_run(n, f"{n} (again)", f"integration (beside): {TRY_AGAIN[n]}",
                             ROOT / "reports" / f"molecule-{n}-again.log",
                             ["sh", "-c", f"molecule converge -s {n} && molecule verify -s {n}"])
            finally:
                run_scenario(n, env, ROOT / "reports" / f"molecule-{n}-destroy.log", ["molecule", "destroy", "-s", n])
        if claim_checks("second"):
            lane_run(CHECKS, CHECKS, "linters, unit tests (beside)", ROOT / "reports" / f"molecule-{CHECKS}.log")

    names = [n for n in names if n not in lane]
    thread = threading.Thread(target=second_lane)
    if lane:
        print(f"molecule_all: === {', '.join(lane)}: beside the others, one after another (logs: reports/molecule-NAME.log)",
              flush=True)
        thread.start()
    try:
        for name in names:
            if shared_up and not is_shared(name):
                shared_down()
                shared_up = False
            shared_up = shared_up or is_shared(name)
            print(f"molecule_all: === {name}", flush=True)
            if is_shared(name):
                # The shared lab stays between role scenarios and goes at the end (shared_down): `--destroy never`
                # skips the destroy playbook runs before and after each (two ansible-playbook runs that did nothing,
                # about 10 s a scenario). Molecule then keeps the scenario's state, so each run gets a fresh state
                # folder: its create step still runs.
                eph = ROOT / ".cache" / "molecule-state" / name
                shutil.rmtree(eph, ignore_errors=True)
                took, rc = run_scenario(name, dict(env, MOLECULE_EPHEMERAL_DIRECTORY=str(eph)),
                                        argv=["molecule", "test", "-s", name, "--destroy", "never"])
            else:
                took, rc = run_scenario(name, env)
            rows.append((name, "role (shared lab)" if is_shared(name) else "integration", took, rc))
        if claim_checks("first"):
            print(f"molecule_all: === {CHECKS}", flush=True)
            took, rc = run_scenario(CHECKS, env)
            rows.append((CHECKS, "linters, unit tests", took, rc))
    finally:
        if shared_up:
            shared_down()
        if lane:
            thread.join()
    for _, row, _, _, _, log in lane_runs:
        print(f"molecule_all: === {row} (ran beside the others): its log\n" + log.read_text(errors="replace"), flush=True)
    # A scenario tried again counts by its last try; the first failure stays in the table and the logs.
    last_rc = {name: rc for name, *_, rc, _ in lane_runs}
    failed = [n for n, _, _, rc in rows if rc] + [n for n in last_rc if last_rc[n]]
    rows += [(row, kind, took, rc) for _, row, kind, took, rc, _ in lane_runs]
    lines = ["| scenario | kind | seconds | result |", "| --- | --- | --- | --- |"]
    lines += [f"| {n} | {k} | {s:.0f} | {'passed' if rc == 0 else f'FAILED (rc {rc})'} |" for n, k, s, rc in rows]
    ok = sum(1 for r in rows if r[3] == 0)
    lines.append(f"| all ({len(rows)} runs) | | {time.time() - start:.0f} | {ok} passed, {len(rows) - ok} failed"
                 f"{f', {len(failed)} scenario(s) failed' if failed else ''} |")
    table = "\n".join(lines)
    (ROOT / "reports" / "molecule-times.md").write_text(table + "\n")
    print("molecule_all: time per scenario\n" + table, flush=True)
    if failed:
        print(f"molecule_all: failed scenarios: {' '.join(failed)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
