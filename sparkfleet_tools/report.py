"""Report writers shared by the drift check and the validation report: Markdown for people,
JUnit XML for CI systems, node_exporter textfile metrics for monitoring."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr


def summary_line(data: dict, folder: Path | None = None) -> str:
    where = f" (report: {folder})" if folder else ""
    if data["status"] == "ok":
        return f"drift: none on {len(data['hosts'])} hosts{where}"
    if data["status"] == "drift":
        per = ", ".join(f"{h}: {len(r['drift'])}" for h, r in data["hosts"].items() if r["drift"])
        return f"drift: {data['drifted_tasks']} task(s) would change ({per}){where}"
    if data["status"] == "partial":
        per = ", ".join(f"{h}: {len(r['drift'])}" for h, r in data["hosts"].items() if r["drift"]) or "none"
        return (f"drift: unreachable: {', '.join(data['unreachable'])}; the others checked, drift {per}"
                f" ({data['drifted_tasks']} task(s)){where}")
    bits = []
    if data.get("timed_out"):
        bits.append(f"stopped at the {data.get('deadline_s')} s deadline; still running: "
                    + ("; ".join(data.get("still_running") or []) or "nothing reported"))
    if data.get("unreachable"):
        bits.append("unreachable: " + ", ".join(data["unreachable"]))
    if data.get("errored"):
        bits.append("errors on: " + ", ".join(data["errored"]))
    if not bits:
        bits.append("the run failed" + (": " + data["output_tail"].strip().splitlines()[-1] if data.get("output_tail") else ""))
    return f"drift: run failed ({'; '.join(bits)}){where}"


def drift_markdown(data: dict) -> str:
    icon = {"ok": "no drift", "drift": "DRIFT", "error": "RUN FAILED", "partial": "HOSTS UNREACHABLE"}[data["status"]]
    lines = [f"# sparkfleet drift report: {icon}", "",
             f"- generated: {data['generated_at']}", f"- inventory: `{data['inventory']}`",
             f"- playbook: `{data['playbook']}` (check + diff mode: nothing was changed)",
             f"- duration: {data.get('duration_s', 0)} s", f"- exit code: {data['exit_code']}", "",
             "| host | status | tasks that would change |", "| --- | --- | --- |"]
    for h, r in data["hosts"].items():
        lines.append(f"| {h} | {r['status']} | {len(r['drift'])} |")
    if data.get("timed_out"):
        lines += ["", f"## stopped at the deadline ({data.get('deadline_s')} s)", "",
                  "Tasks still running when the run was stopped:", ""]
        lines += [f"- {t}" for t in data.get("still_running") or ["(none reported)"]]
    for h, r in data["hosts"].items():
        if r.get("unreachable"):
            lines += ["", f"## {h}: unreachable", "", f"    {r['unreachable']}"]
        for e in r["errors"]:
            lines += ["", f"## {h}: error in {e['task']}", "", f"    {e['msg']}"]
        for d in r["drift"]:
            lines += ["", f"## {h}: {d['task']}", "", f"- play: {d['play']}; role: {d['role'] or '-'}; module: `{d['action']}`"]
            if d.get("diff"):
                lines += ["", "```diff", d["diff"], "```"]
    if data.get("output_tail"):
        lines += ["", "## ansible-playbook output (tail)", "", "```", data["output_tail"], "```"]
    return "\n".join(lines) + "\n"


def drift_junit(data: dict) -> str:
    """One testsuite; one testcase per host (failure = drift, error = unreachable/failed)."""
    cases, failures, errors = [], 0, 0
    for h, r in data["hosts"].items():
        body = ""
        if r["status"] == "timeout":
            errors += 1
            body = f'<error message={quoteattr("stopped at the deadline while running " + r["running"])}/>'
        elif r["status"] == "unreachable":
            errors += 1
            body = f'<error message={quoteattr("unreachable: " + r["unreachable"])}/>'
        elif r["status"] == "error":
            errors += 1
            msg = "; ".join(f"{e['task']}: {e['msg']}" for e in r["errors"])
            body = f"<error message={quoteattr(msg[:1000])}/>"
        elif r["drift"]:
            failures += 1
            msg = f"{len(r['drift'])} task(s) would change"
            text = "\n".join(f"{d['task']} ({d['action']})\n{d.get('diff', '')}" for d in r["drift"])
            body = f"<failure message={quoteattr(msg)}>{escape(text)}</failure>"
        cases.append(f'  <testcase classname="sparkfleet.drift" name={quoteattr(h)}>{body}</testcase>')
    if data["status"] == "error" and not data["hosts"]:
        errors += 1
        cases.append('  <testcase classname="sparkfleet.drift" name="run">'
                     f'<error message={quoteattr(data.get("output_tail", "run failed")[-1000:])}/></testcase>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="sparkfleet-drift" tests="{len(cases)}" failures="{failures}" errors="{errors}" '
            f'time="{data.get("duration_s", 0)}" timestamp={quoteattr(data["generated_at"])}>\n'
            + "\n".join(cases) + "\n</testsuite>\n")


def write_textfile(path: Path, data: dict) -> None:
    """node_exporter textfile collector metrics, written atomically."""
    code = {"ok": 0, "drift": 2, "error": 1, "partial": 3}[data["status"]]
    lines = ["# HELP sparkfleet_drift_tasks Tasks that would change on the host at the last drift check.",
             "# TYPE sparkfleet_drift_tasks gauge"]
    for h, r in data["hosts"].items():
        lines.append(f'sparkfleet_drift_tasks{{host="{h}"}} {len(r["drift"])}')
    lines += ["# HELP sparkfleet_drift_host_unreachable 1 when the host was unreachable at the last drift check.",
              "# TYPE sparkfleet_drift_host_unreachable gauge"]
    for h, r in data["hosts"].items():
        lines.append(f'sparkfleet_drift_host_unreachable{{host="{h}"}} {1 if r["status"] == "unreachable" else 0}')
    lines += ["# HELP sparkfleet_drift_last_run_timestamp_seconds End of the last drift check.",
              "# TYPE sparkfleet_drift_last_run_timestamp_seconds gauge",
              f"sparkfleet_drift_last_run_timestamp_seconds {int(time.time())}",
              "# HELP sparkfleet_drift_last_run_status 0 no drift, 2 drift, 3 hosts unreachable (the others checked), 1 the run failed.",
              "# TYPE sparkfleet_drift_last_run_status gauge",
              f"sparkfleet_drift_last_run_status {code}",
              "# HELP sparkfleet_drift_last_run_duration_seconds Duration of the last drift check.",
              "# TYPE sparkfleet_drift_last_run_duration_seconds gauge",
              f"sparkfleet_drift_last_run_duration_seconds {data.get('duration_s', 0)}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".sparkfleet-")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
