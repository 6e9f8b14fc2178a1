"""Fabric role on the netplan path (DGX OS): our 40-cx7.yaml replaces NVIDIA's, netplan generates networkd's files,
both CX-7 halves get their address and jumbo MTU, full-size frames cross the fabric, a change that cuts a node off
is rolled back (the default scenario's rollback test, run here on netplan)."""
from __future__ import annotations

import json

import yaml
from test_fabric import test_config_that_cuts_a_node_off_is_rolled_back  # noqa: F401  (collected here too)

from labtools import INV, NODES, addr, host, ssh

IFACES = INV["vars"]["sparkfleet_fabric_interfaces"]


def test_netplan_file_is_ours_with_every_half_and_private():
    for n in NODES:
        f = host(n).file("/etc/netplan/40-cx7.yaml")
        assert f.mode == 0o600 and f.user == "root"
        eth = yaml.safe_load(f.content_string)["network"]["ethernets"]
        assert set(eth) == set(IFACES)
        for iface, ip in zip(IFACES, INV["hosts"][n]["sparkfleet_fabric_ips"], strict=True):
            assert eth[iface]["mtu"] == 9000 and eth[iface]["addresses"] == [f"{ip}/24"]
            assert "link-local" not in eth[iface]  # NVIDIA's link-local setup replaced
        # netplan, not our networkd files, wrote the live config.
        assert ssh(n, "ls /etc/systemd/network/ | grep -c sparkfleet", check=False).stdout.strip() in ("", "0")
        generated = ssh(n, "cat /run/systemd/network/10-netplan-*.network").stdout
        assert "MTUBytes=9000" in generated


def test_both_halves_up_with_address_and_mtu():
    for n in NODES:
        links = {i["ifname"]: i for i in json.loads(ssh(n, "ip -j addr show").stdout)}
        for iface, ip in zip(IFACES, INV["hosts"][n]["sparkfleet_fabric_ips"], strict=True):
            assert links[iface]["mtu"] == 9000
            assert ip in {a["local"] for a in links[iface]["addr_info"] if a["family"] == "inet"}


def test_full_size_frames_cross_each_fabric_subnet():
    a, b = NODES[0], NODES[1]
    for ip in INV["hosts"][b]["sparkfleet_fabric_ips"]:
        res = ssh(a, f"ping -c 2 -W 2 -M do -s 8972 {ip}", check=False)
        assert res.returncode == 0, res.stdout + res.stderr
    assert addr(a) != addr(b)
