"""Gateway (nginx) on the control node: its health endpoint, bearer keys per team (401 and a JSON body without a valid
one), a clear JSON 503 while no backend runs, and keys that never reach a log."""
from __future__ import annotations

import json

from labtools import CONTROL, INV, INVENTORY, addr, role_run, ssh

URL = f"http://{addr(CONTROL)}:8090"
KEY = (INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_gateway_key_default").read_text().strip()
VLLM_KEY = (INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_vllm_api_key").read_text().strip()


def get(path: str, key: str | None = None) -> tuple[str, str]:
    auth = f"-H 'Authorization: Bearer {key}' " if key else ""
    res = ssh(CONTROL, f"curl -sS -o /tmp/gw.json -D /tmp/gw.hdr -w '%{{http_code}}' {auth}{URL}{path}; "
                       "echo; cat /tmp/gw.hdr; echo; cat /tmp/gw.json").stdout
    code, _, rest = res.partition("\n")
    return code, rest


def test_health_needs_no_key_and_every_other_path_a_valid_one():
    code, body = get("/gateway/health")
    assert code == "200" and json.loads(body.split("\r\n\r\n", 1)[1])["status"] == "ok", body
    for key in (None, "wrong-key-of-enough-length-0123456789", "Bearer"):
        code, rest = get("/v1/models", key)
        assert code == "401", (key, rest)
        headers, _, body = rest.partition("\r\n\r\n")
        assert 'www-authenticate: bearer realm="sparkfleet-gateway"' in headers.lower(), headers
        assert json.loads(body)["error"]["type"] == "unauthorized", body


def test_a_valid_key_passes_to_the_backends_json_503_without_one():
    code, rest = get("/v1/models", KEY)
    body = rest.partition("\r\n\r\n")[2]
    assert code == "503", rest
    assert "no healthy inference backend" in json.loads(body)["error"]["message"]
    assert ssh(CONTROL, "nginx -t 2>&1").returncode == 0
    # The access log names the team, never the key.
    log = ssh(CONTROL, "tail -n 5 /var/log/nginx/sparkfleet-gateway.log").stdout
    assert '"team":"default"' in log and KEY not in log, log


def test_keys_are_root_only_and_never_in_verbose_output():
    assert ssh(CONTROL, "stat -c '%a %U %G' /etc/nginx/sparkfleet-gateway-keys.conf").stdout.split() == ["600", "root", "root"]
    assert KEY not in ssh(CONTROL, "cat /etc/nginx/conf.d/sparkfleet-gateway.conf").stdout
    out = role_run("-vvv")  # changes nothing, and shows neither key
    assert len(out) > 10000 and KEY not in out and VLLM_KEY not in out
