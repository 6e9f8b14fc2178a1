"""Validation report on the converged lab: passes, and fails naming host and check when broken."""
from __future__ import annotations

import json

from labtools import NODES, PROJECT, host, playbook, ssh

REPORT = PROJECT / "reports" / "validate"


def latest():
    return json.loads((REPORT / "latest.json").read_text())


def test_validation_passes_on_converged_lab():
    res = playbook("playbooks/validate.yml")
    assert res.returncode == 0, res.stdout[-3000:]
    data = latest()
    assert data["failed"] == 0 and data["passed"] > 0
    checks = {(h, c["check"], c["target"]): c for h, cs in data["hosts"].items() for c in cs}
    # Hardware the lab lacks is "not checked" with a reason, never "pass".
    for n in NODES:
        assert checks[(n, "gpu", "nvidia-smi")]["status"] == "not_checked"
        assert "not present" in checks[(n, "gpu", "nvidia-smi")]["detail"]
        assert checks[(n, "connectx", "rdma")]["status"] == "not_checked"
        assert checks[(n, "nccl_all_reduce", "gb10_switch")]["status"] == "not_checked"
        assert checks[(n, "firewall", "inet sparkfleet")]["status"] == "pass"
        for peer in NODES:
            if peer != n:
                assert checks[(n, "ssh_trust", peer)]["status"] == "pass"
    md = (REPORT / "latest.md").read_text()
    assert "| spark-01 | fabric_mtu |" in md and "not checked" in md
    assert "<skipped" in (REPORT / "latest.xml").read_text()


def test_validation_fails_naming_host_and_check():
    victim = NODES[1]
    ssh(victim, "systemctl stop sparkfleet-firewall")
    # An MTU mismatch planted on one node must show up for the pairs through it.
    mtu_victim = NODES[2]
    ssh(mtu_victim, "ip link set dev enp1s0f0np0 mtu 1500")
    try:
        res = playbook("playbooks/validate.yml")
        assert res.returncode != 0
        assert f"{victim}: service sparkfleet-firewall: state inactive" in res.stdout
        assert f"{victim}: firewall inet sparkfleet: table not loaded" in res.stdout
        data = latest()
        bad = {(h, c["check"], c["target"]) for h, cs in data["hosts"].items() for c in cs if c["status"] == "fail"}
        mtu_fail = {(h, t) for h, c, t in bad if c == "fabric_mtu"}
        # every other node fails to reach the victim with 9000-byte packets, and the victim fails to reach them
        for n in NODES:
            if n != mtu_victim:
                assert any(h == n and t.startswith(f"{mtu_victim}-fab") for h, t in mtu_fail), (n, mtu_fail)
        assert any(h == mtu_victim for h, _ in mtu_fail)
    finally:
        ssh(mtu_victim, "ip link set dev enp1s0f0np0 mtu 9000")
        ssh(victim, "systemctl start sparkfleet-firewall")
    res = playbook("playbooks/validate.yml")
    assert res.returncode == 0, res.stdout[-3000:]


def test_conflicting_hosts_lines_are_disabled_not_deleted():
    for n in NODES:
        text = host(n).file("/etc/hosts").content_string
        assert "127.0.0.1\tlocalhost" in text.splitlines()
        assert "# BEGIN sparkfleet cluster" in text
        # Docker's own line for the fabric address of the node is kept, commented out.
        assert any(line.startswith("# ") and line.endswith("# disabled by sparkfleet: conflicts with the cluster block")
                   for line in text.splitlines()), text


def test_validation_limited_to_one_compute_node_passes():
    """`--limit` to a compute node leaves the control node outside the play: the munge key is still compared with the
    control node's (read apart), and the run passes instead of failing 'no key on the control node'."""
    node = NODES[-1]
    res = playbook("playbooks/validate.yml", "--limit", node)
    assert res.returncode == 0, res.stdout[-3000:]
    munge = next(c for c in latest()["hosts"][node] if c["check"] == "munge_key")
    assert munge["status"] == "pass" and munge["detail"] == "same key as the control node", munge
