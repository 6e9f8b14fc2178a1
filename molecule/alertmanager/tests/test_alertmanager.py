"""Alertmanager on the control node: running with our config, answering on the management address only."""
from __future__ import annotations

import json

from labtools import CONTROL, addr, ssh


def test_alertmanager_is_ready_on_the_management_address():
    out = ssh(CONTROL, f"curl -fsS http://{addr(CONTROL)}:9093/api/v2/status").stdout
    status = json.loads(out)
    assert status["cluster"]["status"] in ("ready", "disabled"), status["cluster"]
    assert "route:" in status["config"]["original"]
    assert ssh(CONTROL, "curl -fsS --max-time 3 http://127.0.0.1:9093/-/ready", check=False).returncode != 0


def test_config_passes_amtool():
    assert "SUCCESS" in ssh(CONTROL, "amtool check-config /etc/prometheus/alertmanager.yml 2>&1").stdout
