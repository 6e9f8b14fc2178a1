"""The validation report as one self-contained HTML page (no external assets): a node x check matrix with the detail
of every target on hover and in an expandable list, the pairwise fabric bandwidth as a heatmap, drift per node."""
from __future__ import annotations

from html import escape

# Cell state of a node's check over all its targets: any failure wins, then a pass, else not checked.
ORDER = ("fail", "persona", "pass", "not_checked")
LABEL = {"fail": "FAIL", "pass": "pass", "persona": "persona", "not_checked": "n/c", None: ""}

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d2733}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.summary{margin:0 0 16px;color:#444}.passed{color:#0a7d32}.failed{color:#b3261e}
table{border-collapse:collapse}th,td{border:1px solid #d0d5dc;padding:4px 8px;text-align:center}
th{background:#f2f4f7;font-weight:600}th.host{text-align:left;white-space:nowrap}
td.pass{background:#dcf5e3;color:#0a5c26}td.fail{background:#fbdcd9;color:#8c1d18;font-weight:600}
td.not_checked{background:#eef0f3;color:#666}td.persona{background:#fff4d6;color:#7a5a00}td.none{background:#fff}
td.bw{min-width:72px;color:#10243a}details{margin:4px 0}summary{cursor:pointer}
.detail{font-size:12px;color:#333;margin:2px 0 2px 16px}.detail.fail{color:#8c1d18}
.drift-ok{color:#0a7d32}.drift-drift,.drift-error,.drift-unreachable,.drift-timeout{color:#b3261e;font-weight:600}
"""


def _cell(checks: list[dict]) -> str | None:
    states = {c["status"] for c in checks}
    return next((s for s in ORDER if s in states), None)


def _detail(c: dict) -> str:
    return f"{c['target']}: {LABEL.get(c['status'], c['status'])} - {c.get('detail', '')}"


def matrix(data: dict) -> tuple[list[str], list[str], dict]:
    """(hosts, checks in first-seen order, {(host, check): [check results]})."""
    hosts = list(data["hosts"])
    checks: list[str] = []
    cells: dict = {}
    for h, results in data["hosts"].items():
        for c in results:
            if c["check"] not in checks:
                checks.append(c["check"])
            cells.setdefault((h, c["check"]), []).append(c)
    return hosts, checks, cells


def bandwidth(data: dict) -> tuple[list[str], list[str], dict]:
    """(sources, destinations, {(src, dst): gbps or None}) from the bandwidth checks (target 'name (ip)')."""
    cells = {}
    for h, results in data["hosts"].items():
        for c in results:
            if c["check"] == "bandwidth":
                cells[(h, str(c["target"]).split(" (")[0])] = c.get("gbps") if c["status"] != "not_checked" else None
    srcs = sorted({s for s, _ in cells})
    dsts = sorted({d for _, d in cells})
    return srcs, dsts, cells


def _heat(gbps: float | None, top: float) -> str:
    if gbps is None:
        return "background:#eef0f3"
    share = max(0.0, min(1.0, gbps / top)) if top > 0 else 0.0
    # Red (slow) to green (the fastest pair measured).
    hue = int(120 * share)
    return f"background:hsl({hue},70%,78%)"


def render(data: dict, drift: dict | None = None) -> str:
    hosts, checks, cells = matrix(data)
    ok = data["failed"] == 0
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>sparkfleet validation: {escape(data['cluster'])}</title>", f"<style>{CSS}</style></head><body>",
           f'<h1>sparkfleet validation: {escape(data["cluster"])} - '
           f'<span class="{"passed" if ok else "failed"}" id="verdict">{"PASSED" if ok else "FAILED"}</span></h1>',
           f'<p class="summary">generated {escape(data["generated_at"])} &middot; {data["passed"]} passed, '
           f'{data["failed"]} failed, {data["not_checked"]} not checked, {data.get("persona", 0)} persona</p>',
           *([f'<p class="persona" id="persona">Lab persona nodes ({escape(", ".join(sorted(data["personas"])))}): '
              'checks marked persona rest on lab stand-ins (recorded outputs, no real GPU or ConnectX). '
              'No real hardware was verified there.</p>'] if data.get("personas") else []),
           "<h2>Checks per node</h2>", '<table id="matrix"><thead><tr><th class="host">node</th>']
    out += [f'<th data-check="{escape(c)}">{escape(c)}</th>' for c in checks]
    out.append("</tr></thead><tbody>")
    for h in hosts:
        out.append(f'<tr data-host="{escape(h)}"><th class="host">{escape(h)}</th>')
        for c in checks:
            results = cells.get((h, c), [])
            state = _cell(results)
            title = escape("\n".join(_detail(r) for r in results), quote=True)
            n = f" {len(results)}" if len(results) > 1 else ""
            out.append(f'<td class="{state or "none"}" data-host="{escape(h)}" data-check="{escape(c)}" '
                       f'data-status="{state or ""}" title="{title}">{LABEL[state]}{n if state else ""}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")

    out.append("<h2>Details</h2>")
    for h in hosts:
        results = data["hosts"][h]
        bad = sum(r["status"] == "fail" for r in results)
        out.append(f'<details{" open" if bad else ""}><summary>{escape(h)}: {len(results)} checks, {bad} failed</summary>')
        out += [f'<div class="detail {escape(r["status"])}">{escape(r["check"])} {escape(_detail(r))}</div>' for r in results]
        out.append("</details>")

    out.append("<h2>Fabric bandwidth (Gb/s, source row to destination column)</h2>")
    srcs, dsts, bw = bandwidth(data)
    if not bw:
        out.append('<p id="bandwidth-none">Not measured in this run (playbooks/fabric_check.yml measures every pair).</p>')
    else:
        top = max((v for v in bw.values() if v is not None), default=0.0)
        out.append('<table id="bandwidth"><thead><tr><th class="host">from \\ to</th>')
        out += [f"<th>{escape(d)}</th>" for d in dsts]
        out.append("</tr></thead><tbody>")
        for s in srcs:
            out.append(f'<tr><th class="host">{escape(s)}</th>')
            for d in dsts:
                if (s, d) not in bw:
                    out.append('<td class="none"></td>')
                    continue
                v = bw[(s, d)]
                out.append(f'<td class="bw" style="{_heat(v, top)}" data-src="{escape(s)}" data-dst="{escape(d)}">'
                           f'{"n/c" if v is None else f"{v:.1f}"}</td>')
            out.append("</tr>")
        out.append("</tbody></table>")

    out.append("<h2>Drift (the last drift check)</h2>")
    if not drift:
        out.append('<p id="drift-none">No drift check result found (make drift, or the nightly timer: '
                   'playbooks/drift_timer.yml).</p>')
    else:
        out.append(f'<p>checked {escape(str(drift.get("generated_at", "?")))}: {escape(str(drift.get("status", "?")))}</p>')
        out.append('<table id="drift"><thead><tr><th class="host">node</th><th>status</th><th>tasks that would change</th>'
                   "</tr></thead><tbody>")
        for h in hosts:
            rec = drift.get("hosts", {}).get(h)
            if rec is None:
                out.append(f'<tr data-host="{escape(h)}"><th class="host">{escape(h)}</th><td>not in that run</td><td></td></tr>')
                continue
            tasks = [str(t.get("task", t)) if isinstance(t, dict) else str(t) for t in rec.get("drift", [])]
            out.append(f'<tr data-host="{escape(h)}"><th class="host">{escape(h)}</th>'
                       f'<td class="drift-{escape(rec.get("status", "?"))}">{escape(rec.get("status", "?"))}</td>'
                       f'<td title="{escape(chr(10).join(tasks), quote=True)}">{len(tasks)}</td></tr>')
        out.append("</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def textfile(data: dict) -> str:
    """node_exporter textfile metrics: targets per node and check by result (every result, zeros included, so an
    alert resolves when a check passes again). No timestamp: node_textfile_mtime_seconds says when it was written."""
    _, checks, cells = matrix(data)
    lines = ["# HELP sparkfleet_validate_check Targets of a validation check on a node, by result, at the last validation.",
             "# TYPE sparkfleet_validate_check gauge"]
    for (h, c), results in sorted(cells.items()):
        for s in ("pass", "fail", "not_checked", "persona"):
            n = sum(r["status"] == s for r in results)
            lines.append(f'sparkfleet_validate_check{{host="{h}",check="{c}",status="{s}"}} {n}')
    lines += ["# HELP sparkfleet_validate_failed Failed checks at the last validation.",
              "# TYPE sparkfleet_validate_failed gauge", f"sparkfleet_validate_failed {data['failed']}"]
    return "\n".join(lines) + "\n"
