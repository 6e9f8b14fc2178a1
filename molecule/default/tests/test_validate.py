"""Validation report on the converged lab: fails naming host and check when broken (a node drained, people's drains
kept), passes once the layers repair it, and passes limited to one node."""
from __future__ import annotations

import json
import secrets

from test_inference import ray_check

from labtools import INV, NODES, PROJECT, host, playbook, recap, ssh

REPORT = PROJECT / "reports" / "validate"
CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
COMPUTE = [h for h in NODES if INV["hosts"][h]["group"] == "compute"]
VENV = "/opt/sparkfleet/inference"


def latest():
    return json.loads((REPORT / "latest.json").read_text())


def sinfo_nodes() -> dict:
    out = ssh(CONTROL, "sinfo -N -h -o '%N|%T|%E'").stdout
    return {n: (s, r) for n, s, r in (ln.split("|", 2) for ln in out.splitlines())}


def test_planted_faults_are_named_with_host_and_check_then_repaired_and_validation_passes():
    """One failing validation over four faults at once (each validation run costs a minute or more on the CI
    machine): a stopped firewall and a planted Ray version on one compute node, another munge key on the other, a
    1500-byte MTU on the control node's fabric link. Each is named with its host and check, the node with the foreign
    munge key is drained (a node somebody drained keeps their reason, failing or not), no output shows the key, a
    check run of the inference layer names the version and changes nothing; the layers' playbooks repair each node,
    the drained node is resumed, and validation passes again with the lab's missing hardware "not checked"."""
    b, c = COMPUTE
    munge = secrets.token_hex(32)
    meta = ssh(b, f"ls -d {VENV}/lib/python3*/site-packages/ray-*.dist-info").stdout.strip()
    ssh(b, f"systemctl stop sparkfleet-firewall && sed -i 's/^Version: .*/Version: 2.59.0/' {meta}/METADATA")
    ssh(c, f"printf %s {munge} > /etc/munge/munge.key && systemctl restart munge")
    ssh(CONTROL, "ip link set dev enp1s0f0np0 mtu 1500")
    ssh(CONTROL, f"scontrol update nodename={b} state=drain reason='disk swap'")
    try:
        res = playbook("playbooks/validate.yml", timeout=900)
        assert res.returncode != 0
        out = res.stdout
        assert f"{b}: service sparkfleet-firewall: state inactive" in out, out[-3000:]
        assert f"{b}: firewall inet sparkfleet: table not loaded" in out
        assert f"{b} has ray 2.59.0; the majority has 2.60.0 ({CONTROL}, {c})" in out
        assert f"{c}: munge_key /etc/munge/munge.key: differs from the control node's" in out
        assert munge not in out
        bad = {(h, ch["check"], ch["target"]) for h, cs in latest()["hosts"].items() for ch in cs if ch["status"] == "fail"}
        mtu_fail = {(h, t) for h, ch, t in bad if ch == "fabric_mtu"}
        # every other node fails to reach the control node with 9000-byte packets, and it fails to reach them
        for n in (b, c):
            assert any(h == n and t.startswith(f"{CONTROL}-fab") for h, t in mtu_fail), (n, mtu_fail)
        assert any(h == CONTROL for h, _ in mtu_fail)
        state, reason = sinfo_nodes()[c]
        # Drained with the first of its failed checks (its MTU to the control node fails too).
        assert state.startswith("drain") and reason.startswith("sparkfleet validate: "), (state, reason)
        assert sinfo_nodes()[b][1] == "disk swap", "validation replaced somebody's drain reason"
        slurm_node = next(ch for ch in latest()["hosts"][c] if ch["check"] == "slurm_node")
        assert slurm_node["status"] == "fail" and "sparkfleet validate" in slurm_node["detail"]
        # A check run sees the planted version and changes nothing.
        chk = playbook("playbooks/inference.yml", "--check", "--diff", "--limit", b, timeout=900)
        assert chk.returncode == 0, chk.stdout[-3000:]
        assert "ray: 2.59.0 installed, lock says 2.60.0" in chk.stdout
        assert "2.59.0" in ssh(b, f"grep ^Version: {meta}/METADATA").stdout
    finally:
        ssh(CONTROL, "ip link set dev enp1s0f0np0 mtu 9000")
        ssh(CONTROL, f"scontrol update nodename={b} state=resume", check=False)
        ssh(b, "systemctl start sparkfleet-firewall")
        # Whatever failed above, the layers' playbooks put the nodes back: later tests need them.
        munge_fix = playbook("playbooks/scheduler.yml", "--limit", c)
        ray_fix = playbook("playbooks/inference.yml", "--limit", b, timeout=900)
    assert munge_fix.returncode == 0 and recap(munge_fix.stdout)[c]["changed"] >= 1, munge_fix.stdout[-3000:]
    assert munge not in munge_fix.stdout
    assert ray_fix.returncode == 0 and recap(ray_fix.stdout)[b]["changed"] >= 1, ray_fix.stdout[-3000:]
    assert "2.60.0" in ssh(b, f"{VENV}/bin/python -c 'import ray; print(ray.__version__)'").stdout
    res, data = ray_check(wait=120)  # its Ray worker restarted on the rebuilt environment and rejoined
    assert data["ok"], res.stdout + res.stderr

    res = playbook("playbooks/validate.yml", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
    assert sinfo_nodes()[c] == ("idle", "none"), "validation resumes the node it drained once its checks pass"
    data = latest()
    assert data["failed"] == 0 and data["passed"] > 0
    checks = {(h, ch["check"], ch["target"]): ch for h, cs in data["hosts"].items() for ch in cs}
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


def test_conflicting_hosts_lines_are_disabled_not_deleted():
    for n in NODES:
        text = host(n).file("/etc/hosts").content_string
        assert "127.0.0.1\tlocalhost" in text.splitlines()
        assert "# BEGIN sparkfleet cluster" in text
        # Docker's own line for the fabric address of the node is kept, commented out.
        assert any(line.startswith("# ") and line.endswith("# disabled by sparkfleet: conflicts with the cluster block")
                   for line in text.splitlines()), text


def test_site_limited_to_one_compute_node_passes():
    """`site.yml --limit` to a compute node, gated: the control node is outside the run, so its munge key is read
    apart (not "no key on the control node"), and checks whose peer is outside the limit say so, not checked."""
    node = NODES[-1]
    res = playbook("site.yml", "--limit", node, env={"SPARKFLEET_GATE": "on"})
    assert res.returncode == 0, res.stdout[-3000:]
    report = latest()
    assert list(report["hosts"]) == [node]
    munge = next(c for c in report["hosts"][node] if c["check"] == "munge_key")
    assert munge["status"] == "pass" and munge["detail"] == "same key as the control node", munge
    peers = {c["target"]: (c["status"], c["detail"]) for c in report["hosts"][node] if c["check"] == "peer"}
    assert peers == {n: ("not_checked", "outside --limit") for n in NODES if n != node}, peers
