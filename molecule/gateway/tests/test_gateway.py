"""Gateway (nginx) on the control node: its health endpoint, and a clear JSON 503 while no backend runs."""
from __future__ import annotations

import json

from labtools import CONTROL, addr, ssh


def test_health_and_json_503_without_backend():
    url = f"http://{addr(CONTROL)}:8090"
    health = ssh(CONTROL, f"curl -sS {url}/gateway/health").stdout
    assert json.loads(health)["status"] == "ok"
    res = ssh(CONTROL, f"curl -sS -o /tmp/gw.json -w '%{{http_code}}' {url}/v1/models; cat /tmp/gw.json").stdout
    code, body = res[:3], res[3:]
    assert code == "503", res
    assert "no healthy inference backend" in json.loads(body)["error"]["message"]
    assert ssh(CONTROL, "nginx -t 2>&1").returncode == 0
