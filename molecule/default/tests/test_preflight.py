"""Preflight: each bad inventory fails before anything changes, naming the culprit."""
from __future__ import annotations

import copy
import json

import pytest

from labtools import INVENTORY, NODES, playbook, recap

BASE = json.loads((INVENTORY / "hosts.yml").read_text().split("\n", 1)[1])


def hosts_of(inv, group):
    return inv["all"]["children"]["cluster"]["children"][group]["hosts"]


def mutate(fn):
    def apply():
        inv = copy.deepcopy(BASE)
        fn(inv)
        return inv
    return apply


def set_var(name, value):
    return mutate(lambda inv: inv["all"]["vars"].__setitem__(name, value))


def set_hostvar(h, name, value):
    def fn(inv):
        for g in ("control", "compute"):
            if h in hosts_of(inv, g):
                hosts_of(inv, g)[h][name] = value
    return mutate(fn)


def move(h, src, dst):
    return mutate(lambda inv: hosts_of(inv, dst).__setitem__(h, hosts_of(inv, src).pop(h)))


def add_group(inv):
    inv["all"]["children"]["gpus"] = {"hosts": {"spark-02": {}}}


def empty_compute(inv):
    comp = hosts_of(inv, "compute")
    comp.clear()


def bad_name(inv):
    hosts_of(inv, "compute")["Spark_9"] = {"ansible_host": "10.79.0.99", "sparkfleet_node_index": 9}


MGMT = BASE["all"]["vars"]["sparkfleet_mgmt_cidr"]
IP1 = hosts_of(BASE, "control")["spark-01"]["ansible_host"]

# (id, inventory, extra vars, expected text in the error)
CASES = [
    ("duplicate-ip", set_hostvar("spark-02", "ansible_host", IP1), {}, f"spark-02: duplicate address {IP1}"),
    ("ip-outside-cidr", set_hostvar("spark-02", "ansible_host", "192.0.2.5"), {},
     f"spark-02: ansible_host=192.0.2.5 is outside sparkfleet_mgmt_cidr={MGMT}"),
    ("bad-cidr", set_var("sparkfleet_mgmt_cidr", "10.79.0.0/33"), {}, "sparkfleet_mgmt_cidr='10.79.0.0/33' is not a valid CIDR"),
    ("cidr-host-bits", set_var("sparkfleet_mgmt_cidr", "10.79.0.5/24"), {}, "sparkfleet_mgmt_cidr=10.79.0.5/24 has host bits set"),
    ("no-control", move("spark-01", "control", "compute"), {}, "group 'control' must hold exactly one host, has 0"),
    ("two-controls", move("spark-02", "compute", "control"), {}, "group 'control' must hold exactly one host, has 2"),
    ("empty-compute", mutate(empty_compute), {}, "group 'compute' is empty"),
    ("unknown-group", mutate(add_group), {}, "unknown group 'gpus'"),
    ("fabric-overlaps-mgmt", set_var("sparkfleet_fabric_cidrs", ["10.79.0.0/16"]), {}, "overlaps sparkfleet_fabric_cidrs[0]"),
    ("fabric-ip-outside", set_hostvar("spark-02", "sparkfleet_fabric_ips", ["10.99.0.5"]), {},
     "spark-02: sparkfleet_fabric_ips[0]=10.99.0.5 is outside sparkfleet_fabric_cidrs[0]"),
    ("duplicate-index", set_hostvar("spark-03", "sparkfleet_node_index", 2), {}, "spark-03: sparkfleet_node_index=2 is also used by spark-02"),
    ("bad-nccl-range", set_var("sparkfleet_nccl_port_range", [51000, 50000]), {}, "sparkfleet_nccl_port_range=[51000, 50000]"),
    ("bad-hostname", mutate(bad_name), {}, "'Spark_9' is not a valid host name"),
    ("bad-user", set_var("sparkfleet_cluster_user", "Root User"), {}, "sparkfleet_cluster_user='Root User' is not a valid user name"),
    ("unknown-os", mutate(lambda inv: None), {"preflight_supported_os": {"Ubuntu": ["24.04"]}},
     "operating system Debian 12"),
    ("unsupported-arch", mutate(lambda inv: None), {"preflight_architectures": ["ppc64le"]}, "is not supported (ansible_architecture"),
    ("missing-interface", set_hostvar("spark-03", "sparkfleet_mgmt_interface", "eth7"), {},
     "spark-03: interface sparkfleet_mgmt_interface=eth7 does not exist"),
    ("missing-fabric-interface", set_var("sparkfleet_fabric_interfaces", ["enp1s0f0np0", "enP2p1s0f0np0"]), {},
     "interface sparkfleet_fabric_interfaces[1]=enP2p1s0f0np0 does not exist"),
    ("too-little-memory", mutate(lambda inv: None), {"preflight_min_memory_mb": 10 ** 8}, "preflight_min_memory_mb=100000000"),
    ("no-root", set_var("ansible_become", False), {}, "privilege escalation does not give root"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_inventory_fails_before_any_change(case, tmp_path):
    _, make_inv, extra, expected = case
    inv_dir = tmp_path / "inv"
    inv_dir.mkdir()
    (inv_dir / "hosts.yml").write_text(json.dumps(make_inv()))
    args = ["site.yml"] + (["-e", json.dumps(extra)] if extra else [])
    res = playbook(*args, inventory=inv_dir, timeout=180)
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-2000:]
    assert expected in out, out[-3000:]
    assert "PLAY [Base layer]" not in out, "a later layer started"
    assert all(v.get("changed", 0) == 0 for v in recap(res.stdout).values())


def test_preflight_alone_passes_with_limit():
    res = playbook("playbooks/preflight.yml", "--limit", NODES[1])
    assert res.returncode == 0, res.stdout[-2000:]
    assert list(recap(res.stdout)) == [NODES[1]]


def test_inventory_errors_outside_the_limit_still_stop_the_run(tmp_path):
    (tmp_path / "hosts.yml").write_text(json.dumps(set_hostvar("spark-03", "ansible_host", IP1)()))
    res = playbook("playbooks/preflight.yml", "--limit", "spark-02", inventory=tmp_path)
    assert res.returncode != 0 and "spark-03: duplicate address" in res.stdout
