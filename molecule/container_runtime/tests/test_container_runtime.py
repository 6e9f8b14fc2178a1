"""container_runtime: Docker runs containers; another tool's daemon.json keys survive; no GPU, no NVIDIA runtime."""
from __future__ import annotations

import json

from labtools import CONTROL, SMOKE_IMAGE, host, role_run, ssh


def test_a_container_runs():
    out = ssh(CONTROL, SMOKE_IMAGE + "; docker run --rm sparkfleet/smoke:1 echo hello-from-$(hostname)", timeout=120).stdout
    assert out.strip().endswith(f"hello-from-{CONTROL}"), out


def test_daemon_json_merged_and_no_nvidia_runtime_without_gpu():
    conf = json.loads(host(CONTROL).file("/etc/docker/daemon.json").content_string)
    assert conf["debug"] is True and conf["log-opts"]["labels"] == "team"  # the other tool's keys
    assert conf["log-opts"]["max-size"] == "100m" and conf["log-opts"]["max-file"] == "5"  # ours
    assert "runtimes" not in conf


def test_toolkit_skip_is_named():
    out = role_run()
    assert "no NVIDIA GPU" in out, out[-2000:]
