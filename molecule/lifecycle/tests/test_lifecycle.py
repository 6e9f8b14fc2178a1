"""Day 2 on the converged lab, for real: a spare node added through the gate; the gate run again after its fabric link
lost its jumbo frames (it fails, the node is drained); the node removed while dead (the others forget it and its keys
are revoked without it), then removed again once it is back (its cluster membership stopped); and a rolling change
whose canary fails, then completes. One full converge of the spare node in all.

They run in this order on the lifecycle scenario's own lab (they change the cluster's membership); the last one leaves
the 3-node cluster as converged."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from labtools import INV, NODES, PROJECT, SPARES, playbook, recap, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
COMPUTE = [h for h in NODES if INV["hosts"][h]["group"] == "compute"]
REPORTS = PROJECT / "reports" / "lifecycle"
# What the other nodes may change when a node joins or leaves: names, host keys, firewall sets, Slurm's node list,
# Prometheus' scrape config. Everything else under these trees must stay byte for byte.
SHARED = {"/etc/hosts", "/etc/ssh/ssh_known_hosts", "/etc/sparkfleet/firewall.nft", "/etc/sparkfleet/firewall.nft.applied",
          "/etc/slurm/nodes.conf",
          "/etc/sparkfleet/prometheus/prometheus.yml"}
# What a removal rotates (remove_node revokes the keys the removed node held): the munge key, the store's identities
# and the nodes' copy of its read-only key, Ray's token.
REVOKED = {"/etc/munge/munge.key", "/etc/sparkfleet-s3/s3.json", "/etc/sparkfleet/rclone.conf", "/etc/sparkfleet/ray-auth-token"}
# The nodes' own target files on the monitoring node (each node writes its own).
TARGETS = "/etc/sparkfleet/prometheus/targets/"
TREES = "/etc /opt/sparkfleet /usr/local/lib/sparkfleet /usr/local/bin"

pytestmark = pytest.mark.skipif(not SPARES, reason="the lab has no spare node (lab.py up --spare 1)")
NEW = SPARES[0] if SPARES else ""


def join_inventory(tmp: Path) -> Path:
    """The lab's inventory plus the spare node in the compute group: what a user writes before add_node."""
    extra = tmp / "join.yml"
    extra.write_text(json.dumps({"all": {"children": {"cluster": {"children": {"compute": {"hosts": {NEW: {}}}}}}}}))
    return extra


def run(*args, extra: Path | None = None, timeout=1500):
    inv = ["-i", str(extra)] if extra else []
    return playbook(*inv, *args, timeout=timeout)


def digests(h):
    out = ssh(h, f"find {TREES} -xdev -type f -print0 2>/dev/null | xargs -0 sha256sum", timeout=120).stdout
    return dict(reversed(line.split("  ", 1)) for line in out.splitlines())


def changed_files(before, after):
    return {p for p in set(before) | set(after) if before.get(p) != after.get(p)}


def host_veth(node, iface):
    """The lab host's end of a node's fabric link (the container's iflink is its ifindex on the host)."""
    idx = ssh(node, f"cat /sys/class/net/{iface}/iflink").stdout.strip()
    line = next(ln for ln in subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout.splitlines()
                if ln.startswith(f"{idx}:"))
    return line.split(":")[1].strip().split("@")[0]


def sinfo(node):
    return ssh(CONTROL, f"sinfo -h -N -n {node} -o '%T|%E'", check=False).stdout.strip()


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lifecycle")
    return {"extra": join_inventory(tmp), "before": {h: digests(h) for h in NODES}}


def test_add_node_passes_the_gate_runs_a_job_and_changes_only_the_shared_files(state):
    res = run("playbooks/add_node.yml", "-e", f"node={NEW}", extra=state["extra"])
    assert res.returncode == 0, res.stdout[-4000:]
    assert f"{NEW} passed the gate" in res.stdout
    verdict = json.loads((REPORTS / f"add_node-{NEW}.json").read_text())
    assert verdict["passed"] and verdict["failures"] == [] and verdict["job"]["status"] == "pass", verdict
    assert sinfo(NEW).split("|")[0] == "idle", sinfo(NEW)
    job = ssh(CONTROL, f"runuser -u spark -- srun --immediate=30 -N{len(COMPUTE) + 1} -w {','.join(COMPUTE + [NEW])} hostname -s",
              timeout=90).stdout.split()
    assert sorted(job) == sorted(COMPUTE + [NEW])
    for h in NODES:
        changed = changed_files(state["before"][h], digests(h))
        assert {p for p in changed if not p.startswith(TARGETS)} <= SHARED, (h, sorted(changed - SHARED))
        assert "/etc/hosts" in changed and "/etc/slurm/nodes.conf" in changed, (h, changed)
        assert NEW in ssh(h, "cat /etc/hosts /etc/slurm/nodes.conf").stdout
    # Prometheus scrapes it.
    assert f'host: "{NEW}"' in ssh(CONTROL, "cat /etc/sparkfleet/prometheus/prometheus.yml").stdout


def old_keys_work(old_key: Path, cred: str) -> dict:
    """{node: (SSH as the cluster user with the key works, the munge credential decodes)} for every remaining node.
    SSH goes from this machine (an admin address the firewall lets in), so a refusal is the key's, not the firewall's."""
    out = {}
    for h in NODES:
        login = subprocess.run(["ssh", "-i", str(old_key), "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
                                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10",
                                f"spark@{INV['hosts'][h]['ansible_host']}", "true"], capture_output=True, text=True, timeout=60)
        decode = ssh(h, f"printf %s '{cred}' | unmunge >/dev/null", check=False)
        out[h] = (login.returncode == 0, decode.returncode == 0)
    return out


def test_a_member_whose_link_lost_jumbo_frames_fails_the_gate_and_is_drained(state):
    """The node's link now passes only 1500-byte frames (a bad cable or switch port after a repair), and add_node runs
    again. Its fabric configuration is already there (the layer changes nothing, so its own full-MTU confirmation does
    not run): the gate must catch it. (On a fresh node the fabric layer's confirmation itself fails and rolls back, and
    add_node stops before the other nodes are told.)"""
    iface = INV["vars"]["sparkfleet_fabric_interfaces"][0]
    veth = host_veth(NEW, iface)
    subprocess.run(["ip", "link", "set", "dev", veth, "mtu", "1500"], check=True)
    try:
        res = run("playbooks/add_node.yml", "-e", f"node={NEW}", extra=state["extra"])
    finally:
        subprocess.run(["ip", "link", "set", "dev", veth, "mtu", "9000"], check=True)
    assert res.returncode != 0 and f"{NEW} did not pass the gate" in res.stdout, res.stdout[-3000:]
    verdict = json.loads((REPORTS / f"add_node-{NEW}.json").read_text())
    assert not verdict["passed"]
    # The report names the defect: the full-MTU pings to the node's first fabric name fail, from it and towards it.
    mtu = [f for f in verdict["failures"] if "fabric_mtu" in f]
    assert mtu and any(f.startswith(f"{NEW}:") for f in mtu) and any(not f.startswith(f"{NEW}:") for f in mtu), verdict
    assert "PASSED" not in (REPORTS / f"add_node-{NEW}.md").read_text()
    # It is out of the scheduler: drained with the gate's reason; jobs without its reservation never land there.
    st = sinfo(NEW)
    assert st.split("|")[0].startswith("drain") and "sparkfleet lifecycle: add_node gate:" in st and "fabric_mtu" in st, st
    job = ssh(CONTROL, f"timeout 30 srun --immediate=10 -w {NEW} -N1 hostname", check=False)
    assert job.returncode != 0, job.stdout


def test_remove_node_while_dead_forgets_and_revokes_then_once_back_stops_its_membership(state, tmp_path):
    # What the node holds as a cluster member: the cluster user's key pair, the munge key, Ray's token. They work now.
    old_key = tmp_path / "id_ed25519"
    old_key.write_text(ssh(NEW, "cat /home/spark/.ssh/id_ed25519").stdout)
    old_key.chmod(0o600)
    assert set(old_keys_work(old_key, ssh(NEW, "munge -n").stdout.strip()).values()) == {(True, True)}
    old_token = ssh(NEW, "cat /etc/sparkfleet/ray-auth-token").stdout.strip()
    # Dead to Ansible (a stand-in for ssh that exits 255), out of the inventory's cluster groups.
    dead = tmp_path / "dead"
    dead.mkdir()
    (dead / "ssh").write_text("#!/bin/sh\nexit 255\n")
    (dead / "ssh").chmod(0o755)
    (dead / "dead.yml").write_text(json.dumps({"all": {"children": {"spare": {"hosts": {NEW: {"ansible_ssh_executable": str(dead / "ssh")}}}}}}))
    res = run("playbooks/remove_node.yml", "-e", f"node={NEW}", extra=dead / "dead.yml")
    assert res.returncode == 0, res.stdout[-4000:]
    report = json.loads((REPORTS / f"remove_node-{NEW}.json").read_text())
    # Unreachable, it is left as it is; its keys are revoked on the others all the same.
    assert report["node_reached"] is False and all(v.startswith("rotated") for v in report["revoked"].values()), report
    # Refused by every remaining node: the old key (still on the removed node) and a credential it makes now.
    assert set(old_keys_work(old_key, ssh(NEW, "munge -n").stdout.strip()).values()) == {(False, False)}
    # Ray's job API, asked from a remaining node: the old token is refused, the node's current one accepted.
    jobs = f"http://{INV['hosts'][CONTROL]['sparkfleet_fabric_ips'][0]}:8265/api/jobs/"
    ask = "curl -s -o /dev/null -w '%{{http_code}}' --max-time 20 -H \"Authorization: Bearer {}\" " + jobs
    assert ssh(COMPUTE[0], ask.format(old_token)).stdout in ("401", "403")
    assert ssh(COMPUTE[0], ask.format("$(cat /etc/sparkfleet/ray-auth-token)")).stdout == "200"
    addrs = [INV["hosts"][NEW]["ansible_host"], *INV["hosts"][NEW]["sparkfleet_fabric_ips"]]
    for h in NODES:
        text = ssh(h, "cat /etc/hosts /etc/ssh/ssh_known_hosts /etc/slurm/nodes.conf; nft list table inet sparkfleet").stdout
        assert NEW not in text and not any(a in text for a in addrs), h
        # Back to the converged state but for the rotated keys: only the shared files differed, and not even those.
        changed = changed_files(state["before"][h], digests(h))
        assert "/etc/munge/munge.key" in changed and changed <= REVOKED, (h, sorted(changed - REVOKED))
    assert NEW not in ssh(CONTROL, "sinfo -h -N -o %N").stdout
    job = ssh(CONTROL, f"runuser -u spark -- srun --immediate=30 -N{len(COMPUTE)} hostname -s", timeout=90).stdout.split()
    assert sorted(job) == sorted(COMPUTE)
    # Back online: removed again, it is reached and its membership stops (Ray's worker exits non-zero on SIGTERM:
    # "failed" is stopped too); the others were already told.
    res = run("playbooks/remove_node.yml", "-e", f"node={NEW}")
    assert res.returncode == 0 and all(r["failed"] == 0 for r in recap(res.stdout).values()), res.stdout[-4000:]
    assert json.loads((REPORTS / f"remove_node-{NEW}.json").read_text())["node_reached"] is True
    states = ssh(NEW, "systemctl is-active slurmd sparkfleet-ray", check=False).stdout.split()
    assert len(states) == 2 and "active" not in states, states
    # A node still in the cluster groups is refused before anything changes.
    res = run("playbooks/remove_node.yml", "-e", f"node={NEW}", extra=state["extra"])
    assert res.returncode != 0 and "is still in the cluster groups" in res.stdout


def test_rolling_change_stops_at_a_failing_canary_then_completes():
    canary = COMPUTE[0]
    change = ["-e", "sparkfleet_change=lab-makestep", "-e", f"sparkfleet_canary={canary}",
              "-e", '{"sparkfleet_rolling_roles": ["chrony"]}', "-e", "chrony_makestep='0.5 3'"]
    folder = REPORTS / "rolling-lab-makestep"
    for f in folder.glob("*.json"):
        f.unlink()
    # Masked and stopped: the chrony role cannot start it.
    ssh(canary, "systemctl mask --now chrony")
    try:
        res = run("playbooks/rolling_upgrade.yml", *change)
    finally:
        ssh(canary, "systemctl unmask chrony && systemctl start chrony")
    assert res.returncode != 0, res.stdout[-3000:]
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["done"] == [] and list(summary["failed"]) == [canary], summary
    assert "chrony" in summary["failed"][canary]
    others = [h for h in NODES if h != canary]
    for h in others:
        # Untouched: the old setting, never drained.
        assert "makestep 1.0 3" in ssh(h, "cat /etc/chrony/conf.d/*.conf /etc/chrony/chrony.conf 2>/dev/null").stdout, h
        assert not (folder / f"{h}.json").exists()
        if h in COMPUTE:
            assert not sinfo(h).startswith("drain"), sinfo(h)
    assert sinfo(canary).startswith("drain") and "rolling lab-makestep" in sinfo(canary)

    res = run("playbooks/rolling_upgrade.yml", *change)
    assert res.returncode == 0, res.stdout[-4000:]
    summary = json.loads((folder / "summary.json").read_text())
    assert sorted(summary["done"]) == sorted(NODES) and summary["failed"] == {}, summary
    for h in NODES:
        assert "makestep 0.5 3" in ssh(h, "cat /etc/chrony/conf.d/*.conf /etc/chrony/chrony.conf 2>/dev/null").stdout, h
        if h in COMPUTE:
            assert sinfo(h).split("|")[0] in ("idle", "mixed", "allocated"), sinfo(h)
    # Re-running the finished change touches nothing. (The scenario's lab goes after this test: no change back.)
    res = run("playbooks/rolling_upgrade.yml", *change)
    assert res.returncode == 0 and all(r["changed"] == 0 for r in recap(res.stdout).values() if r), res.stdout[-2000:]
