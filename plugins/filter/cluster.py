"""Filters over the cluster model (logic in module_utils/cluster_model.py)."""
from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.sparkfleet.cluster.plugins.module_utils import cluster_model as cm


def node_address(cidr, index, offset=10):
    """'10.0.0.0/24' | node_address(3) -> '10.0.0.13'."""
    try:
        return cm.node_address(cidr, index, offset)
    except Exception as e:  # netaddr raises several types
        raise AnsibleFilterError("node_address(%s, %s): %s" % (cidr, index, e)) from e


def cluster_nodes(hostvars, groups):
    """[{name, role, index, mgmt_ip, fabric_ips, fabric_names}] for every host of group 'cluster'."""
    return cm.cluster_nodes(hostvars, groups)


def inventory_errors(hostvars, groups, extra_groups=()):
    return cm.inventory_errors(hostvars, groups, extra_groups)


def host_errors(facts, host, hv, requirements):
    return cm.host_errors(host, facts, hv, requirements)


def ip_in_any(ip, cidrs):
    """True when ip lies in one of cidrs."""
    return cm.ip_in_any(ip, cidrs)


def hosts_conflict_regexp(pairs):
    """(name, address) pairs -> one multiline regexp matching every uncommented /etc/hosts line that
    gives one of the names (as a whole word) another address. [ \\t], never \\s: \\s would cross lines."""
    import re
    alts = ["(?!%s[ \t])[^ \t\n]+(?:[ \t]+[^ \t\n]+)*?[ \t]+%s(?=[ \t]|$)" % (re.escape(ip), re.escape(name))
            for name, ip in pairs]
    return "^(?![ \t]*#)(?:%s)[^\n]*$" % "|".join(alts) if alts else "(?!x)x"


def mtu_peers(nodes, mtu):
    """Peers' fabric addresses as node_checks mtu_peers entries."""
    return [{"name": n, "ip": ip, "mtu": int(mtu)}
            for node in nodes for n, ip in zip(node["fabric_names"], node["fabric_ips"], strict=False)]


class FilterModule:
    def filters(self):
        return {"node_address": node_address, "cluster_nodes": cluster_nodes,
                "inventory_errors": inventory_errors, "host_errors": host_errors,
                "ip_in_any": ip_in_any, "mtu_peers": mtu_peers,
                "hosts_conflict_regexp": hosts_conflict_regexp}
