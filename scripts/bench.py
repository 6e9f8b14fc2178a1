#!/usr/bin/env python3
"""Benchmark sparkfleet on the lab (not a test): for each size, a fresh lab, then
first converge of site.yml, the no-op re-run, the --check --diff run, the drift check, and the
floor (facts + one ping on the same hosts). Every run starts with cold SSH connections.
Writes reports/bench/bench.json and prints a table with each figure's ratio to the floor.

    python3 scripts/bench.py [--sizes 2,3,8] [--repeat 3] [--keep] [--mitogen]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv" / "bin"


def env_for(inv: Path) -> dict:
    cp = tempfile.mkdtemp(prefix="sf-cp-")  # fresh control path dir: cold SSH connections
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
                ANSIBLE_SSH_CONTROL_PATH_DIR=cp, PATH=f"{VENV}:{os.environ['PATH']}", ANSIBLE_INVENTORY=str(inv))


def mitogen_env() -> dict:
    """Strategy settings for mitogen (installed in the venv by requirements.txt)."""
    import glob
    found = glob.glob(str(ROOT / ".venv" / "lib" / "python3*" / "site-packages" / "ansible_mitogen" / "plugins" / "strategy"))
    return {"ANSIBLE_STRATEGY_PLUGINS": found[0], "ANSIBLE_STRATEGY": "mitogen_linear",
            "ANSIBLE_HOST_KEY_CHECKING": "False"} if found else {}


def timed(cmd: list[str], inv: Path, extra_env: dict | None = None) -> tuple[float, str, int]:
    t = time.monotonic()
    res = subprocess.run(cmd, cwd=ROOT, env=dict(env_for(inv), **(extra_env or {})), text=True, capture_output=True)
    return time.monotonic() - t, res.stdout + res.stderr, res.returncode


def tasks_per_host(out: str) -> float:
    counts = [sum(int(x) for x in re.findall(r"(?:ok|changed|skipped|failed)=(\d+)", line))
              for line in out.splitlines() if re.match(r"^\S+\s+: ok=", line)]
    return sum(counts) / len(counts) if counts else 0.0


# ansible.posix.profile_tasks: every task's wall time, the slowest first ("NAME ---- 1.23s").
PROFILE_ENV = {"ANSIBLE_CALLBACKS_ENABLED": "ansible.posix.profile_tasks", "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "10",
               "PROFILE_TASKS_SORT_ORDER": "descending"}


def profile(out: str, limit: int = 10) -> list[dict]:
    """The slowest tasks from profile_tasks' summary at the end of a run."""
    # A name longer than the terminal leaves as few as one dash ("...GPUs) -- 12.34s"): the 8-node run lost its slowest.
    rows = re.findall(r"^(.+?) -+ (\d+\.\d+)s$", out.split("PLAY RECAP")[-1], re.M)
    return [{"task": t.strip(), "s": float(x)} for t, x in rows][:limit]


def bench_size(n: int, repeat: int, keep: bool, mitogen: bool = False) -> dict:
    name = f"bench{n}"
    inv = ROOT / "inventory" / f"lab-{name}"
    lab_env = dict(os.environ, LAB_MGMT_CIDR=f"10.{83 + n}.0.0/24", LAB_FABRIC_CIDR=f"10.{103 + n}.0.0/24")
    subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "down", "--name", name], env=lab_env, capture_output=True)
    subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "up", "--name", name, "--nodes", str(n)], env=lab_env,
                   check=True)
    try:
        pb = str(VENV / "ansible-playbook")
        r: dict = {"nodes": n}
        r["converge_s"], out, rc = timed([pb, "site.yml"], inv)
        if rc != 0:
            raise SystemExit(f"bench: converge failed on {n} nodes:\n{out[-3000:]}")
        runs = {"floor_s": [pb, "scripts/bench/floor.yml"], "noop_s": [pb, "site.yml"],
                "check_s": [pb, "site.yml", "--check", "--diff"],
                "drift_s": [str(VENV / "python"), "-m", "sparkfleet_tools.drift", "--inventory", str(inv),
                            "--out", str(ROOT / "reports" / "bench" / f"drift-{n}")]}
        # The floor gathers facts for real (no fact cache), as any first play does.
        floor_env = {"ANSIBLE_GATHERING": "implicit", "ANSIBLE_CACHE_PLUGIN": "memory"}
        if mitogen and mitogen_env():
            runs["noop_mitogen_s"] = runs["noop_s"]
        for key, cmd in runs.items():
            times = []
            for _ in range(repeat):
                extra = floor_env if key == "floor_s" else mitogen_env() if key == "noop_mitogen_s" else \
                    PROFILE_ENV if key == "noop_s" else None
                t, out, rc = timed(cmd, inv, extra)
                if rc != 0 and key == "noop_mitogen_s":
                    # Mitogen is an option, not the default: its failure is reported, the benchmark goes on.
                    print(f"bench: the mitogen no-op failed on {n} nodes (rc {rc}):\n{out[-1500:]}", file=sys.stderr)
                    t = float("nan")
                elif rc != 0:
                    raise SystemExit(f"bench: {key} failed on {n} nodes (rc {rc}):\n{out[-3000:]}")
                times.append(t)
                if key == "noop_s":
                    if re.search(r"changed=[1-9]", out):
                        raise SystemExit(f"bench: no-op run changed something on {n} nodes")
                    r["tasks_per_host"] = tasks_per_host(out)
                    r["noop_profile"] = profile(out)
            r[key] = sorted(times)[len(times) // 2]
        r["s_per_task_host"] = r["noop_s"] / max(1.0, r["tasks_per_host"] * n)
        return r
    finally:
        if not keep:
            subprocess.run([sys.executable, str(ROOT / "lab" / "lab.py"), "down", "--name", name], env=lab_env,
                           capture_output=True)


def table(results: list[dict]) -> str:
    rows = ["| nodes | floor | first converge | no-op re-run (no-op/converge) | no-op (mitogen) | --check --diff | drift check "
            "| tasks/host | s per task-host |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        f = r["floor_s"]
        def cell(k, r=r, f=f):
            return f"{r[k]:.1f} s ({r[k] / f:.1f}x)"
        mit = cell("noop_mitogen_s") if "noop_mitogen_s" in r else "-"
        rows.append(f"| {r['nodes']} | {f:.1f} s | {cell('converge_s')} | {cell('noop_s')} "
                    f"({r['noop_s'] / r['converge_s']:.0%}) | {mit} | {cell('check_s')} | "
                    f"{cell('drift_s')} (drift/no-op {r['drift_s'] / r['noop_s']:.2f}) | {r['tasks_per_host']:.0f} | "
                    f"{r['s_per_task_host']:.2f} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=os.environ.get("BENCH_SIZES", "2,3,8"))
    ap.add_argument("--repeat", type=int, default=int(os.environ.get("BENCH_REPEAT", "3")),
                    help="runs of each kind per size; the table shows their median (BENCH_REPEAT)")
    ap.add_argument("--keep", action="store_true", help="keep the bench labs")
    # Off by default: on 3 and 8 nodes the mitogen no-op was no faster than the stock one (2026-12-06), and its
    # runs cost a third of the benchmark's time.
    ap.add_argument("--mitogen", action="store_true", default=os.environ.get("BENCH_MITOGEN") == "1",
                    help="also time the no-op run with the mitogen strategy (BENCH_MITOGEN=1)")
    a = ap.parse_args()
    out = ROOT / "reports" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for size in a.sizes.split(","):
        results.append(bench_size(int(size), a.repeat, a.keep, a.mitogen))
        print(table(results[-1:]), flush=True)  # each size as soon as it is measured
    (out / "bench.json").write_text(json.dumps({"generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                                "results": results}, indent=2) + "\n")
    text = table(results) + "\n" + "\n".join(
        f"\nThe ten slowest tasks of the no-op run on {r['nodes']} nodes (wall time, all hosts):\n"
        + "\n".join(f"- {p['s']:.2f} s  {p['task']}" for p in r.get("noop_profile", [])) for r in results)
    print(text)
    (out / "bench.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
