"""Grafana: its repository is not reachable from the lab (and no key is pinned by default): skipped with the reason,
nothing half-installed."""
from __future__ import annotations

from labtools import CONTROL, role_run, ssh


def test_skip_names_the_reason_and_installs_nothing():
    out = role_run()
    assert f"Grafana skipped on {CONTROL}: " in out, out[-2000:]
    assert ssh(CONTROL, "dpkg -s grafana", check=False).returncode != 0
    assert ssh(CONTROL, "ls /etc/apt/sources.list.d/ | grep -ci grafana", check=False).stdout.strip() in ("", "0")
