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

MARK = {"pass": "pass", "fail": "FAIL", "not_checked": "not checked"}


def markdown(data: dict) -> str:
    lines = [f"# sparkfleet validation: {data['cluster']} - {'PASSED' if data['failed'] == 0 else 'FAILED'}", "",
             f"- generated: {data['generated_at']}",
             f"- checks: {data['passed']} passed, {data['failed']} failed, {data['not_checked']} not checked", "",
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
            elif c["status"] == "not_checked":
                body = f"<skipped message={quoteattr(str(c.get('detail', '')))}/>"
            cases.append(f"  <testcase classname={quoteattr('sparkfleet.validate.' + h)} "
                         f"name={quoteattr(c['check'] + ' ' + str(c['target']))}>{body}</testcase>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="sparkfleet-validate" tests="{len(cases)}" failures="{data["failed"]}" errors="0" '
            f'skipped="{data["not_checked"]}" timestamp={quoteattr(data["generated_at"])}>\n' + "\n".join(cases) + "\n</testsuite>\n")


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
    for k in ("pass", "fail", "not_checked"):
        data[{"pass": "passed", "fail": "failed", "not_checked": "not_checked"}[k]] = sum(c["status"] == k for c in allc)
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
                                 f"{data['not_checked']} not checked (report: {folder})"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
