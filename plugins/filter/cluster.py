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


def cluster_node(hostvars, groups, name):
    """{name, role, index, mgmt_ip, fabric_ips, fabric_names} of one host (hostvars | cluster_node(groups, name))."""
    return cm.cluster_node(hostvars, groups, name)


def inventory_errors(hostvars, groups, extra_groups=(), gateway_keys_env=""):
    return cm.inventory_errors(hostvars, groups, extra_groups, gateway_keys_env)


def gateway_input_errors(keys, host, backend_key=None, cert="", key=""):
    """The gateway role's inputs, by the rules preflight checks them with (cluster_model.gateway_input_errors)."""
    return cm.gateway_input_errors(host, keys, backend_key, cert, key)


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


def nccl_env(rdma_devices, fabric_interfaces, topology="switch", overrides=None, ib_disable_without_rdma=True):
    return cm.nccl_env(rdma_devices, fabric_interfaces, topology, overrides, ib_disable_without_rdma)


def fabric_interface(item):
    """(name, ip, cidr) -> {name, address: 'ip/prefix' or None, cidr}."""
    import netaddr
    name, ip, cidr = (list(item) + [None, None, None])[:3]
    address = "%s/%d" % (ip, netaddr.IPNetwork(str(cidr)).prefixlen) if ip and cidr else None
    return {"name": name, "address": address, "cidr": cidr}


def fabric_link_spec(iface, mtu, addressing="static"):
    """What the kernel must show for a fabric interface: MTU and (static addressing) its address."""
    return {"mtu": int(mtu), "addresses": [iface["address"]] if addressing == "static" and iface.get("address") else []}


def roce_ports(rdma_devices, interfaces):
    """[{name: RDMA device, netdev}] for the devices whose netdev is one of the fabric interfaces."""
    return [{"name": d["name"], "netdev": n} for d in rdma_devices or [] for n in d.get("netdevs") or [] if n in interfaces]


def s3_identity(key):
    """{name, access_key, secret_key, actions} -> a SeaweedFS S3 identity."""
    return {"name": key["name"], "credentials": [{"accessKey": key["access_key"], "secretKey": key["secret_key"]}],
            "actions": list(key.get("actions") or ["Read", "List"])}


def node_addresses(nodes):
    """Every management and fabric address of the nodes (the firewall's "cluster" source)."""
    return [n["mgmt_ip"] for n in nodes] + [ip for n in nodes for ip in n["fabric_ips"]]


def first_fabric_peer(node):
    """A node's first fabric address as a node_checks peer ({name, ip}), or None without one."""
    return {"name": node["fabric_names"][0], "ip": node["fabric_ips"][0]} if node.get("fabric_ips") else None


def mtu_peers(nodes, mtu):
    """Peers' fabric addresses as node_checks mtu_peers entries."""
    return [{"name": n, "ip": ip, "mtu": int(mtu)}
            for node in nodes for n, ip in zip(node["fabric_names"], node["fabric_ips"], strict=False)]


def model_entry_errors(models, var="model_sync_models"):
    """Problems of [{name, version}] entries: both plain names (letters, digits, . _ -), never '.' or '..'."""
    return cm.model_entry_errors(models, var)


class FilterModule:
    def filters(self):
        return {"node_address": node_address, "cluster_nodes": cluster_nodes, "cluster_node": cluster_node,
                "inventory_errors": inventory_errors, "host_errors": host_errors, "gateway_input_errors": gateway_input_errors,
                "ip_in_any": ip_in_any, "mtu_peers": mtu_peers,
                "hosts_conflict_regexp": hosts_conflict_regexp, "nccl_env": nccl_env,
                "fabric_interface": fabric_interface, "fabric_link_spec": fabric_link_spec, "roce_ports": roce_ports,
                "s3_identity": s3_identity,
                "first_fabric_peer": first_fabric_peer, "model_entry_errors": model_entry_errors, "node_addresses": node_addresses}
