"""Fabric manager: only NVSwitch systems need it; lab nodes have none, so it skips with that reason."""
from __future__ import annotations

from labtools import NODES, role_run, ssh


def test_skip_without_nvswitch_is_named_and_nothing_installed():
    out = role_run()
    for n in NODES:
        assert f"fabric_manager skipped on {n}: no NVSwitch" in out, out[-2000:]
        assert ssh(n, "dpkg -l 'nvidia-fabricmanager*' 2>/dev/null | grep -c ^ii", check=False).stdout.strip() in ("", "0")
