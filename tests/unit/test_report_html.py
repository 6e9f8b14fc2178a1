"""The validation report's HTML page, its textfile metrics, and the page rendered in headless Chromium."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from sparkfleet_tools import report_html, validate_report

HOSTS = ["spark-01", "spark-02", "spark-03"]


def sample() -> dict:
    hosts = {}
    for i, h in enumerate(HOSTS):
        checks = [
            {"check": "service", "target": "ssh", "status": "pass", "detail": "active"},
            {"check": "time_sync", "target": "chrony", "status": "fail" if h == "spark-03" else "pass",
             "detail": "offset 0.8 s > 0.1 s" if h == "spark-03" else "offset 0.001 s"},
            {"check": "gpu", "target": "-", "status": "not_checked", "detail": "no NVIDIA GPU on this node"},
        ]
        for j, peer in enumerate(HOSTS):
            if peer != h:
                checks.append({"check": "bandwidth", "target": f"{peer} (10.80.0.{11 + j})", "status": "pass",
                               "detail": "x", "gbps": 90.0 + 10 * i + j})
        hosts[h] = checks
    return {"cluster": "lab", "hosts": hosts}


def drift() -> dict:
    return {"generated_at": "2026-12-04T03:17:00+00:00", "status": "drift",
            "hosts": {"spark-01": {"status": "ok", "drift": []},
                      "spark-02": {"status": "drift", "drift": [{"task": "Scrape config from the inventory"}]}}}


def write(tmp_path: Path, data: dict | None = None, drift_files=()) -> Path:
    out = tmp_path / "validate"
    validate_report.main(["--input", json.dumps(data or sample()), "--out", str(out)]
                         + [a for f in drift_files for a in ("--drift", str(f))])
    return out


def test_page_is_self_contained_and_has_every_node_and_check(tmp_path, capsys):
    out = write(tmp_path)
    summary = json.loads(capsys.readouterr().out)
    assert summary["failed"] == 1
    page = (out / "latest.html").read_text()
    assert not re.search(r'(src|href)=["\']?(https?:)?//', page), "external asset"
    assert "<script" not in page
    for h in HOSTS:
        assert f'data-host="{h}"' in page
    for c in ("service", "time_sync", "gpu", "bandwidth"):
        assert f'<th data-check="{c}">' in page
    assert 'data-host="spark-03" data-check="time_sync" data-status="fail" title="chrony: FAIL - offset 0.8 s' in page
    assert 'id="verdict">FAILED<' in page
    # Heatmap: one cell per measured pair, none on the diagonal.
    assert page.count('class="bw"') == 6 and 'data-src="spark-01" data-dst="spark-01"' not in page
    assert 'id="drift-none"' in page


def test_drift_shown_per_node_from_the_newest_report(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps(dict(drift(), generated_at="2026-01-01T00:00:00+00:00", status="ok")))
    new = tmp_path / "new.json"
    new.write_text(json.dumps(drift()))
    page = (write(tmp_path, drift_files=[old, new, tmp_path / "missing.json"]) / "latest.html").read_text()
    assert "checked 2026-12-04T03:17:00+00:00: drift" in page
    assert '<td class="drift-drift">drift</td><td title="Scrape config from the inventory">1</td>' in page
    assert '<tr data-host="spark-03"><th class="host">spark-03</th><td>not in that run</td>' in page


def test_drift_given_inside_the_input_wins_when_newer(tmp_path):
    data = dict(sample(), drift=drift())
    out = write(tmp_path, data)
    assert "checked 2026-12-04T03:17:00+00:00" in (out / "latest.html").read_text()
    assert "drift" not in json.loads((out / "latest.json").read_text())


def test_textfile_metrics_every_result_per_node_and_check(tmp_path):
    prom = (write(tmp_path) / "latest.prom").read_text()
    assert 'sparkfleet_validate_check{host="spark-03",check="time_sync",status="fail"} 1' in prom
    assert 'sparkfleet_validate_check{host="spark-02",check="time_sync",status="fail"} 0' in prom
    assert 'sparkfleet_validate_check{host="spark-01",check="bandwidth",status="pass"} 2' in prom
    assert "sparkfleet_validate_failed 1" in prom
    # Deterministic: the same results give the same file (the copy to the node stays unchanged).
    assert report_html.textfile(dict(sample(), failed=1)) == report_html.textfile(dict(sample(), failed=1))


def test_no_bandwidth_says_how_to_measure(tmp_path):
    data = sample()
    for h in data["hosts"]:
        data["hosts"][h] = [c for c in data["hosts"][h] if c["check"] != "bandwidth"]
    page = (write(tmp_path, data) / "latest.html").read_text()
    assert 'id="bandwidth-none"' in page and "playbooks/fabric_check.yml" in page


def test_rendered_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium missing: make deps installs it"
    page = write(tmp_path, drift_files=[]) / "latest.html"
    art = ROOT / "reports" / "test-artifacts"
    art.mkdir(parents=True, exist_ok=True)
    shot = art / "validate-report.png"
    shot.unlink(missing_ok=True)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--user-data-dir=" + str(tmp_path / "chromium")]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], text=True, capture_output=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for h in HOSTS:
        assert re.search(rf'<tr data-host="{h}"><th class="host">{h}</th>', dom.stdout), h
    for c in ("service", "time_sync", "gpu", "bandwidth"):
        assert f'<th data-check="{c}">{c}</th>' in dom.stdout
    res = subprocess.run([chromium, *flags, f"--screenshot={shot}", "--window-size=1280,900", page.as_uri()],
                         text=True, capture_output=True, timeout=120)
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.parametrize("content,expected", [("", None), ("bm90IGpzb24=", None)])
def test_drift_summary_filter_tolerates_missing_reports(content, expected):
    import sys
    sys.path.insert(0, str(ROOT / "plugins" / "filter"))
    import monitoring
    assert monitoring.drift_summary(content) is expected
    import base64
    full = {"generated_at": "t", "status": "drift", "hosts": {"a": {"status": "drift", "drift": [{"task": "T", "diff": "x" * 9000}]}}}
    assert monitoring.drift_summary(base64.b64encode(json.dumps(full).encode())) == \
        {"generated_at": "t", "status": "drift", "hosts": {"a": {"status": "drift", "drift": ["T"]}}}
