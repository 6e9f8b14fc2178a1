"""chrony: the control node serves the cluster's time (no NTP servers given), the others follow it."""
from __future__ import annotations

from labtools import COMPUTE, CONTROL, INV, addr, host


def test_control_serves_the_management_network_and_the_others_follow_it():
    ctl = host(CONTROL).file("/etc/chrony/conf.d/sparkfleet.conf").content_string
    assert "local stratum 10" in ctl and f"allow {INV['vars']['sparkfleet_mgmt_cidr']}" in ctl
    for n in COMPUTE:
        conf = host(n).file("/etc/chrony/conf.d/sparkfleet.conf").content_string
        assert f"server {addr(CONTROL)} iburst prefer" in conf and "local stratum" not in conf


def test_chronyd_runs_without_clock_control_in_a_container():
    for n in [CONTROL, *COMPUTE]:
        h = host(n)
        assert h.service("chrony").is_enabled and h.service("chrony").is_running
        assert "-x" in h.file("/etc/systemd/system/chrony.service.d/50-sparkfleet-no-clock.conf").content_string
