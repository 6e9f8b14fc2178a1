"""Fabric layer on lab nodes: addresses and MTU for real through systemd-networkd, NCCL files,
safe apply rolling back a config that cuts a node off."""
from __future__ import annotations

import copy
import json

from labtools import INV, INVENTORY, NODES, host, playbook, ssh

IFACES = INV["vars"]["sparkfleet_fabric_interfaces"]  # both CX-7 halves, like DGX Spark
IFACE = IFACES[0]
BASE = json.loads((INVENTORY / "hosts.yml").read_text().split("\n", 1)[1])


def link(n, iface=IFACE):
    return next(i for i in json.loads(ssh(n, "ip -j addr show").stdout) if i["ifname"] == iface)


def test_fabric_interfaces_have_addresses_and_jumbo_mtu():
    assert len(IFACES) == 2
    for n in NODES:
        for iface, ip in zip(IFACES, INV["hosts"][n]["sparkfleet_fabric_ips"], strict=True):
            li = link(n, iface)
            assert li["mtu"] == 9000
            assert f"{ip}/24" in {f"{a['local']}/{a['prefixlen']}" for a in li["addr_info"]}
            conf = host(n).file(f"/etc/systemd/network/40-sparkfleet-{iface}.network").content_string
            assert "MTUBytes=9000" in conf and f"Address={ip}/24" in conf
            assert "configured" in ssh(n, f"networkctl list {iface} --no-pager --no-legend").stdout


def test_nccl_environment_names_the_fabric_and_its_rdma_devices():
    """Both halves in NCCL_SOCKET_IFNAME; NCCL_IB_HCA names the RDMA devices the node shows (a Spark persona's
    rocep1s0f*/roceP2p1s0f*), and a node without any gets NCCL_IB_DISABLE=1 instead."""
    both = ",".join(IFACES)
    for n in NODES:
        nccl = host(n).file("/etc/nccl.conf").content_string
        assert f"NCCL_SOCKET_IFNAME={both}" in nccl, (n, nccl)
        rdma = ssh(n, "ls /sys/class/infiniband 2>/dev/null || true").stdout.split()
        if rdma:
            hca = next(line for line in nccl.splitlines() if line.startswith("NCCL_IB_HCA="))
            assert set(hca.split("=", 1)[1].split(",")) <= set(rdma) and "NCCL_IB_DISABLE" not in nccl, (n, nccl, rdma)
        else:
            assert "NCCL_IB_DISABLE=1" in nccl and "NCCL_IB_HCA" not in nccl, (n, nccl)
        prof = ssh(n, "bash -lc 'env' | grep -E '^(NCCL|UCX|OMPI)_' | sort").stdout
        assert f"UCX_NET_DEVICES={both}" in prof and f"OMPI_MCA_btl_tcp_if_include={both}" in prof


def test_config_that_cuts_a_node_off_is_rolled_back(tmp_path):
    victim = NODES[-1]
    gateway = INV["vars"]["sparkfleet_admin_cidrs"][0].split("/")[0]  # the controller's address on the management net
    before = link(victim)
    inv = copy.deepcopy(BASE)
    hv = inv["all"]["children"]["cluster"]["children"]["compute"]["hosts"][victim]
    # A fabric address equal to the controller's: the node answers itself and is cut off. Preflight refuses
    # this inventory (address outside its fabric subnet), so the role runs alone here: it stands for a
    # conflict no inventory check can see (an address taken by a machine outside the inventory).
    hv.update({"sparkfleet_fabric_ips": [gateway, INV["hosts"][victim]["sparkfleet_fabric_ips"][1]],
               "fabric_cidrs": [INV["vars"]["sparkfleet_mgmt_cidr"], INV["vars"]["sparkfleet_fabric_cidrs"][1]],
               "fabric_rollback_after_s": 20})
    (tmp_path / "hosts.yml").write_text(json.dumps(inv))
    (tmp_path / "fabric_only.yml").write_text(
        "- hosts: cluster\n  gather_facts: false\n  become: true\n  roles: [sparkfleet.cluster.fabric]\n")
    res = playbook(str(tmp_path / "fabric_only.yml"), "--limit", victim, inventory=tmp_path, timeout=300)
    assert res.returncode != 0
    assert f"fabric change rolled back on {victim}: the node stopped answering on the management network" in res.stdout, \
        res.stdout[-3000:]
    # The node is reachable again, with exactly its old address and MTU.
    after = link(victim)
    assert after["mtu"] == before["mtu"]
    assert {a["local"] for a in after["addr_info"] if a["family"] == "inet"} == \
        {a["local"] for a in before["addr_info"] if a["family"] == "inet"}
    assert "rolled back: not confirmed in time" in ssh(victim, "cat /var/lib/sparkfleet/fabric/rollback.log").stdout
    # Back to the real inventory: the staged files are the good ones again, the live network needs nothing.
    ok = playbook("playbooks/fabric.yml", "--limit", victim)
    assert ok.returncode == 0, ok.stdout[-2000:]
    apply_step = ok.stdout.split("Apply the fabric config")[1].split("TASK [")[0]
    assert f"ok: [{victim}]" in apply_step, apply_step
    again = playbook("playbooks/fabric.yml", "--limit", victim)
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1], again.stdout[-2000:]


def test_fabric_check_bandwidth_matrix():
    res = playbook("playbooks/fabric_check.yml")
    assert res.returncode == 0, res.stdout[-3000:]
    report = json.loads((INVENTORY.parent.parent / "reports" / "validate" / "latest.json").read_text())
    pairs = {(h, c["target"].split()[0]): c for h, cs in report["hosts"].items() for c in cs if c["check"] == "bandwidth"}
    assert set(pairs) == {(a, f"{b}-fab") for a in NODES for b in NODES if a != b}
    for c in pairs.values():
        assert c["status"] == "pass" and c["gbps"] > 0.1 and "Gb/s" in c["detail"]
