"""Monitoring: alert rules rendered by Ansible and tested with promtool (every alert has a case), the Prometheus and
Alertmanager configs rendered for a cluster, dashboards parsed with promtool and checked against the metrics we export,
the HTML report rendered in headless Chromium."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

sys.path.insert(0, str(ROOT / "plugins" / "module_utils"))
import promql  # noqa: E402

PROMTOOL = ROOT / ".cache" / "tools" / "promtool"
RULES_TEST = ROOT / "tests" / "promtool" / "sparkfleet.rules.test.yml"
METRICS = ROOT / "tests" / "fixtures" / "metrics"
FABRIC = ["enp1s0f0np0", "enP2p1s0f0np0"]

RENDER = """
- hosts: localhost
  gather_facts: false
  vars:
    sparkfleet_fabric_interfaces: %(fabric)s
  tasks:
    - ansible.builtin.include_vars: {file: "%(roles)s/prometheus/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/alertmanager/defaults/main.yml"}
    - ansible.builtin.template: {src: "%(roles)s/prometheus/templates/sparkfleet.rules.yml.j2", dest: "%(out)s/sparkfleet.rules.yml", mode: "0644"}
    - ansible.builtin.set_fact:  # set_fact: above include_vars in precedence
        alertmanager_receivers: [{name: chat, webhook_url: "http://127.0.0.1:9/hook"}, {name: ops, email_to: ops@example.org}]
        alertmanager_smtp_smarthost: "127.0.0.1:25"
        alertmanager_smtp_from: "sparkfleet@example.org"
    - ansible.builtin.template: {src: "%(roles)s/alertmanager/templates/alertmanager.yml.j2", dest: "%(out)s/alertmanager.yml", mode: "0644"}
    - ansible.builtin.include_vars: {file: "%(roles)s/grafana/defaults/main.yml"}
    - ansible.builtin.set_fact:
        grafana_listen_address: 10.0.0.11
        grafana_port: 3000
        grafana_prometheus_url: "http://10.0.0.11:9090"
        grafana_admin_password: "s3cret-from-vault"
    - ansible.builtin.template: {src: "%(roles)s/grafana/templates/{{ item }}.j2", dest: "%(out)s/{{ item }}", mode: "0644"}
      loop: [datasource.yaml, dashboard.yaml, grafana.service.conf]
"""


def promtool(*args, cwd=None):
    assert PROMTOOL.is_file(), "promtool missing: make deps unpacks it into .cache/tools"
    return subprocess.run([str(PROMTOOL), *args], cwd=cwd, text=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("monitoring")
    pb = out / "render.yml"
    pb.write_text(RENDER % {"roles": ROOT / "roles", "out": out, "fabric": json.dumps(FABRIC)})
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", str(pb), "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}", "-e", '{"groups": {"control": ["spark-01"]}}'],
                         cwd=ROOT, env=env, text=True, capture_output=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return out


def alerts(rules_file: Path) -> dict[str, str]:
    return {r["alert"]: r["expr"] for g in yaml.safe_load(rules_file.read_text())["groups"] for r in g["rules"] if "alert" in r}


def known_metrics() -> set[str]:
    names = set()
    for f in METRICS.glob("*.txt"):
        names |= {ln.strip() for ln in f.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    # What sparkfleet writes itself (drift and validation textfile metrics) and the DCGM fields it exports.
    for src in (ROOT / "sparkfleet_tools" / "report.py", ROOT / "sparkfleet_tools" / "report_html.py"):
        names |= set(re.findall(r"\b(sparkfleet_[a-z_]+)\{?", src.read_text()))
    csv = ROOT / "roles" / "dcgm_exporter" / "files" / "sparkfleet-counters.csv"
    names |= {ln.split(",")[0].strip() for ln in csv.read_text().splitlines() if ln.startswith("DCGM_")}
    return names | {"up", "ALERTS"}


def test_rules_pass_promtool_check(rendered):
    res = promtool("check", "rules", str(rendered / "sparkfleet.rules.yml"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout + res.stderr


def test_every_alert_has_a_promtool_case_and_they_pass(rendered):
    cases = yaml.safe_load(RULES_TEST.read_text())
    firing = {t["alertname"] for case in cases["tests"] for t in case.get("alert_rule_test", []) if t.get("exp_alerts")}
    quiet = {t["alertname"] for case in cases["tests"] for t in case.get("alert_rule_test", []) if not t.get("exp_alerts")}
    names = set(alerts(rendered / "sparkfleet.rules.yml"))
    assert len(names) >= 20
    assert names - firing == set(), "alerts without a firing case"
    assert (firing | quiet) - names == set(), "cases for alerts that do not exist"
    shutil.copy(RULES_TEST, rendered / RULES_TEST.name)
    res = promtool("test", "rules", RULES_TEST.name, cwd=rendered)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_rules_use_only_metrics_we_export_or_scrape(rendered):
    known = known_metrics()
    for name, expr in alerts(rendered / "sparkfleet.rules.yml").items():
        unknown = promql.metric_names(expr) - known
        assert not unknown, f"{name}: {sorted(unknown)}"


def test_fabric_alerts_watch_the_fabric_ports_and_their_rdma_devices_only(rendered):
    a = alerts(rendered / "sparkfleet.rules.yml")
    assert 'device=~"^(enp1s0f0np0|enP2p1s0f0np0)$"' in a["SparkfleetFabricPortDown"]
    assert 'device=~"^(rocep1s0f0|roceP2p1s0f0)$"' in a["SparkfleetFabricPortDown"]


def test_alertmanager_config_routes_to_every_receiver(rendered):
    cfg = yaml.safe_load((rendered / "alertmanager.yml").read_text())
    assert cfg["route"]["receiver"] == "sparkfleet"
    (recv,) = cfg["receivers"]
    assert recv["webhook_configs"][0]["url"] == "http://127.0.0.1:9/hook"
    assert recv["email_configs"][0]["to"] == "ops@example.org"
    assert cfg["global"]["smtp_smarthost"] == "127.0.0.1:25"


def test_metric_name_extraction():
    assert promql.metric_names('sum by (host) (rate(node_network_receive_bytes_total{device=~"en.*"}[5m])) * 8') == \
        {"node_network_receive_bytes_total"}
    assert promql.metric_names('histogram_quantile(0.95, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))') \
        == {"vllm:e2e_request_latency_seconds_bucket"}
    assert promql.metric_names('up{job="node"} == 0 or absent(foo_total) unless on (host) bar') == {"up", "foo_total", "bar"}
    assert promql.metric_names('time() - x_seconds > 1e3 and y offset 5m') == {"x_seconds", "y"}


# ---- dashboards

DASHBOARDS = sorted((ROOT / "roles" / "grafana" / "files" / "dashboards").glob("*.json"))


def test_dashboards_are_generated_from_their_specs():
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "dashboards.py"), "--check"], text=True, capture_output=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert {p.stem for p in DASHBOARDS} == {"sparkfleet-fleet", "sparkfleet-gpu", "sparkfleet-fabric", "sparkfleet-inference"}


def test_dashboard_queries_parse_and_use_known_metrics(tmp_path):
    known = known_metrics()
    rules, n = [], 0
    for path in DASHBOARDS:
        dash = json.loads(path.read_text())
        assert dash["uid"] == path.stem and dash["panels"]
        for panel in dash["panels"]:
            assert panel["datasource"]["uid"] == "sparkfleet-prometheus" and panel["targets"], panel["title"]
            for t in panel["targets"]:
                unknown = promql.metric_names(t["expr"]) - known
                assert not unknown, f"{path.name} / {panel['title']}: {sorted(unknown)}"
                n += 1
                rules.append({"record": f"sparkfleet:dashboard_query_{n}", "expr": t["expr"]})
    # promtool's PromQL parser, through a rules file of recording rules (one per query).
    f = tmp_path / "queries.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    res = promtool("check", "rules", str(f))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert f"{n} rules found" in res.stdout, res.stdout


def test_dashboards_cover_what_the_issue_asks():
    text = {p.stem: p.read_text() for p in DASHBOARDS}
    assert "sparkfleet_validate_check" in text["sparkfleet-fleet"] and "sparkfleet_drift_tasks" in text["sparkfleet-fleet"]
    for m in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        assert m in text["sparkfleet-gpu"]
    assert "node_network_receive_drop_total" in text["sparkfleet-fabric"] and "receive_bytes" in text["sparkfleet-fabric"]
    assert "histogram_quantile(0.95" in text["sparkfleet-inference"] and 'status=~\\"2..\\"' in text["sparkfleet-inference"]


def test_grafana_provisioning_points_at_prometheus_and_the_dashboards(rendered):
    ds = yaml.safe_load((rendered / "datasource.yaml").read_text())["datasources"][0]
    assert ds["uid"] == "sparkfleet-prometheus" and ds["url"] == "http://10.0.0.11:9090" and ds["isDefault"]
    prov = yaml.safe_load((rendered / "dashboard.yaml").read_text())["providers"][0]
    assert prov["options"]["path"] == "/var/lib/grafana/dashboards/sparkfleet" and prov["disableDeletion"]
    unit = (rendered / "grafana.service.conf").read_text()
    assert "Environment=GF_SERVER_HTTP_ADDR=10.0.0.11" in unit
    # The password is read from its own file: never in the unit (systemctl show, the drift diff).
    assert "GF_SECURITY_ADMIN_PASSWORD__FILE=/etc/grafana/sparkfleet-admin-password" in unit and "s3cret" not in unit
    # Every dashboard's datasource is the provisioned one.
    for p in DASHBOARDS:
        assert {pn["datasource"]["uid"] for pn in json.loads(p.read_text())["panels"]} == {ds["uid"]}
