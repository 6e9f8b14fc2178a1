"""Kubernetes filters (logic in module_utils/kube.py)."""
from __future__ import annotations

import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.cluster.plugins.module_utils import kube


def flannel_manifest(text, pod_cidr, iface_can_reach="", iface=""):
    """Flannel's released kube-flannel.yml (text) -> the manifest we apply (text)."""
    try:
        docs = kube.flannel_patch(list(yaml.safe_load_all(text)), pod_cidr, iface_can_reach, iface)
    except (kube.ManifestError, yaml.YAMLError, ValueError) as e:
        raise AnsibleFilterError(f"flannel manifest: {e}") from e
    return yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)


def kube_node_checks(nodes_json, expected_gpus):
    return kube.node_checks(nodes_json, {k: int(v) for k, v in expected_gpus.items()})


class FilterModule:
    def filters(self):
        return {"flannel_manifest": flannel_manifest, "kube_node_checks": kube_node_checks}
