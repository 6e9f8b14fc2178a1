"""Bad inventories: each fails in preflight on the controller, before any connection, naming the culprit.

The base is inventory/example (the seed's 8 Sparks); every case changes one thing. ansible-playbook
runs for real with a stand-in for ssh that records any call and exits 255: a case passes only if
the run fails, the expected text (host, variable, value, what is expected) is in the output, and
ssh was never started (so nothing on any node could have changed).
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

EXAMPLE_VARS = yaml.safe_load((ROOT / "inventory/example/group_vars/all.yml").read_text())
EXAMPLE_HOSTS = yaml.safe_load((ROOT / "inventory/example/hosts.yml").read_text())


def base():
    inv = copy.deepcopy(EXAMPLE_HOSTS)
    inv["all"]["vars"] = copy.deepcopy(EXAMPLE_VARS)
    return inv


def groups(inv):
    return inv["all"]["children"]["cluster"]["children"]


def hosts_of(inv, g):
    return groups(inv)[g]["hosts"]


def var(name, value):
    def fn(inv):
        inv["all"]["vars"][name] = value
    return fn


def hostvar(h, name, value):
    def fn(inv):
        for g in ("control", "compute"):
            if h in hosts_of(inv, g):
                hosts_of(inv, g)[h][name] = value
    return fn


def both(*fns):
    def fn(inv):
        for f in fns:
            f(inv)
    return fn


def move(h, src, dst):
    return lambda inv: hosts_of(inv, dst).__setitem__(h, hosts_of(inv, src).pop(h))


def rename_cluster(new):
    def fn(inv):
        inv["all"]["children"][new] = inv["all"]["children"].pop("cluster")
    return fn


def flatten_cluster(inv):
    """control and compute directly under all: the cluster group is missing."""
    ch = inv["all"]["children"].pop("cluster")["children"]
    inv["all"]["children"].update(ch)


def empty_cluster(inv):
    inv["all"]["children"]["cluster"] = {"hosts": {}}
    inv["all"]["children"]["spares"] = {"hosts": {"spark-09": {"sparkfleet_node_index": 9}}}


def in_both(inv):
    hosts_of(inv, "control")["spark-02"] = {"sparkfleet_node_index": 2}


def unknown_group(inv):
    inv["all"]["children"]["gpus"] = {"hosts": {"spark-02": {}}}


def bad_name(inv):
    hosts_of(inv, "compute")["Spark_9"] = {"sparkfleet_node_index": 9}


S = "spark-01, spark-02, spark-03, spark-04, spark-05, spark-06, spark-07, spark-08"  # group vars name every host

# (id, class, change, expected text)
CASES = [
    # structure
    ("cluster-missing", "structure", flatten_cluster, "inventory: group 'cluster' is missing or empty"),
    ("cluster-misspelled", "structure", rename_cluster("clustr"), "unknown group 'clustr' (did you mean 'cluster'?)"),
    ("cluster-empty", "structure", empty_cluster, "group 'cluster' is missing or empty"),
    ("no-cluster-groups-at-all", "structure", lambda inv: inv["all"].__setitem__("children", {"nodes": {"hosts": {
        "spark-01": {"sparkfleet_node_index": 1}, "spark-02": {"sparkfleet_node_index": 2}}}}),
     "unknown group 'nodes'"),
    ("no-control", "structure", move("spark-01", "control", "compute"), "group 'control' must hold exactly one host, has 0"),
    ("two-controls", "structure", move("spark-02", "compute", "control"), "group 'control' must hold exactly one host, has 2"),
    ("empty-compute", "structure", lambda inv: hosts_of(inv, "compute").clear(), "group 'compute' is empty"),
    ("unknown-group", "structure", unknown_group, "unknown group 'gpus'"),
    ("control-and-compute", "structure", in_both, "spark-02: in both 'control' and 'compute'"),
    ("bad-hostname", "structure", bad_name, "'Spark_9' is not a valid host name"),
    # names of variables
    ("typo-mgmt-cidr", "names", var("sparkfleet_mgmt_cdir", "192.168.10.0/24"),
     f"{S}: sparkfleet_mgmt_cdir is not a sparkfleet variable (did you mean sparkfleet_mgmt_cidr?)"),
    ("typo-ntp", "names", var("sparkfleet_ntp_server", ["192.168.1.1"]), "sparkfleet_ntp_server is not a sparkfleet variable (did you mean sparkfleet_ntp_servers?)"),
    ("typo-host-level", "names", hostvar("spark-04", "sparkfleet_fabric_ip", ["192.168.100.99"]),
     "spark-04: sparkfleet_fabric_ip is not a sparkfleet variable (did you mean sparkfleet_fabric_ips?)"),
    ("typo-disabled-service", "names", var("sparkfleet_services_disabled", ["kube_nodeport"]),
     "sparkfleet_services_disabled[0]='kube_nodeport' is not a declared service (did you mean kube_nodeports?)"),
    # types
    ("fabric-cidrs-string", "types", var("sparkfleet_fabric_cidrs", "192.168.100.0/24"),
     "sparkfleet_fabric_cidrs='192.168.100.0/24' is a string where a list is expected"),
    ("fabric-ifaces-string", "types", var("sparkfleet_fabric_interfaces", "enp1s0f0np0"),
     "sparkfleet_fabric_interfaces='enp1s0f0np0' is a string where a list is expected"),
    ("admin-cidrs-string", "types", var("sparkfleet_admin_cidrs", "192.168.1.0/24"), "sparkfleet_admin_cidrs='192.168.1.0/24' is a string where a list"),
    ("ntp-string", "types", var("sparkfleet_ntp_servers", "192.168.1.1"), "sparkfleet_ntp_servers='192.168.1.1' is a string where a list"),
    ("uid-string", "types", var("sparkfleet_cluster_uid", "2000"),
     "sparkfleet_cluster_uid='2000' is the string '2000' where a whole number is expected"),
    ("index-string", "types", hostvar("spark-03", "sparkfleet_node_index", "3"),
     "spark-03: sparkfleet_node_index='3' is the string '3' where a whole number is expected"),
    ("nccl-range-string", "types", var("sparkfleet_nccl_port_range", "50000-51000"), "sparkfleet_nccl_port_range='50000-51000' is a string where a list"),
    ("user-list", "types", var("sparkfleet_cluster_user", ["spark"]), "sparkfleet_cluster_user=['spark'] is a list where a string is expected (one value)"),
    ("mgmt-cidr-list", "types", var("sparkfleet_mgmt_cidr", ["192.168.10.0/24"]), "sparkfleet_mgmt_cidr=['192.168.10.0/24'] is a list where a string"),
    ("mtu-string", "types", var("sparkfleet_fabric_mtu", "9000"), "sparkfleet_fabric_mtu='9000' is the string '9000' where a whole number"),
    ("fabric-cidr-number", "types", var("sparkfleet_fabric_cidrs", ["192.168.100.0/24", 7]), "sparkfleet_fabric_cidrs[1]=7 is a whole number where a string"),
    ("services-not-mapping", "types", var("sparkfleet_extra_services", ["jupyter"]), "sparkfleet_extra_services=['jupyter'] is a list where a mapping"),
    # ranges and collisions
    ("uid-zero", "ranges", var("sparkfleet_cluster_uid", 0), "sparkfleet_cluster_uid=0 must be from 1000 to 59999"),
    ("uid-negative", "ranges", var("sparkfleet_cluster_uid", -5), "sparkfleet_cluster_uid=-5 must be from 1000 to 59999"),
    ("uid-system", "ranges", var("sparkfleet_cluster_uid", 500), "sparkfleet_cluster_uid=500 must be from 1000 to 59999 (not the system range"),
    ("gid-nobody", "ranges", var("sparkfleet_cluster_gid", 65534), "sparkfleet_cluster_gid=65534 must be from 1000 to 59999"),
    ("user-root", "ranges", var("sparkfleet_cluster_user", "root"), "sparkfleet_cluster_user='root' must not be root"),
    ("user-is-login", "ranges", var("sparkfleet_cluster_user", "nvidia"), "sparkfleet_cluster_user='nvidia' is the Ansible login user (ansible_user)"),
    ("bad-user", "ranges", var("sparkfleet_cluster_user", "Root User"), "sparkfleet_cluster_user='Root User' is not a valid user name"),
    ("nccl-too-small", "ranges", var("sparkfleet_nccl_port_range", [50000, 50010]), "sparkfleet_nccl_port_range=[50000, 50010] holds 11 ports; NCCL needs at least 256"),
    ("nccl-reversed", "ranges", var("sparkfleet_nccl_port_range", [51000, 50000]), "sparkfleet_nccl_port_range=[51000, 50000] must be [low, high]"),
    ("nccl-over-ray", "ranges", var("sparkfleet_nccl_port_range", [51500, 52500]),
     "sparkfleet_nccl_port_range=[51500, 52500] overlaps service ray_workers ports 52000-53000"),
    ("nccl-over-roce", "ranges", var("sparkfleet_nccl_port_range", [4000, 5000]), "sparkfleet_nccl_port_range=[4000, 5000] overlaps RoCEv2 port 4791"),
    ("nccl-over-extra", "ranges", both(var("sparkfleet_extra_services", {"jupyter": {"ports": [50080], "proto": "tcp", "from": ["admin"], "open_on": ["control"]}})),
     "overlaps service jupyter port 50080"),
    ("mgmt-ipv6", "ranges", both(var("sparkfleet_mgmt_cidr", "fd00:10::/64"), var("ansible_host", "fd00:10::11")),
     "sparkfleet_mgmt_cidr='fd00:10::/64' is IPv6, which is not supported"),
    ("admin-ipv6", "ranges", var("sparkfleet_admin_cidrs", ["2001:db8::/32"]), "sparkfleet_admin_cidrs[0]='2001:db8::/32' is IPv6, which is not supported"),
    ("network-address", "ranges", hostvar("spark-05", "ansible_host", "192.168.10.0"),
     "spark-05: ansible_host=192.168.10.0 is the network address of sparkfleet_mgmt_cidr=192.168.10.0/24"),
    ("broadcast-address", "ranges", hostvar("spark-06", "sparkfleet_fabric_ips", ["192.168.100.255", "192.168.101.16"]),
     "spark-06: sparkfleet_fabric_ips[0]=192.168.100.255 is the broadcast address of sparkfleet_fabric_cidrs[0]"),
    ("cidr-too-small", "ranges", var("sparkfleet_fabric_cidrs", ["192.168.100.0/29", "192.168.101.0/24"]),
     "sparkfleet_fabric_cidrs[0]=192.168.100.0/29 is too small for 8 nodes (6 usable addresses)"),
    ("admin-overlaps-fabric", "ranges", var("sparkfleet_admin_cidrs", ["192.168.96.0/20"]),
     "sparkfleet_admin_cidrs[0]=192.168.96.0/20 overlaps the fabric subnet sparkfleet_fabric_cidrs[0]=192.168.100.0/24"),
    ("admin-equals-fabric", "ranges", var("sparkfleet_admin_cidrs", ["192.168.101.0/24"]),
     "sparkfleet_admin_cidrs[0]=192.168.101.0/24 overlaps the fabric subnet sparkfleet_fabric_cidrs[1]=192.168.101.0/24"),
    ("fabric-count", "ranges", var("sparkfleet_fabric_cidrs", ["192.168.100.0/24"]),
     "sparkfleet_fabric_cidrs has 1 subnets for 2 sparkfleet_fabric_interfaces"),
    ("suffix-invalid", "ranges", var("sparkfleet_fabric_name_suffix", "_fab"), "sparkfleet_fabric_name_suffix='_fab' is not lower-case letters"),
    ("suffix-too-long", "ranges", both(hostvar("spark-07", "sparkfleet_node_index", 7), lambda inv: hosts_of(inv, "compute").__setitem__(
        "spark-" + "x" * 50, {"sparkfleet_node_index": 9}), var("sparkfleet_fabric_name_suffix", "-fabric-net")),
     "makes the fabric name 'spark-" + "x" * 50 + "-fabric-net', not a valid host name"),
    ("ntp-not-a-host", "ranges", var("sparkfleet_ntp_servers", ["time server!"]), "sparkfleet_ntp_servers[0]='time server!' is neither a host name nor an IPv4 address"),
    ("ntp-bad-ip", "ranges", var("sparkfleet_ntp_servers", ["192.168.1.300"]), "sparkfleet_ntp_servers[0]='192.168.1.300' is not a valid IPv4 address"),
    ("duplicate-ip", "ranges", hostvar("spark-02", "ansible_host", "192.168.10.11"), "spark-02: duplicate address 192.168.10.11 (ansible_host), also spark-01"),
    ("ip-outside-cidr", "ranges", hostvar("spark-02", "ansible_host", "10.9.9.9"), "spark-02: ansible_host=10.9.9.9 is outside sparkfleet_mgmt_cidr=192.168.10.0/24"),
    ("bad-cidr", "ranges", var("sparkfleet_mgmt_cidr", "192.168.10.0/33"), "sparkfleet_mgmt_cidr='192.168.10.0/33' is not a valid CIDR"),
    ("cidr-host-bits", "ranges", var("sparkfleet_mgmt_cidr", "192.168.10.5/24"), "sparkfleet_mgmt_cidr='192.168.10.5/24' has host bits set (network is 192.168.10.0/24)"),
    ("fabric-overlaps-mgmt", "ranges", var("sparkfleet_fabric_cidrs", ["192.168.0.0/16", "10.0.0.0/24"]), "sparkfleet_mgmt_cidr=192.168.10.0/24 overlaps sparkfleet_fabric_cidrs[0]=192.168.0.0/16"),
    ("fabric-ip-outside", "ranges", hostvar("spark-02", "sparkfleet_fabric_ips", ["10.99.0.5", "192.168.101.12"]),
     "spark-02: sparkfleet_fabric_ips[0]=10.99.0.5 is outside sparkfleet_fabric_cidrs[0]=192.168.100.0/24"),
    ("fabric-ips-count", "ranges", hostvar("spark-02", "sparkfleet_fabric_ips", ["192.168.100.12"]), "spark-02: sparkfleet_fabric_ips has 1 addresses for 2 sparkfleet_fabric_cidrs"),
    ("duplicate-index", "ranges", hostvar("spark-03", "sparkfleet_node_index", 2), "spark-03: sparkfleet_node_index=2 is also used by spark-02"),
    ("index-zero", "ranges", hostvar("spark-03", "sparkfleet_node_index", 0), "spark-03: sparkfleet_node_index=0 must be from 1 to 4000"),
    ("service-bad-proto", "ranges", var("sparkfleet_extra_services", {"jupyter": {"ports": [8888], "proto": "sctp", "from": ["admin"], "open_on": ["control"]}}),
     "sparkfleet_extra_services={'jupyter'"),
    ("service-unknown-group", "ranges", var("sparkfleet_extra_services", {"jupyter": {"ports": [8888], "proto": "tcp", "from": ["admin"], "open_on": ["gpu"]}}),
     "sparkfleet_services[jupyter].open_on names the unknown group 'gpu'"),
    ("mtu-range", "ranges", var("sparkfleet_fabric_mtu", 90000), "sparkfleet_fabric_mtu=90000 must be from 1280 to 9216"),
    # A comment becomes a `#` line of the nft ruleset: a line break there would make the rest a rule.
    ("service-comment-lines", "ranges", var("sparkfleet_extra_services", {"jupyter": {"ports": [8888], "proto": "tcp", "from": ["admin"],
                                                                                     "open_on": ["control"], "comment": "x\ntcp dport 22 accept"}}),
     "comment='x\\ntcp dport 22 accept' must be one line of text"),
    # The gateway's bearer keys (its role runs late in site.yml): refused before any change, the key never shown.
    ("gateway-short-key", "ranges", var("gateway_api_keys", {"default": "short-key"}),
     "spark-01: gateway_api_keys[default]: the key must be 24 to 256 characters"),
    ("gateway-shared-key", "ranges", var("gateway_api_keys", {"a": "k" * 30, "b": "k" * 30}),
     "spark-01: gateway_api_keys gives two teams the same key"),
]

STUB = "#!/bin/sh\necho \"$@\" >> \"$SPARKFLEET_SSH_CALLS\"\nexit 255\n"


def run_case(tmp: Path, change, playbook="site.yml", extra=()):
    tmp.mkdir(parents=True, exist_ok=True)
    inv = base()
    change(inv)
    (tmp / "hosts.yml").write_text(json.dumps(inv))
    stub = tmp / "ssh"
    stub.write_text(STUB)
    stub.chmod(0o755)
    calls = tmp / "ssh-calls"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_SSH_EXECUTABLE=str(stub),
               SPARKFLEET_SSH_CALLS=str(calls), ANSIBLE_CACHE_PLUGIN="memory", SPARKFLEET_SECRETS_DIR=str(tmp / "secrets"))
    res = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "hosts.yml"), playbook, *extra],
                         cwd=ROOT, text=True, capture_output=True, env=env, timeout=300)
    return res, calls.read_text() if calls.exists() else ""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """All cases at once, four runs at a time (each is a real ansible-playbook)."""
    root = tmp_path_factory.mktemp("badinv")
    with ThreadPoolExecutor(max_workers=4) as ex:
        futs = {c[0]: ex.submit(run_case, root / c[0], c[2]) for c in CASES}
        return {k: f.result() for k, f in futs.items()}


def test_every_class_is_covered_by_enough_cases():
    classes = [c[1] for c in CASES]
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)
    assert {k: classes.count(k) for k in set(classes)} == {k: classes.count(k) for k in ("structure", "names", "types", "ranges")}
    assert min(classes.count(k) for k in ("structure", "names", "types", "ranges")) >= 4


def test_the_unchanged_example_passes_the_inventory_checks():
    res, calls = run_case(Path(os.environ.get("TMPDIR", "/tmp")) / f"badinv-ok-{os.getpid()}", lambda inv: None)
    out = res.stdout + res.stderr
    assert "Inventory errors" not in out, out[-3000:]
    assert calls, "a valid inventory gets past the inventory checks to the first connection (the stub)"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_inventory_fails_before_any_connection(case, results):
    name, _, _, expected = case
    res, calls = results[name]
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-2000:]
    assert expected in out, out[-3000:]
    assert "Inventory errors" in out or "group 'cluster'" in out
    assert calls == "", f"ssh was started: {calls[:500]}"


@pytest.mark.parametrize("playbook", ["playbooks/base.yml", "playbooks/storage.yml", "playbooks/model_publish.yml",
                                      "playbooks/drift_timer.yml", "playbooks/validate.yml", "playbooks/fabric.yml"])
def test_misspelled_cluster_group_stops_every_playbook(playbook, tmp_path):
    extra = ["-e", "model_name=m", "-e", "model_version=v1", "-e", f"model_dir={tmp_path}"]
    res, calls = run_case(tmp_path, rename_cluster("clusters"), playbook, extra)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "unknown group 'clusters' (did you mean 'cluster'?)" in out, out[-3000:]
    assert calls == ""
