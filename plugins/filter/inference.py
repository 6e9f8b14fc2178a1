"""Filters for the inference layer (logic in module_utils/inference.py)."""
from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.cluster.plugins.module_utils import inference


def python_target(hv):
    """A node's hostvars -> "3.12/aarch64": the wheel set it needs."""
    facts = hv.get("ansible_facts", {}) if hasattr(hv, "get") else {}
    py = facts.get("python", {}).get("version", {})
    if not py or not facts.get("architecture"):
        raise AnsibleFilterError("python_target: no facts for this node (gather facts first)")
    return "%s.%s/%s" % (py["major"], py["minor"], facts["architecture"])


def python_versions(hosts, hostvars):
    """Hosts -> {python version: [hosts]} from their facts."""
    out = {}
    for h in hosts:
        py = hostvars[h].get("ansible_facts", {}).get("python", {}).get("version", {})
        out.setdefault("%s.%s.%s" % (py.get("major"), py.get("minor"), py.get("micro")), []).append(h)
    return out


def ray_expect(nodes, hostvars):
    """Cluster node records -> ["name=address"]: the Ray address of each (an inventory ray_node_ip, else data_ip)."""
    out = []
    for n in nodes:
        hv = hostvars[n["name"]] if n["name"] in hostvars else {}
        out.append("%s=%s" % (n["name"], hv.get("ray_node_ip") or n["data_ip"]))
    return out


def fleet_consistency(versions_by_host):
    return inference.fleet_consistency(versions_by_host or {})


def vllm_plan(hosts, args):
    """GPU nodes + a mapping of vllm_plan's keyword arguments -> the plan; errors name the variables."""
    try:
        return inference.vllm_plan(hosts, **args)
    except (TypeError, ValueError) as e:
        raise AnsibleFilterError("vllm: %s (vllm_layout, vllm_tensor_parallel_size, vllm_pipeline_parallel_size)"
                                 % e) from e


def vllm_command(plan, host, args):
    try:
        return inference.vllm_command(plan, host, **args)
    except (TypeError, ValueError, KeyError) as e:
        raise AnsibleFilterError("vllm: %s (vllm_executor)" % e) from e


def vllm_container_prefix(image, args):
    return inference.vllm_container_prefix(image, **args)


def unified_memory(gpus):
    return inference.unified_memory(gpus)


def vllm_memory_fraction(unified, memtotal_mb, explicit=None, unified_max=0.8, os_reserve_gib=16):
    return inference.vllm_memory_fraction(unified, memtotal_mb, explicit, unified_max, os_reserve_gib)


def vllm_env(nodes, gpus_per_node, unified):
    return inference.vllm_env(nodes, gpus_per_node, unified)


class FilterModule:
    def filters(self):
        return {"python_target": python_target, "python_versions": python_versions,
                "fleet_consistency": fleet_consistency, "ray_expect": ray_expect, "vllm_plan": vllm_plan,
                "vllm_command": vllm_command, "vllm_container_prefix": vllm_container_prefix,
                "unified_memory": unified_memory, "vllm_memory_fraction": vllm_memory_fraction, "vllm_env": vllm_env}
