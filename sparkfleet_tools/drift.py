"""sparkfleet drift check: run site.yml in check-and-diff mode and report every task that would change.

    python3 -m sparkfleet_tools.drift --inventory inventory/lab --out reports/drift

Exit codes (never confused): 0 = no drift, 2 = drift, 3 = some hosts unreachable: the run went on with
the others and the report names both (their drift, if any, and the hosts it could not reach), 1 = the
run itself failed (task error, bad inventory, every host unreachable, or the --deadline passed: the run
is stopped and the report names the hosts and tasks still running). Unreachable hosts are listed as such,
never as drift. With --strict (or sparkfleet_strict in the inventory) one unreachable host stops the run
(preflight), exit 1.
It never changes a host: ansible-playbook runs with --check --diff.
Reports: JSON, Markdown (for people) and JUnit XML (for CI), in a timestamped folder under --out,
with the last --keep runs kept and copies of the newest as latest.{json,md,xml}. With --textfile,
also a node_exporter textfile metric.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sparkfleet_tools import report

ROOT = Path(__file__).resolve().parent.parent
EXIT_OK, EXIT_ERROR, EXIT_DRIFT, EXIT_PARTIAL = 0, 1, 2, 3


def diff_text(res: dict, limit: int = 4000) -> str:
    """The task's diff, as unified text where the module gave before/after."""
    diffs = res.get("diff") or []
    if isinstance(diffs, dict):
        diffs = [diffs]
    out = []
    for d in diffs:
        if not isinstance(d, dict):
            continue
        if "prepared" in d:
            out.append(str(d["prepared"]))
        elif "before" in d or "after" in d:
            import difflib
            before = d.get("before") if isinstance(d.get("before"), str) else json.dumps(d.get("before"), indent=1, sort_keys=True)
            after = d.get("after") if isinstance(d.get("after"), str) else json.dumps(d.get("after"), indent=1, sort_keys=True)
            out.extend(difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(),
                                            str(d.get("before_header", "before")), str(d.get("after_header", "after")),
                                            lineterm=""))
    text = "\n".join(out)
    return text[:limit] + ("\n... (cut)" if len(text) > limit else "")


def censored_change(ev: dict, res: dict) -> bool:
    """A no_log result reaches the event censored, without `changed`: the display line still says it."""
    return "censored" in res and re.sub(r"\x1b\[[0-9;]*m", "", str(ev.get("stdout", ""))).lstrip().startswith("changed:")


def add_hidden_drift(rec: dict, task: dict) -> None:
    """Record a no_log task as drift once (a loop reports each item), its content hidden."""
    if not any(d["task"] == task["task"] and d["path"] == task["path"] for d in rec["drift"]):
        rec["drift"].append(dict(task, diff="(content hidden: the task is no_log, it handles a secret)"))


def collect(events) -> dict:
    """Runner events -> per-host drift, errors, unreachable."""
    hosts: dict[str, dict] = {}

    def h(name):
        return hosts.setdefault(name, {"status": "ok", "drift": [], "errors": [], "ok": 0})

    for ev in events:
        kind, data = ev.get("event"), ev.get("event_data") or {}
        host = data.get("host")
        task = {"task": data.get("task"), "play": data.get("play"), "role": data.get("role") or None,
                "action": data.get("task_action"), "path": data.get("task_path")}
        res = data.get("res") or {}
        if kind == "runner_on_ok" and host:
            h(host)["ok"] += 1
            if censored_change(ev, res):
                add_hidden_drift(h(host), task)
            elif res.get("changed"):
                # Modules without a diff (commands that compare in check mode) say what differs on stdout.
                detail = diff_text(res) or str(res.get("stdout", "")).strip()[:2000]
                h(host)["drift"].append(dict(task, diff=detail))
        elif kind == "runner_item_on_ok" and host and censored_change(ev, res):
            add_hidden_drift(h(host), task)
        elif kind == "runner_on_failed" and host and not data.get("ignore_errors"):
            h(host)["errors"].append(dict(task, msg=str(res.get("msg", ""))[:2000]))
        elif kind == "runner_on_unreachable" and host:
            h(host)["unreachable"] = str(res.get("msg", ""))[:500]
    for host, task in running_tasks(events).values():
        h(host)["running"] = task
    for rec in hosts.values():
        if rec.get("running"):
            rec["status"] = "timeout"
        elif rec.get("unreachable"):
            rec["status"] = "unreachable"
        elif rec["errors"]:
            rec["status"] = "error"
        elif rec["drift"]:
            rec["status"] = "drift"
    return {"hosts": dict(sorted(hosts.items()))}


END_EVENTS = {"runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable"}


def running_tasks(events) -> dict:
    """(host, task uuid) -> (host, task name) of tasks that started and never ended (a run cut off)."""
    started, ended = {}, set()
    for ev in events:
        kind, data = ev.get("event"), ev.get("event_data") or {}
        key = (data.get("host"), data.get("task_uuid"))
        if kind == "runner_on_start" and key[0]:
            started[key] = (data["host"], "%s (%s)" % (data.get("task"), data.get("play")))
        elif kind in END_EVENTS:
            ended.add(key)
    return {k: v for k, v in started.items() if k not in ended}


def run_status(rc: int, hosts: dict, timed_out: bool) -> str:
    """ok, drift, partial or error. ansible-playbook's 4 means hosts unreachable and nothing failed: the run went on
    with the others (preflight drops a host that does not answer), so it is partial, unless no host was reached."""
    unreachable = [n for n, rec in hosts.items() if rec["status"] == "unreachable"]
    errors = [n for n, rec in hosts.items() if rec["status"] in ("error", "timeout")]
    reached = [n for n in hosts if n not in unreachable]
    if rc == 4 and unreachable and reached and not errors and not timed_out:
        return "partial"
    if rc != 0 or unreachable or errors or timed_out:
        return "error"
    return "drift" if any(rec["drift"] for rec in hosts.values()) else "ok"


def run(args) -> dict:
    import ansible_runner  # imported here so --help works without the venv

    inventory = str(Path(args.inventory).resolve())
    playbook = str(Path(args.playbook).resolve())
    cmdline = ["--check", "--diff"]
    if args.limit:
        cmdline += ["--limit", args.limit]
    for e in args.extra_vars or []:
        cmdline += ["-e", e]
    if args.strict:
        cmdline += ["-e", "sparkfleet_strict=true"]
    # ansible-playbook from the same venv as this interpreter (a systemd unit has a bare PATH).
    env = {"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FORCE_COLOR": "0",
           "ANSIBLE_RETRY_FILES_ENABLED": "0",
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")])}
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="sparkfleet-drift-") as pdd:
        r = ansible_runner.run(private_data_dir=pdd, project_dir=str(ROOT), playbook=playbook, inventory=inventory,
                               cmdline=" ".join(_quote(c) for c in cmdline), envvars=env, quiet=not args.verbose,
                               timeout=args.deadline,
                               settings={"suppress_ansible_output": not args.verbose})
        events = list(r.events)
        rc, runner_status = r.rc, r.status
        stdout_tail = ""
        if rc != 0:
            try:
                stdout_tail = "\n".join(r.stdout.read().splitlines()[-30:])
            except (OSError, AttributeError):
                stdout_tail = ""
    result = collect(events)
    hosts = result["hosts"]
    unreachable = sorted(n for n, rec in hosts.items() if rec["status"] == "unreachable")
    errors = sorted(n for n, rec in hosts.items() if rec["status"] == "error")
    timed_out = runner_status == "timeout"
    still_running = sorted(f"{n}: {rec['running']}" for n, rec in hosts.items() if rec.get("running"))
    status = run_status(rc, hosts, timed_out)
    return {
        "tool": "sparkfleet drift check",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "inventory": inventory, "playbook": playbook, "limit": args.limit,
        "status": status,
        "exit_code": {"ok": EXIT_OK, "drift": EXIT_DRIFT, "error": EXIT_ERROR, "partial": EXIT_PARTIAL}[status],
        "ansible_rc": rc, "runner_status": runner_status, "duration_s": round(time.time() - start, 2),
        "drifted_tasks": sum(len(rec["drift"]) for rec in hosts.values()),
        "unreachable": unreachable, "errored": errors,
        "deadline_s": args.deadline, "timed_out": timed_out, "still_running": still_running,
        "hosts": hosts,
        "output_tail": stdout_tail if status == "error" and not hosts else "",
    }


def _quote(s: str) -> str:
    import shlex
    return shlex.quote(s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inventory", "-i", default=str(ROOT / "inventory" / "lab"))
    ap.add_argument("--playbook", default=str(ROOT / "site.yml"))
    ap.add_argument("--limit", "-l")
    ap.add_argument("--extra-vars", "-e", action="append", help="passed to ansible-playbook -e")
    ap.add_argument("--out", default=str(ROOT / "reports" / "drift"))
    ap.add_argument("--keep", type=int, default=14, help="runs to keep in --out")
    ap.add_argument("--textfile", help="node_exporter textfile (.prom) to write")
    ap.add_argument("--verbose", "-v", action="store_true", help="show ansible-playbook output")
    ap.add_argument("--strict", action="store_true", help="one unreachable host stops the run (exit 1)")
    ap.add_argument("--deadline", type=int, default=int(os.environ.get("SPARKFLEET_DRIFT_DEADLINE_S", 1800)),
                    help="seconds after which the run is stopped and reported as failed (default 1800)")
    args = ap.parse_args(argv)
    if not Path(args.inventory).exists():
        print(f"drift: error: inventory {args.inventory} not found", file=sys.stderr)
        return EXIT_ERROR
    try:
        data = run(args)
    except Exception as e:  # a broken run is exit 1, never "no drift"
        data = {"tool": "sparkfleet drift check", "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "inventory": args.inventory, "playbook": args.playbook, "status": "error", "exit_code": EXIT_ERROR,
                "hosts": {}, "unreachable": [], "errored": [], "drifted_tasks": 0, "duration_s": 0,
                "output_tail": f"{type(e).__name__}: {e}"}
    folder = write_reports(data, Path(args.out), args.keep)
    if args.textfile:
        report.write_textfile(Path(args.textfile), data)
    print(report.summary_line(data, folder))
    return data["exit_code"]


def write_reports(data: dict, out: Path, keep: int) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder = out / stamp
    n = 1
    while folder.exists():
        folder = out / f"{stamp}-{n}"
        n += 1
    # Diffs can show what a managed file holds: reports are for root (or the user running the check) only.
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(out, 0o700)
    folder.mkdir(mode=0o700)
    files = {"report.json": json.dumps(data, indent=2) + "\n", "report.md": report.drift_markdown(data),
             "report.xml": report.drift_junit(data)}
    for name, text in files.items():
        for path in (folder / name, out / ("latest" + Path(name).suffix)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)
    runs = sorted(p for p in out.iterdir() if p.is_dir())
    for old in runs[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return folder


if __name__ == "__main__":
    sys.exit(main())
