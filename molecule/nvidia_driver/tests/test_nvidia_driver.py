"""NVIDIA driver: no GPU in the lab, so every node skips with the named reason and no package or repository is added."""
from __future__ import annotations

from labtools import NODES, role_run, ssh


def test_skip_without_gpu_is_named_and_nothing_installed():
    out = role_run()
    for n in NODES:
        assert f"nvidia_driver skipped on {n}: no NVIDIA GPU (no PCI device of vendor 10de)" in out, out[-2000:]
        assert ssh(n, "ls /etc/apt/sources.list.d/ | grep -ci cuda", check=False).stdout.strip() in ("", "0")
