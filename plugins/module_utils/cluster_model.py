"""The cluster model: nodes, their addresses and names, and the inventory checks.

Plain Python (netaddr only), used on the controller by the filter plugin
plugins/filter/cluster.py and unit-tested in tests/unit/test_cluster_model.py.
Every error message names the host, the variable and the value.
"""

from __future__ import annotations

import re

import netaddr

KNOWN_GROUPS = {"all", "ungrouped", "cluster", "control", "compute"}
HOSTNAME_RE = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


def node_address(cidr, index, offset=10):
    """The address of node `index` in `cidr`: network + offset + index (spark-01 -> .11)."""
    net = netaddr.IPNetwork(str(cidr))
    addr = net.network + int(offset) + int(index)
    if addr not in net or addr in (net.network, net.broadcast):
        raise ValueError("node %s (offset %s) does not fit in %s" % (index, offset, cidr))
    return str(addr)


def ip_in_any(ip, cidrs):
    try:
        addr = netaddr.IPAddress(str(ip))
        return any(addr in netaddr.IPNetwork(str(c)) for c in cidrs or [])
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return False


def _get(hv, name, default=None):
    try:
        v = hv[name]
    except (KeyError, TypeError):
        return default
    return default if v is None else v


def node_record(name, hv):
    """One node from its hostvars; addresses given or derived from the CIDRs and its index."""
    index = _get(hv, "sparkfleet_node_index")
    offset = _get(hv, "sparkfleet_address_offset", 10)
    mgmt_ip = _get(hv, "sparkfleet_mgmt_ip") or _get(hv, "ansible_host")
    if not mgmt_ip and index is not None:
        mgmt_ip = node_address(_get(hv, "sparkfleet_mgmt_cidr"), index, offset)
    fabric_ips = list(_get(hv, "sparkfleet_fabric_ips", []) or [])
    if not fabric_ips and index is not None:
        fabric_ips = [node_address(c, index, offset) for c in _get(hv, "sparkfleet_fabric_cidrs", []) or []]
    suffix = _get(hv, "sparkfleet_fabric_name_suffix", "-fab")
    fabric_names = [name + suffix if i == 0 else "%s%s%d" % (name, suffix, i) for i in range(len(fabric_ips))]
    return {"name": name, "index": index, "mgmt_ip": mgmt_ip, "fabric_ips": fabric_ips, "fabric_names": fabric_names}


def cluster_nodes(hostvars, groups):
    """Every node of the `cluster` group with its role (control/compute) and addresses."""
    control = set(groups.get("control", []))
    nodes = []
    for name in groups.get("cluster", []):
        rec = node_record(name, hostvars[name])
        rec["role"] = "control" if name in control else "compute"
        nodes.append(rec)
    return sorted(nodes, key=lambda n: (n["index"] if isinstance(n["index"], int) else 10 ** 6, n["name"]))


def _net(value, var, errors, where="all"):
    try:
        if "/" not in str(value):
            raise ValueError("no prefix length")
        net = netaddr.IPNetwork(str(value))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        errors.append("%s: %s=%r is not a valid CIDR" % (where, var, value))
        return None
    if net.ip != net.network:
        errors.append("%s: %s=%s has host bits set (network is %s)" % (where, var, value, net.cidr))
    return net


def _ip(value):
    try:
        return netaddr.IPAddress(str(value))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def inventory_errors(hostvars, groups, extra_groups=()):
    """Checks that need only the inventory (no facts): CIDRs, addresses, duplicates, groups, names."""
    errors = []
    known = KNOWN_GROUPS | set(extra_groups or ())
    for g in sorted(groups):
        if g not in known:
            errors.append("inventory: unknown group '%s' (known: %s; add it to sparkfleet_extra_groups if intended)"
                          % (g, ", ".join(sorted(known - {"all", "ungrouped"}))))
    cluster = list(groups.get("cluster", []))
    control = list(groups.get("control", []))
    compute = list(groups.get("compute", []))
    if not cluster:
        errors.append("inventory: group 'cluster' is empty (it must hold the groups 'control' and 'compute')")
    if len(control) != 1:
        errors.append("inventory: group 'control' must hold exactly one host, has %d (%s)"
                      % (len(control), ", ".join(control) or "none"))
    if not compute:
        errors.append("inventory: group 'compute' is empty")
    for h in sorted(set(control) & set(compute)):
        errors.append("%s: in both 'control' and 'compute'" % h)
    for h in sorted((set(control) | set(compute)) - set(cluster)):
        errors.append("%s: in 'control'/'compute' but not in 'cluster'" % h)

    seen_ip, seen_name, seen_index = {}, {}, {}
    for h in cluster:
        hv = hostvars[h]
        if not HOSTNAME_RE.match(h):
            errors.append("%s: inventory name %r is not a valid host name (lower-case letters, digits, '-')" % (h, h))
        mgmt = _net(_get(hv, "sparkfleet_mgmt_cidr"), "sparkfleet_mgmt_cidr", errors, h)
        fabs = []
        for i, c in enumerate(_get(hv, "sparkfleet_fabric_cidrs", []) or []):
            n = _net(c, "sparkfleet_fabric_cidrs[%d]" % i, errors, h)
            if n is not None:
                fabs.append(n)
        for i, c in enumerate(_get(hv, "sparkfleet_admin_cidrs", []) or []):
            _net(c, "sparkfleet_admin_cidrs[%d]" % i, errors, h)
        nets = ([("sparkfleet_mgmt_cidr", mgmt)] if mgmt is not None else []) + \
            [("sparkfleet_fabric_cidrs[%d]" % i, n) for i, n in enumerate(fabs)]
        for i, (va, a) in enumerate(nets):
            for vb, b in nets[i + 1:]:
                if a.first <= b.last and b.first <= a.last:
                    errors.append("%s: %s=%s overlaps %s=%s" % (h, va, a, vb, b))
        idx = _get(hv, "sparkfleet_node_index")
        if idx is not None:
            if not isinstance(idx, int) or isinstance(idx, bool) or idx < 1:
                errors.append("%s: sparkfleet_node_index=%r must be a whole number >= 1" % (h, idx))
                idx = None
            elif idx in seen_index:
                errors.append("%s: sparkfleet_node_index=%d is also used by %s" % (h, idx, seen_index[idx]))
            else:
                seen_index[idx] = h
        try:
            rec = node_record(h, hv) if (idx is not None or _get(hv, "ansible_host")) else None
        except (ValueError, netaddr.AddrFormatError, TypeError) as e:
            errors.append("%s: cannot derive addresses: %s" % (h, e))
            rec = None
        if rec is None:
            if not _get(hv, "ansible_host") and idx is None:
                errors.append("%s: neither ansible_host nor sparkfleet_node_index is set" % h)
            continue
        ip = _ip(rec["mgmt_ip"])
        var = "sparkfleet_mgmt_ip" if _get(hv, "sparkfleet_mgmt_ip") else "ansible_host"
        if ip is None:
            errors.append("%s: %s=%r is not an IP address (the management address)" % (h, var, rec["mgmt_ip"]))
        elif mgmt is not None and ip not in mgmt:
            errors.append("%s: %s=%s is outside sparkfleet_mgmt_cidr=%s" % (h, var, ip, mgmt))
        if len(rec["fabric_ips"]) != len(fabs) and _get(hv, "sparkfleet_fabric_ips"):
            errors.append("%s: sparkfleet_fabric_ips has %d addresses for %d sparkfleet_fabric_cidrs"
                          % (h, len(rec["fabric_ips"]), len(fabs)))
        for i, fip in enumerate(rec["fabric_ips"]):
            fa = _ip(fip)
            if fa is None:
                errors.append("%s: sparkfleet_fabric_ips[%d]=%r is not an IP address" % (h, i, fip))
            elif i < len(fabs) and fa not in fabs[i]:
                errors.append("%s: sparkfleet_fabric_ips[%d]=%s is outside sparkfleet_fabric_cidrs[%d]=%s"
                              % (h, i, fa, i, fabs[i]))
            if fa is not None:
                if str(fa) in seen_ip:
                    errors.append("%s: duplicate address %s (sparkfleet_fabric_ips[%d]), also %s" % (h, fa, i, seen_ip[str(fa)]))
                seen_ip[str(fa)] = "%s sparkfleet_fabric_ips[%d]" % (h, i)
        if ip is not None:
            if str(ip) in seen_ip:
                errors.append("%s: duplicate address %s (%s), also %s" % (h, ip, var, seen_ip[str(ip)]))
            seen_ip[str(ip)] = "%s %s" % (h, var)
        for n in [h] + rec["fabric_names"]:
            if n.lower() in seen_name:
                errors.append("%s: duplicate name %s, also %s" % (h, n, seen_name[n.lower()]))
            seen_name[n.lower()] = h
        user = _get(hv, "sparkfleet_cluster_user", "spark")
        if not USER_RE.match(str(user)):
            errors.append("%s: sparkfleet_cluster_user=%r is not a valid user name" % (h, user))
        rng = _get(hv, "sparkfleet_nccl_port_range", [50000, 51000])
        lo, hi = (list(rng) + [None, None])[:2] if isinstance(rng, (list, tuple)) else (None, None)
        if not (isinstance(lo, int) and isinstance(hi, int) and 1024 <= lo < hi <= 65535):
            errors.append("%s: sparkfleet_nccl_port_range=%r must be [low, high] with 1024 <= low < high <= 65535"
                          % (h, _get(hv, "sparkfleet_nccl_port_range")))
    return _dedupe(errors)


def _dedupe(errors):
    out, seen = [], set()
    for e in errors:
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out


def host_errors(host, facts, hv, req):
    """Checks on one host's gathered facts (ansible_facts, keys without the ansible_ prefix)."""
    def f(key, default=None):
        v = facts.get(key, facts.get("ansible_" + key))
        return default if v is None else v
    if f("_setup_failed"):
        return ["%s: cannot gather facts with privilege escalation (become): %s" % (host, f("_setup_failed"))]
    errors = []
    dist, ver, major = f("distribution"), str(f("distribution_version", "")), str(f("distribution_major_version", ""))
    supported = req.get("supported_os", {})
    versions = [str(v) for v in supported.get(dist, [])]
    if ver not in versions and major not in versions:
        errors.append("%s: operating system %s %s is not supported (ansible_distribution; supported: %s)"
                      % (host, dist, ver, "; ".join("%s %s" % (d, "/".join(map(str, v))) for d, v in supported.items())))
    arch = f("architecture")
    if arch not in req.get("architectures", []):
        errors.append("%s: architecture %s is not supported (ansible_architecture; supported: %s)"
                      % (host, arch, ", ".join(req.get("architectures", []))))
    mem = f("memtotal_mb", 0)
    if mem < req.get("min_memory_mb", 0):
        errors.append("%s: %d MiB memory, preflight_min_memory_mb=%d" % (host, mem, req["min_memory_mb"]))
    root = next((m for m in f("mounts", []) if m.get("mount") == "/"), None)
    if root is not None:
        free_gb = (root.get("size_available") or 0) / 1024 ** 3
        if free_gb < req.get("min_disk_gb", 0):
            errors.append("%s: %.1f GiB free on /, preflight_min_disk_gb=%s" % (host, free_gb, req["min_disk_gb"]))
    ifaces = set(f("interfaces", []))
    wanted = [("sparkfleet_mgmt_interface", _get(hv, "sparkfleet_mgmt_interface"))]
    wanted += [("sparkfleet_fabric_interfaces[%d]" % i, n)
               for i, n in enumerate(_get(hv, "sparkfleet_fabric_interfaces", []) or [])]
    for var, name in wanted:
        if name and name not in ifaces:
            errors.append("%s: interface %s=%s does not exist (found: %s)" % (host, var, name, ", ".join(sorted(ifaces))))
    py = f("python", {}).get("version", {})
    if (py.get("major", 0), py.get("minor", 0)) < (3, 8):
        errors.append("%s: Python %s.%s on the node, need >= 3.8" % (host, py.get("major"), py.get("minor")))
    if str(f("user_uid")) != "0":
        errors.append("%s: privilege escalation does not give root (ansible_user_uid=%s); check ansible_become"
                      % (host, f("user_uid")))
    return errors


def nccl_env(rdma_devices, fabric_interfaces, topology="switch", overrides=None, ib_disable_without_rdma=True):
    """The NCCL/UCX/Open MPI environment for a node, from its RDMA devices (rdma_facts) and fabric interfaces.

    NCCL_IB_HCA names every RDMA device whose netdev is a fabric interface - on DGX Spark both halves of a
    ConnectX-7 port (rocep1s0f0 and roceP2p1s0f0), the fix that took users from 3 to ~24 GB/s."""
    ifaces = list(fabric_interfaces or [])
    hcas, gid_indexes = [], set()
    for dev in rdma_devices or []:
        netdevs = set(dev.get("netdevs") or []) | {p.get("netdev") for p in dev.get("ports") or [] if p.get("netdev")}
        if netdevs & set(ifaces):
            hcas.append(dev["name"])
            gid_indexes |= {p.get("roce_v2_gid_index") for p in dev.get("ports") or [] if p.get("roce_v2_gid_index") is not None}
    env = {}
    if ifaces:
        env["NCCL_SOCKET_IFNAME"] = ",".join(ifaces)
        env["UCX_NET_DEVICES"] = ",".join(ifaces)
        env["OMPI_MCA_btl_tcp_if_include"] = ",".join(ifaces)
    if hcas:
        env["NCCL_IB_HCA"] = ",".join(sorted(hcas, key=lambda h: (h.lower(), h)))
        # NCCL >= 2.21 finds the RoCE v2 GID itself; pin it only where every port agrees.
        if len(gid_indexes) == 1:
            env["NCCL_IB_GID_INDEX"] = str(gid_indexes.pop())
        if len(ifaces) > 1:
            env["NCCL_IB_SUBNET_AWARE_ROUTING"] = "1"  # each half of a port on its own subnet
        if topology == "ring":
            env["NCCL_IB_MERGE_NICS"] = "0"
    elif ib_disable_without_rdma:
        env["NCCL_IB_DISABLE"] = "1"  # no RDMA device on the fabric: sockets, and say so
    env.update({k: str(v) for k, v in (overrides or {}).items() if v is not None})
    for k in [k for k, v in (overrides or {}).items() if v is None]:
        env.pop(k, None)  # an override of null removes a key
    return dict(sorted(env.items()))
