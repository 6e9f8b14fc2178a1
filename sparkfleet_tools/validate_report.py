"""Write the validation report (JSON, Markdown, JUnit, a self-contained HTML page and node_exporter textfile metrics)
from the per-host check results that playbooks/validate.yml collects; print a JSON summary for the play to assert on."""
from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from xml.sax.saxutils import quoteattr

from sparkfleet_tools import report_html

MARK = {"pass": "pass", "fail": "FAIL", "not_checked": "not checked", "persona": "persona"}
# Checks whose evidence comes from the GPU, NVLink/NVSwitch, ConnectX/RDMA or what stands on them. On a lab persona node
# (/etc/sparkfleet-lab-persona, lab/persona/) that evidence is a stand-in: a pass there is `persona`, never `pass`.
PERSONA_EVIDENCE = {"gpu", "nvlink", "nvswitch_fabric", "connectx", "container_gpu", "nccl_all_reduce",
                    "kube_gpu_allocatable", "kube_cuda_pod", "gpu_baseline", "driver_packages"}
PERSONA_FLEET_TARGETS = {"driver", "cuda"}


def mark_personas(data: dict) -> None:
    """Passes whose evidence came from a lab persona's stand-ins become `persona`, naming the persona."""
    for h, name in (data.get("personas") or {}).items():
        for c in data["hosts"].get(h, []):
            hw = c["check"] in PERSONA_EVIDENCE or (c["check"] == "fleet_version" and str(c["target"]) in PERSONA_FLEET_TARGETS)
            if hw and c["status"] == "pass":
                c["status"] = "persona"
                c["detail"] = f"{c.get('detail', '')} [lab persona {name}: stand-in evidence, no real hardware verified]".strip()


def markdown(data: dict) -> str:
    lines = [f"# sparkfleet validation: {data['cluster']} - {'PASSED' if data['failed'] == 0 else 'FAILED'}", "",
             f"- generated: {data['generated_at']}",
             f"- checks: {data['passed']} passed, {data['failed']} failed, {data['not_checked']} not checked, "
             f"{data.get('persona', 0)} persona", ""]
    if data.get("personas"):
        lines += [f"- lab persona nodes: {', '.join(sorted(data['personas']))}: checks marked `persona` rest on lab stand-ins "
                  "(recorded outputs, no real GPU or ConnectX); no real hardware was verified there", ""]
    lines += [
             "| host | check | target | result | detail |", "| --- | --- | --- | --- | --- |"]
    for h, checks in data["hosts"].items():
        for c in checks:
            detail = str(c.get("detail", "")).replace("|", "/").replace("\n", " ")
            lines.append(f"| {h} | {c['check']} | {c['target']} | {MARK.get(c['status'], c['status'])} | {detail} |")
    return "\n".join(lines) + "\n"


def junit(data: dict) -> str:
    cases = []
    for h, checks in data["hosts"].items():
        for c in checks:
            body = ""
            if c["status"] == "fail":
                body = f"<failure message={quoteattr(str(c.get('detail', '')))}/>"
            elif c["status"] in ("not_checked", "persona"):
                body = f"<skipped message={quoteattr(c['status'] + ': ' + str(c.get('detail', '')))}/>"
            cases.append(f"  <testcase classname={quoteattr('sparkfleet.validate.' + h)} "
                         f"name={quoteattr(c['check'] + ' ' + str(c['target']))}>{body}</testcase>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="sparkfleet-validate" tests="{len(cases)}" failures="{data["failed"]}" errors="0" '
            f'skipped="{data["not_checked"] + data.get("persona", 0)}" timestamp={quoteattr(data["generated_at"])}>\n' + "\n".join(cases) + "\n</testsuite>\n")


def newest_drift(paths: list[str], given: list[dict] = ()) -> dict | None:
    """The most recent of the drift reports given and of the files that exist and parse."""
    found = [d for d in given if isinstance(d, dict) and "hosts" in d]
    for p in paths:
        try:
            d = json.loads(Path(p).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "hosts" in d:
            found.append(d)
    return max(found, key=lambda d: str(d.get("generated_at", "")), default=None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--input", required=True, help="JSON: {cluster, hosts: {host: [checks]}}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--drift", action="append", default=[],
                    help="drift report JSON files (the newest one readable is shown per node); missing ones are skipped")
    a = ap.parse_args(argv)
    data = json.loads(a.input)
    allc = [c for checks in data["hosts"].values() for c in checks]
    data["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    mark_personas(data)
    for k in ("pass", "fail", "not_checked", "persona"):
        data[{"pass": "passed", "fail": "failed", "not_checked": "not_checked", "persona": "persona"}[k]] = sum(
            c["status"] == k for c in allc)
    out = Path(a.out)
    folder = out / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    folder.mkdir(parents=True, exist_ok=True)
    # The control node's nightly drift result comes inside the input (summarized by the play); files are local runs.
    given = data.pop("drift", None)
    drift = newest_drift(a.drift, [given] if given else [])
    for name, text in (("report.json", json.dumps(data, indent=2) + "\n"), ("report.md", markdown(data)),
                       ("report.xml", junit(data)), ("report.html", report_html.render(data, drift)),
                       ("report.prom", report_html.textfile(data))):
        (folder / name).write_text(text)
        (out / ("latest" + Path(name).suffix)).write_text(text)
    failures = [f"{h}: {c['check']} {c['target']}: {c['detail']}" for h, checks in data["hosts"].items()
                for c in checks if c["status"] == "fail"]
    print(json.dumps({"failed": data["failed"], "failures": failures, "folder": str(folder),
                      "summary": f"validation: {data['passed']} passed, {data['failed']} failed, "
                                 f"{data['not_checked']} not checked, {data['persona']} persona (report: {folder})"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
