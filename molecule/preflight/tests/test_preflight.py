"""Preflight (role scenario): each bad inventory fails before anything changes, naming the culprit; preflight alone
passes with --limit, and an inventory error outside the limit still stops the run."""
from __future__ import annotations

import copy
import json

import pytest

from labtools import INVENTORY, NODES, playbook, recap

LAST = NODES[-1]

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


MGMT = BASE["all"]["vars"]["sparkfleet_mgmt_cidr"]
IP1 = hosts_of(BASE, "control")[NODES[0]]["ansible_host"]

# (id, inventory, extra vars, expected text in the error)
CASES = [
    # Inventory-only mistakes (60+ of them) are tested without a lab in tests/unit/test_bad_inventories.py;
    # here: one of them against real nodes, and the checks that need the nodes' facts.
    ("misspelled-cluster-group", mutate(lambda inv: inv["all"]["children"].__setitem__(
        "clustre", inv["all"]["children"].pop("cluster"))), {}, "unknown group 'clustre' (did you mean 'cluster'?)"),
    ("unknown-os", mutate(lambda inv: None), {"preflight_supported_os": {"Ubuntu": ["24.04"]}},
     "operating system Debian 12"),
    ("unsupported-arch", mutate(lambda inv: None), {"preflight_architectures": ["ppc64le"]}, "is not supported (ansible_architecture"),
    ("missing-interface", set_hostvar(LAST, "sparkfleet_mgmt_interface", "eth7"), {},
     f"{LAST}: interface sparkfleet_mgmt_interface=eth7 does not exist"),
    ("missing-fabric-interface", set_var("sparkfleet_fabric_interfaces", ["enp1s0f0np0", "enp9s0f0np0"]), {},
     "interface sparkfleet_fabric_interfaces[1]=enp9s0f0np0 does not exist"),
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
    assert "PLAY [Object storage]" not in out
    assert all(v.get("changed", 0) == 0 for v in recap(res.stdout).values())


def test_preflight_alone_passes_with_limit():
    res = playbook("playbooks/preflight.yml", "--limit", NODES[1])
    assert res.returncode == 0, res.stdout[-2000:]
    assert list(recap(res.stdout)) == [NODES[1]]


def test_inventory_errors_outside_the_limit_still_stop_the_run(tmp_path):
    (tmp_path / "hosts.yml").write_text(json.dumps(set_hostvar(LAST, "ansible_host", IP1)()))
    res = playbook("playbooks/preflight.yml", "--limit", NODES[0], inventory=tmp_path)
    assert res.returncode != 0 and f"{LAST}: duplicate address" in res.stdout
