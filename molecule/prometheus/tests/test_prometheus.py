"""Prometheus on the control node: config and rules pass promtool and are loaded (every rule healthy), every node is
a node_exporter target, Alertmanager is the one on the control node, and it listens on the management address."""
from __future__ import annotations

import json
import time

from labtools import CONTROL, NODES, addr, ssh


def api(path: str) -> dict:
    return json.loads(ssh(CONTROL, f"curl -fsS http://{addr(CONTROL)}:9090/api/v1/{path}").stdout)["data"]


def test_config_and_rules_loaded_and_every_node_a_target():
    ssh(CONTROL, "promtool check config /etc/sparkfleet/prometheus/prometheus.yml")
    groups = api("rules")["groups"]
    assert sum(len(g["rules"]) for g in groups) >= 20
    assert all(r["health"] != "err" for g in groups for r in g["rules"]), groups
    # Discovery hands targets to the scrape manager at most every 5 s: right after a start the list can be empty.
    for _ in range(30):
        node_targets = {t["labels"]["host"] for t in api("targets")["activeTargets"] if t["labels"]["job"] == "node"}
        if node_targets == set(NODES):
            break
        time.sleep(2)
    assert node_targets == set(NODES)
    assert [a["url"] for a in api("alertmanagers")["activeAlertmanagers"] + api("alertmanagers")["droppedAlertmanagers"]
            ][:1] == [f"http://{addr(CONTROL)}:9093/api/v2/alerts"]
    assert ssh(CONTROL, "curl -sS --max-time 3 http://127.0.0.1:9090/-/ready", check=False).returncode != 0
