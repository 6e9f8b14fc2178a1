"""GPU and runtime layers in the lab: Docker really runs containers inside the nodes; daemon.json
keys of other tools survive; GPU roles skip with their reason on every node."""
from __future__ import annotations

import json

from labtools import NODES, SMOKE_IMAGE, host, playbook, ssh


def test_docker_runs_a_container_in_every_node():
    for n in NODES:
        out = ssh(n, SMOKE_IMAGE + "; docker run --rm sparkfleet/smoke:1 echo hello-from-$(hostname)", timeout=120).stdout
        assert out.strip().endswith(f"hello-from-{n}"), out
        info = json.loads(ssh(n, "docker info --format '{{json .}}'").stdout)
        assert info["Driver"] == "overlay2", info["Driver"]  # the /var/lib/docker volume, not vfs
        assert info["LoggingDriver"] == "json-file"


def test_daemon_json_merged_not_rewritten():
    for n in NODES:
        conf = json.loads(host(n).file("/etc/docker/daemon.json").content_string)
        assert conf["debug"] is True  # written by "another tool" before the role ran
        assert conf["log-opts"]["labels"] == "team"
        assert conf["log-opts"]["max-size"] == "100m" and conf["log-opts"]["max-file"] == "5"
        assert "runtimes" not in conf  # no GPU here: no nvidia runtime
        assert host(n).service("docker").is_running


def test_gpu_roles_skip_with_reason_everywhere():
    res = playbook("playbooks/gpu.yml")
    assert res.returncode == 0, res.stdout[-2000:]
    for n in NODES:
        assert f"nvidia_driver skipped on {n}: no NVIDIA GPU (no PCI device of vendor 10de)" in res.stdout
        assert f"fabric_manager skipped on {n}: no NVSwitch" in res.stdout
    assert "changed=0" in res.stdout and "changed=1" not in res.stdout
