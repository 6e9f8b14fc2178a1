"""Gateway (nginx) on the control node: its health endpoint, bearer keys per team (401 and a JSON body without a valid
one), a clear JSON 503 while no backend runs, keys that never reach a log, and its optional TLS pair."""
from __future__ import annotations

import json
import subprocess

from labtools import CONTROL, INV, INVENTORY, addr, playbook, role_run, ssh

URL = f"http://{addr(CONTROL)}:8090"
KEY = (INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_gateway_key_default").read_text().strip()
VLLM_KEY = (INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_vllm_api_key").read_text().strip()


def get(path: str, key: str | None = None) -> tuple[str, str, str]:
    """(status code, response headers, body) of one request from the control node itself."""
    auth = f"-H 'Authorization: Bearer {key}' " if key else ""
    res = ssh(CONTROL, f"curl -sS -o /tmp/gw.json -D /tmp/gw.hdr -w '%{{http_code}}' {auth}{URL}{path}; "
                       "echo; tr -d '\\r' < /tmp/gw.hdr; echo ===; cat /tmp/gw.json").stdout
    code, _, rest = res.partition("\n")
    headers, _, body = rest.partition("===\n")
    return code, headers, body


def test_health_needs_no_key_and_every_other_path_a_valid_one():
    code, _, body = get("/gateway/health")
    assert code == "200" and json.loads(body)["status"] == "ok", body
    for key in (None, "wrong-key-of-enough-length-0123456789", "Bearer"):
        code, headers, body = get("/v1/models", key)
        assert code == "401", (key, headers, body)
        assert 'www-authenticate: bearer realm="sparkfleet-gateway"' in headers.lower(), headers
        assert json.loads(body)["error"]["type"] == "unauthorized", body


def test_a_valid_key_passes_to_the_backends_json_503_without_one():
    code, headers, body = get("/v1/models", KEY)
    assert code == "503", (headers, body)
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


def test_a_tls_pair_serves_https_on_the_management_address_and_the_key_never_shows(tmp_path):
    """gateway_tls_cert/gateway_tls_key: HTTPS on the management address (a self-signed pair for that address), the
    same keys and JSON answers through it, plain HTTP refused there; the key root-only and in no output, --diff
    included; back to plain HTTP without the pair (the files go)."""
    ip = addr(CONTROL)
    key, cert = tmp_path / "gw.key", tmp_path / "gw.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=sparkfleet-gateway", "-addext", f"subjectAltName=IP:{ip}"],
                   check=True, capture_output=True)
    body = key.read_text().splitlines()[1]  # a line of the key's base64
    pair = tmp_path / "tls.json"
    pair.write_text(json.dumps({"gateway_tls_cert": cert.read_text(), "gateway_tls_key": key.read_text()}))
    try:
        res = playbook("playbooks/roles.yml", "-e", f"@{pair}", "--diff", "-v")
        assert res.returncode == 0 and body not in res.stdout, res.stdout[-3000:]
        assert ssh(CONTROL, "stat -c '%a %U' /etc/nginx/sparkfleet-gateway.key").stdout.split() == ["600", "root"]
        ssh(CONTROL, f"cat > /tmp/gw-ca.crt <<'EOF'\n{cert.read_text()}EOF")
        https = f"curl -sS --cacert /tmp/gw-ca.crt -o /tmp/gw.json -w '%{{http_code}}' https://{ip}:8090/v1/models"
        assert ssh(CONTROL, https).stdout == "401"
        assert ssh(CONTROL, f"{https} -H 'Authorization: Bearer {KEY}'; echo; cat /tmp/gw.json").stdout.startswith("503")
        plain = ssh(CONTROL, f"curl -s -o /dev/null -w '%{{http_code}}' {URL}/v1/models", check=False).stdout
        assert plain == "400", plain  # nginx: "The plain HTTP request was sent to HTTPS port"
    finally:
        res = playbook("playbooks/roles.yml")
        assert res.returncode == 0, res.stdout[-3000:]
    assert ssh(CONTROL, "ls /etc/nginx/sparkfleet-gateway.key /etc/nginx/sparkfleet-gateway.crt", check=False).returncode != 0
    assert get("/v1/models")[0] == "401"
