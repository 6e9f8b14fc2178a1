"""Filter plugins and the cluster model, as plain Python."""
from __future__ import annotations

import re

from ansible_collections.sparkfleet.cluster.plugins.filter.cluster import hosts_conflict_regexp, mtu_peers
from ansible_collections.sparkfleet.cluster.plugins.module_utils import cluster_model as cm


def test_hosts_conflict_regexp_disables_only_conflicting_lines():
    rx = hosts_conflict_regexp([("spark-01", "10.77.0.11"), ("spark-03", "10.77.0.13"), ("spark-03-fab", "10.78.0.13")])
    text = ("127.0.0.1\tlocalhost\n127.0.1.1 spark-03.lan spark-03\n10.78.0.13\tspark-03\n10.77.0.13 spark-03\n"
            "10.78.0.13 spark-03-fab\n10.77.0.99 spark-03-fab other\n# 1.2.3.4 spark-01\n10.77.0.11 spark-01 spark-01.x\n"
            "10.9.9.9 spark-011\n")
    hit = [m.group(0) for m in re.finditer(rx, text, re.M)]
    assert hit == ["127.0.1.1 spark-03.lan spark-03", "10.78.0.13\tspark-03", "10.77.0.99 spark-03-fab other"]
    assert re.findall(hosts_conflict_regexp([]), text, re.M) == []


def test_node_address_and_model():
    assert cm.node_address("10.0.0.0/24", 3) == "10.0.0.13"
    assert cm.node_address("192.168.100.0/24", 1, offset=0) == "192.168.100.1"
    import pytest
    with pytest.raises(ValueError):
        cm.node_address("10.0.0.0/29", 8)
    hv = {"a": {"sparkfleet_node_index": 1, "sparkfleet_mgmt_cidr": "10.0.0.0/24", "sparkfleet_fabric_cidrs": ["10.1.0.0/24", "10.2.0.0/24"]},
          "b": {"sparkfleet_node_index": 2, "sparkfleet_mgmt_cidr": "10.0.0.0/24", "sparkfleet_fabric_cidrs": ["10.1.0.0/24", "10.2.0.0/24"],
                "ansible_host": "10.0.0.50"}}
    groups = {"all": ["a", "b"], "cluster": ["a", "b"], "control": ["a"], "compute": ["b"]}
    nodes = cm.cluster_nodes(hv, groups)
    assert nodes[0] == {"name": "a", "index": 1, "mgmt_ip": "10.0.0.11", "fabric_ips": ["10.1.0.11", "10.2.0.11"],
                        "fabric_names": ["a-fab", "a-fab1"], "data_ip": "10.1.0.11", "role": "control"}
    assert nodes[1]["mgmt_ip"] == "10.0.0.50" and nodes[1]["role"] == "compute"
    assert cm.inventory_errors(hv, groups) == []
    assert mtu_peers(nodes[1:], 9000) == [{"name": "b-fab", "ip": "10.1.0.12", "mtu": 9000},
                                           {"name": "b-fab1", "ip": "10.2.0.12", "mtu": 9000}]


def test_inventory_errors_name_the_culprit():
    base = {"sparkfleet_mgmt_cidr": "10.0.0.0/24", "sparkfleet_fabric_cidrs": ["10.1.0.0/24"]}
    hv = {"a": dict(base, ansible_host="10.0.0.11", sparkfleet_node_index=1),
          "b": dict(base, ansible_host="10.0.0.11", sparkfleet_node_index=1)}
    groups = {"all": ["a", "b"], "cluster": ["a", "b"], "control": ["a", "b"], "compute": [], "gpus": ["a"]}
    errs = cm.inventory_errors(hv, groups)
    assert "inventory: unknown group 'gpus' (known: cluster, compute, control; add it to sparkfleet_extra_groups if intended)" in errs
    assert "inventory: group 'control' must hold exactly one host, has 2 (a, b)" in errs
    assert "inventory: group 'compute' is empty" in errs
    assert "b: sparkfleet_node_index=1 is also used by a" in errs
    assert "b: duplicate address 10.0.0.11 (ansible_host), also a ansible_host" in errs
    assert cm.inventory_errors(hv, groups, extra_groups=["gpus"])[0].startswith("inventory: group 'control'")


def test_example_inventory_is_valid():
    import os
    import subprocess
    import sys
    from pathlib import Path

    from conftest import ROOT
    res = subprocess.run([str(Path(sys.executable).parent / "ansible"), "-i", "inventory/example", "spark-05", "-o", "-m", "debug",
                          "-a", '{"msg": "{{ hostvars | sparkfleet.cluster.inventory_errors(groups) | length }} errors"}'],
                         cwd=ROOT, text=True, capture_output=True, env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    assert '"msg": "0 errors"' in res.stdout, res.stdout + res.stderr


def test_nccl_env_dgx_spark_from_shared_fixtures(tmp_path):
    """rdma_facts' sysfs reader on a tree built from the real GB10 fixtures -> NCCL names both halves."""
    from sysfs_fixture import spark_sysfs

    from ansible_collections.sparkfleet.cluster.plugins.module_utils import hwparse as hw
    devs = hw.read_rdma_sysfs(str(spark_sysfs(tmp_path)))
    env = cm.nccl_env(devs, ["enp1s0f0np0", "enP2p1s0f0np0"])
    assert env == {"NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0", "NCCL_IB_GID_INDEX": "3",
                   "NCCL_IB_SUBNET_AWARE_ROUTING": "1", "NCCL_SOCKET_IFNAME": "enp1s0f0np0,enP2p1s0f0np0",
                   "OMPI_MCA_btl_tcp_if_include": "enp1s0f0np0,enP2p1s0f0np0", "UCX_NET_DEVICES": "enp1s0f0np0,enP2p1s0f0np0"}
    ring = cm.nccl_env(devs, ["enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"], topology="ring")
    assert ring["NCCL_IB_HCA"] == "rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1"  # NVIDIA's order and ring["NCCL_IB_MERGE_NICS"] == "0"
    assert "NCCL_IB_GID_INDEX" not in ring  # the down ports' RoCE v2 GID sits at another index: let NCCL choose


def test_nccl_env_server_with_several_hcas_and_overrides():
    devs = [{"name": f"mlx5_{i}", "netdevs": [f"ens{i}np0"],
             "ports": [{"netdev": f"ens{i}np0", "roce_v2_gid_index": 3}]} for i in range(8)]
    devs.append({"name": "mlx5_bond_0", "netdevs": ["bond0"], "ports": [{"netdev": "bond0", "roce_v2_gid_index": 1}]})
    env = cm.nccl_env(devs, [f"ens{i}np0" for i in range(8)], overrides={"NCCL_IB_GID_INDEX": None, "NCCL_DEBUG": "WARN"})
    assert env["NCCL_IB_HCA"] == ",".join(f"mlx5_{i}" for i in range(8))  # the storage bond is not a fabric HCA
    assert "NCCL_IB_GID_INDEX" not in env and env["NCCL_DEBUG"] == "WARN"
    assert cm.nccl_env([], ["eth1"]) == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth1",
                                         "OMPI_MCA_btl_tcp_if_include": "eth1", "UCX_NET_DEVICES": "eth1"}


def test_readme_variable_table_is_generated_from_the_schema():
    import subprocess
    import sys

    from conftest import ROOT
    res = subprocess.run([sys.executable, str(ROOT / "scripts/schema_doc.py"), "--check"], text=True, capture_output=True)
    assert res.returncode == 0, res.stderr


def test_schema_covers_every_sparkfleet_variable_the_code_reads():
    """A variable read somewhere in roles/playbooks/plugins but missing from the schema would be refused as unknown."""
    import re

    from conftest import ROOT

    from ansible_collections.sparkfleet.cluster.plugins.module_utils import inventory_schema as schema
    used = set()
    for sub in ("roles", "playbooks", "plugins", "inventory/example"):
        for p in (ROOT / sub).rglob("*"):
            if p.suffix in (".yml", ".j2", ".py") and p.is_file():
                used |= set(re.findall(r"\b(sparkfleet_[a-z0-9_]+)", p.read_text()))
    metrics = {u for u in used if u.startswith(("sparkfleet_drift", "sparkfleet_validat", "sparkfleet_tools"))}
    assert sorted(used - metrics - set(schema.SCHEMA)) == []


def test_model_entries_must_be_plain_names():
    assert cm.model_entry_errors([{"name": "Qwen2.5-70B", "version": "v2"}]) == []
    errs = cm.model_entry_errors([{"name": "..", "version": "v1"}, {"name": "a/b", "version": "v1"}, "x",
                                  {"name": "ok", "version": "-rf"}, {"name": "ok"}])
    assert errs == [
        "model_sync_models[0].name='..' must be a plain name (letters, digits, '.', '_', '-'; not starting with '.' or '-')",
        "model_sync_models[1].name='a/b' must be a plain name (letters, digits, '.', '_', '-'; not starting with '.' or '-')",
        "model_sync_models[2]='x' must be a mapping {name, version}",
        "model_sync_models[3].version='-rf' must be a plain name (letters, digits, '.', '_', '-'; not starting with '.' or '-')",
        "model_sync_models[4].version=None must be a plain name (letters, digits, '.', '_', '-'; not starting with '.' or '-')",
    ]
    assert cm.model_entry_errors("Qwen") == ["model_sync_models='Qwen' must be a list of {name, version}"]
    assert cm.model_entry_errors([{"name": "m", "version": "current"}]) == [
        "model_sync_models[0].version='current' is reserved (the link to the served version)"]


def test_readme_port_table_is_current_and_every_service_says_how_it_authenticates():
    import subprocess
    import sys

    from conftest import ROOT
    res = subprocess.run([sys.executable, str(ROOT / "scripts/ports_doc.py"), "--check"], text=True, capture_output=True)
    assert res.returncode == 0, res.stderr


def test_gateway_keys_are_checked_before_any_change_and_never_shown():
    groups = {"control": ["c1"], "cluster": ["c1"]}
    good = {"team-a": "a" * 30, "team_b": "b" * 40}
    assert cm.gateway_key_errors({"c1": {"gateway_api_keys": good}}, groups) == []
    assert cm.gateway_key_errors({"c1": {}}, groups) == []  # generated
    assert cm.gateway_key_errors({"c1": {"gateway_api_keys": {"x y": "secret-value-0123456789-abcdef"}}}, groups) == [
        "c1: gateway_api_keys has the team name 'x y' (letters, digits, '_', '-'; 64 at most)"]
    errs = cm.gateway_key_errors({"c1": {"gateway_api_keys": {"t": "has space in it 0123456789abc"}}}, groups)
    assert errs == ["c1: gateway_api_keys[t]: the key must be 24 to 256 characters of letters, digits and . _ ~ + / = - "
                    "(not shown)"]
    assert cm.gateway_key_errors({"c1": {"gateway_api_keys": ["k"]}}, groups) == [
        "c1: gateway_api_keys must map team names to bearer keys ({team: key}, at least one)"]
    # From the environment, when the inventory gives none.
    assert cm.gateway_key_errors({"c1": {}}, groups, '{"t": "%s"}' % ("z" * 24)) == []
    assert cm.gateway_key_errors({"c1": {}}, groups, "t=secretsecretsecretsecret") == [
        "c1: SPARKFLEET_GATEWAY_KEYS is not JSON (a JSON object {team: key} is expected; not shown)"]
    assert cm.gateway_key_errors({"c1": {}}, groups, '{"a": "%s", "b": "%s"}' % ("q" * 30, "q" * 30)) == [
        "c1: SPARKFLEET_GATEWAY_KEYS gives two teams the same key (each team's key must be its own)"]
    # No inference layer: no gateway, nothing to check.
    assert cm.gateway_key_errors({"c1": {"sparkfleet_inference": False, "gateway_api_keys": {"t": "x"}}}, groups) == []
    # The TLS pair: both or neither, PEM text.
    assert cm.gateway_key_errors({"c1": {"gateway_tls_cert": "-----BEGIN CERTIFICATE-----\nx"}}, groups) == [
        "c1: gateway_tls_cert and gateway_tls_key go together (given: only gateway_tls_cert)"]
    assert cm.gateway_key_errors({"c1": {"gateway_tls_cert": "cert.pem", "gateway_tls_key": "secret-text"}}, groups) == [
        "c1: gateway_tls_cert is not a PEM certificate (-----BEGIN CERTIFICATE-----)",
        "c1: gateway_tls_key is not a PEM private key (not shown)"]
    # The gateway role checks its own values by the same rules, vLLM's key too (never shown).
    from ansible_collections.sparkfleet.cluster.plugins.filter.cluster import gateway_input_errors
    assert gateway_input_errors(good, "c1", "v" * 30) == []
    assert gateway_input_errors(good, "c1", "short", "-----BEGIN CERTIFICATE-----\nx") == [
        "c1: gateway_tls_cert and gateway_tls_key go together (given: only gateway_tls_cert)",
        "c1: gateway_backend_key (SPARKFLEET_VLLM_API_KEY) must be 24 to 256 characters of letters, digits "
        "and . _ ~ + / = - (not shown)"]
    assert gateway_input_errors("not-a-map", "c1", "v" * 30) == [
        "c1: gateway_api_keys must map team names to bearer keys ({team: key}, at least one)"]
