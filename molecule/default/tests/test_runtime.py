"""GPU and runtime layers in the lab: Docker really runs containers inside the nodes; daemon.json
keys of other tools survive; on the DGX Spark persona the GPU roles take their GPU branch (the driver DGX OS ships is
verified, not reinstalled; no fabric manager without NVSwitches)."""
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
        assert conf["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"  # a GPU (persona): the nvidia runtime
        assert host(n).service("docker").is_running


def test_gpu_roles_take_the_gpu_branch_everywhere():
    res = playbook("playbooks/gpu.yml")
    assert res.returncode == 0, res.stdout[-2000:]
    assert res.stdout.count("driver 580.95.05 (CUDA 13.0) on 1 GPU(s) (DGX OS: verified, not reinstalled)") == len(NODES)
    for n in NODES:
        assert f"fabric_manager skipped on {n}: no NVSwitch" in res.stdout
    assert "changed=0" in res.stdout and "changed=1" not in res.stdout
