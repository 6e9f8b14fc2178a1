"""chrony: the control node serves the cluster's time (no NTP servers given), the others follow it."""
from __future__ import annotations

from labtools import COMPUTE, CONTROL, INV, addr, host, module_call, ssh


def test_control_serves_the_management_network_and_the_others_follow_it():
    ctl = host(CONTROL).file("/etc/chrony/conf.d/sparkfleet.conf").content_string
    assert "local stratum 10" in ctl and f"allow {INV['vars']['sparkfleet_mgmt_cidr']}" in ctl
    for n in COMPUTE:
        conf = host(n).file("/etc/chrony/conf.d/sparkfleet.conf").content_string
        assert f"server {addr(CONTROL)} iburst minpoll 4 maxpoll 6 prefer" in conf and "local stratum" not in conf


def test_chronyd_runs_without_clock_control_in_a_container():
    for n in [CONTROL, *COMPUTE]:
        h = host(n)
        assert h.service("chrony").is_enabled and h.service("chrony").is_running
        assert "-x" in h.file("/etc/systemd/system/chrony.service.d/50-sparkfleet-no-clock.conf").content_string


def time_sync_check(node: str, wait_s: int) -> dict:
    """validate's chrony check (node_checks, time sync only) on one node, as the validate role runs it."""
    res = module_call(node, "sparkfleet.cluster.node_checks", {"time_sync": True, "time_sync_wait_s": wait_s}, timeout=wait_s + 120)
    return next(c for c in res["checks"] if c["check"] == "time_sync")


def test_validate_waits_for_a_node_just_out_of_sync_and_names_the_sources_when_it_stays_out():
    """Real chronyd: just restarted, a node is out of sync for its first polls; validate waits for them (a pass). Kept
    from its source, it stays out: a failure that names its sources. Each follows the local server at most 64 s apart."""
    node = COMPUTE[0]
    ssh(node, "systemctl restart chrony")
    back = time_sync_check(node, 60)
    assert back["status"] == "pass" and "in sync after" in back["detail"], back
    # Cut off from its source before chronyd starts (a blackhole route to the control node only; SSH comes from the
    # lab host): `restart && chronyc offline` raced with the first iburst answer, which can land within milliseconds.
    ssh(node, f"ip route add blackhole {addr(CONTROL)}/32 && systemctl restart chrony")
    try:
        out = time_sync_check(node, 4)
    finally:
        ssh(node, f"ip route del blackhole {addr(CONTROL)}/32; systemctl restart chrony")
    assert out["status"] == "fail", out
    assert "not synchronised (leap status Not synchronised, after 4 s); sources: ^? " + addr(CONTROL) in out["detail"], out
