"""Monitoring on the converged lab: Prometheus scrapes every node, rules are loaded, a stopped node_exporter raises an alert
naming the node (drift's alert: test_drift_timer), the validation page renders in Chromium."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import yaml

from labtools import INV, NODES, PROJECT, addr, ssh

CONTROL = next(h for h, v in INV["hosts"].items() if v["group"] == "control")
PROM = f"http://{addr(CONTROL)}:9090"
sys.path.insert(0, str(PROJECT / "plugins" / "module_utils"))
import promql  # noqa: E402


def api(path: str, **params) -> dict:
    url = f"{PROM}/api/v1/{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as r:  # the lab's own control node only
        return json.loads(r.read())["data"]


def wait(what: str, check, timeout: float = 150, every: float = 5):
    """Poll check() until it returns something truthy (bounded)."""
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        try:
            last = check()
        except OSError as e:  # Prometheus restarting
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")


def alerts(name: str) -> list[dict]:
    return [a for a in api("alerts")["alerts"] if a["labels"].get("alertname") == name]


def test_prometheus_scrapes_every_node_and_loads_the_rules():
    def targets():
        t = api("targets")["activeTargets"]
        node = {x["labels"]["host"]: x["health"] for x in t if x["labels"]["job"] == "node"}
        # A target added by the last reload stays "unknown" until its first scrape.
        scraped = all(x["health"] != "unknown" for x in t)
        return t if scraped and node == {n: "up" for n in NODES} else None
    t = wait("every node_exporter up and every target scraped", targets, timeout=120)
    jobs = {}
    for x in t:
        jobs.setdefault(x["labels"]["job"], {})[x["labels"].get("host", x["labels"]["instance"])] = x["health"]
    assert set(jobs["prometheus"].values()) == {"up"} and set(jobs["alertmanager"].values()) == {"up"}, jobs
    # The inference layer's Ray metrics endpoint on every node.
    assert jobs.get("ray") == {n: "up" for n in NODES}, jobs
    groups = {g["name"]: g for g in api("rules")["groups"]}
    assert {"sparkfleet-nodes", "sparkfleet-code", "sparkfleet-fabric", "sparkfleet-gpu", "sparkfleet-inference"} <= set(groups)
    assert sum(len(g["rules"]) for g in groups.values()) >= 20
    assert all(r["health"] == "ok" for g in groups.values() for r in g["rules"]), groups
    # The config and rules on the node pass promtool, as the role checked before reloading.
    ssh(CONTROL, "promtool check config /etc/sparkfleet/prometheus/prometheus.yml")
    # Alertmanager is Prometheus' alertmanager.
    am = api("alertmanagers")["activeAlertmanagers"]
    assert [a["url"] for a in am] == [f"http://{addr(CONTROL)}:9093/api/v2/alerts"], am


def test_exporters_listen_on_the_management_address_only():
    for n in NODES:
        listening = ssh(n, "ss -Hltn").stdout
        assert f"{addr(n)}:9100 " in listening and not re.search(r"(\*|0\.0\.0\.0|\[::\]):9100 ", listening), listening
    listening = ssh(CONTROL, "ss -Hltn").stdout
    for port in (9090, 9093):
        assert f"{addr(CONTROL)}:{port} " in listening, listening


def test_prometheus_and_alertmanager_answer_admin_networks_only():
    """Alertmanager's API silences alerts and Prometheus' shows every node: the admin networks only (this controller),
    not the cluster's nodes nor another host on the management network."""
    probe = ("for p in 9090 9093; do timeout 3 bash -c \"echo > /dev/tcp/%s/$p\" 2>/dev/null && echo $p=open || echo $p=closed;"
             " done" % addr(CONTROL))
    outsiders = [h for h, v in INV["hosts"].items() if v["group"] == "outside"]
    for src in [n for n in NODES if n != CONTROL] + outsiders:
        assert ssh(src, probe).stdout.split() == ["9090=closed", "9093=closed"], src
    for port in (9090, 9093):
        with urllib.request.urlopen(f"http://{addr(CONTROL)}:{port}/-/ready", timeout=10) as r:  # the lab's own node
            assert r.status == 200


def test_validation_results_are_scraped_for_every_node():
    res = wait("validation metrics", lambda: api("query", query="sparkfleet_validate_check")["result"], timeout=60)
    assert {r["metric"]["host"] for r in res} == set(NODES)
    # The latest report passed (an earlier test's planted failure stays in the series until the next scrape).
    def none_failed():
        failed = api("query", query='sum(sparkfleet_validate_check{status="fail"})')["result"]
        return failed and float(failed[0]["value"][1]) == 0
    wait("no failed validation check in the scraped report", none_failed, timeout=150)


def test_stopped_node_exporter_raises_an_alert_naming_the_node():
    node = NODES[-1]
    ssh(node, "systemctl stop prometheus-node-exporter")
    try:
        hit = wait(f"SparkfleetNodeDown for {node}",
                   lambda: [a for a in alerts("SparkfleetNodeDown") if a["labels"].get("host") == node], timeout=150)
        assert hit[0]["state"] in ("pending", "firing") and hit[0]["labels"]["severity"] == "critical"
        assert node in hit[0]["annotations"]["summary"]
        assert not [a for a in alerts("SparkfleetNodeDown") if a["labels"].get("host") != node]
    finally:
        ssh(node, "systemctl start prometheus-node-exporter")
    wait("node_exporter back up", lambda: [r for r in api("query", query=f'up{{job="node",host="{node}"}} == 1')["result"]],
         timeout=90)


def test_dashboard_and_rule_metrics_exist_in_the_lab():
    """Every node_exporter metric the dashboards and rules read is really exported here, except collectors that need
    hardware the lab lacks (RDMA ports, hwmon sensors)."""
    present = set(api("label/__name__/values"))
    used = set()
    for p in (PROJECT / "roles" / "grafana" / "files" / "dashboards").glob("*.json"):
        for panel in json.loads(p.read_text())["panels"]:
            for t in panel["targets"]:
                used |= promql.metric_names(t["expr"])
    rules = yaml.safe_load(ssh(CONTROL, "cat /etc/sparkfleet/prometheus/rules/sparkfleet.rules.yml").stdout)
    for g in rules["groups"]:
        for r in g["rules"]:
            used |= promql.metric_names(r["expr"])
    needs_hardware = {m for m in used if m.startswith(("node_infiniband_", "node_hwmon_"))}
    node = {m for m in used if m.startswith("node_")} - needs_hardware
    assert len(node) >= 10
    assert node - present == set()
    assert {"sparkfleet_validate_check", "sparkfleet_drift_tasks", "up"} <= present


def test_validation_page_renders_in_chromium():
    page = PROJECT / "reports" / "validate" / "latest.html"
    assert page.is_file()
    chromium = shutil.which("chromium")
    assert chromium, "chromium missing: make deps installs it"
    art = PROJECT / "reports" / "test-artifacts"
    art.mkdir(parents=True, exist_ok=True)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()], text=True, capture_output=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    report = json.loads((PROJECT / "reports" / "validate" / "latest.json").read_text())
    for n in NODES:
        assert f'<tr data-host="{n}">' in dom.stdout
    for check in {c["check"] for cs in report["hosts"].values() for c in cs}:
        assert f'<th data-check="{check}">{check}</th>' in dom.stdout
    shot = art / "lab-validate-report.png"
    res = subprocess.run([chromium, *flags, f"--screenshot={shot}", "--window-size=1600,1000", page.as_uri()],
                         text=True, capture_output=True, timeout=120)
    assert res.returncode == 0 and shot.stat().st_size > 10_000, res.stderr[-2000:]
