"""DCGM exporter without GPUs: skipped on every node with the reason, no unit and no Prometheus target left."""
from __future__ import annotations

from labtools import CONTROL, NODES, role_run, ssh


def test_skip_is_named_on_every_node_and_nothing_is_left():
    out = role_run()
    for n in NODES:
        assert f"DCGM exporter skipped on {n}: no NVIDIA GPU on this node (PCI scan found none)" in out, out[-2000:]
        assert ssh(n, "systemctl cat dcgm-exporter.service", check=False).returncode != 0
    assert ssh(CONTROL, "ls /etc/prometheus/targets/dcgm-*.json 2>/dev/null", check=False).stdout == ""
