"""The inventory schema: every cluster-wide `sparkfleet_*` variable, declared once.

Plain Python (netaddr only), used by cluster_model.inventory_errors on the controller before any
connection, by scripts/schema_doc.py (the README's variable table) and by the unit tests.

Each entry: type (str, int, bool, list, dict), for lists the element check, a value check that
returns a problem text or None, a one-line meaning and an example. Cross-field rules (counts,
overlaps, collisions) live in cluster_model, which knows every host.
"""

from __future__ import annotations

import difflib
import re

import netaddr

HOSTNAME_RE = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
FQDN_RE = re.compile(r"^(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?$")
USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
IFACE_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
SERVICE_FROM = ("cluster", "control", "mgmt", "admin", "any")
# Linux user/group ids for people: below 1000 are the distribution's system range, 60000+ are
# reserved (nobody = 65534); Debian and Ubuntu both use 1000-59999.
ID_RANGE = (1000, 59999)
MIN_NCCL_PORTS = 256


def _cidr4(value):
    try:
        if "/" not in str(value):
            return "is not a CIDR (no prefix length; expected like 10.0.0.0/24)"
        net = netaddr.IPNetwork(str(value))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return "is not a valid CIDR (expected like 10.0.0.0/24)"
    if net.version != 4:
        return "is IPv6, which is not supported (the firewall and the fabric are IPv4-only)"
    if net.ip != net.network:
        return "has host bits set (network is %s)" % net.cidr
    return None


def _ip4(value):
    try:
        ip = netaddr.IPAddress(str(value))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return "is not an IP address"
    if ip.version != 4:
        return "is IPv6, which is not supported (the firewall and the fabric are IPv4-only)"
    return None


def _host_or_ip4(value):
    s = str(value)
    if re.fullmatch(r"[0-9.]+", s):
        return _ip4(s) and "is not a valid IPv4 address"
    if ":" in s:
        return _ip4(s)
    return None if FQDN_RE.match(s) else "is neither a host name nor an IPv4 address"


def _match(rx, what):
    def check(value):
        return None if rx.match(str(value)) else "is not %s" % what
    return check


def _int_range(lo, hi, what=""):
    def check(value):
        return None if lo <= value <= hi else "must be from %d to %d%s" % (lo, hi, what)
    return check


def _port_range(value):
    if len(value) != 2:
        return "must be [low, high] (two port numbers)"
    lo, hi = value
    if not (1024 <= lo < hi <= 65535):
        return "must be [low, high] with 1024 <= low < high <= 65535"
    if hi - lo + 1 < MIN_NCCL_PORTS:
        return "holds %d ports; NCCL needs at least %d (NVIDIA's example: 50000-51000)" % (hi - lo + 1, MIN_NCCL_PORTS)
    return None


def _cluster_user(value):
    if not USER_RE.match(str(value)):
        return "is not a valid user name (lower-case letters, digits, '_', '-'; 32 at most)"
    if value == "root":
        return "must not be root (jobs run as an unprivileged user)"
    return None


SLURM_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def _partition(value):
    if not isinstance(value, dict) or not SLURM_NAME_RE.match(str(value.get("name", ""))):
        return "needs a name (letters, digits, '_', '-')"
    unknown = set(value) - {"name", "nodes", "default", "options"}
    if unknown:
        return "has unknown keys %s (known: name, nodes, default, options)" % ", ".join(sorted(unknown))
    nodes = value.get("nodes", "ALL")
    if not (nodes == "ALL" or (isinstance(nodes, list) and all(isinstance(n, str) for n in nodes))):
        return "nodes must be ALL or a list of inventory groups or hosts"
    return None


def _service_ports(value):
    for p in value:
        if isinstance(p, bool):
            return "has %r (ports are numbers or 'low-high' strings)" % (p,)
        if isinstance(p, int):
            if not 1 <= p <= 65535:
                return "has port %d outside 1-65535" % p
            continue
        m = re.fullmatch(r"(\d+)-(\d+)", str(p))
        if not m or not 1 <= int(m.group(1)) < int(m.group(2)) <= 65535:
            return "has %r (ports are numbers or 'low-high' strings)" % (p,)
    return None


def service_problem(entry):
    """A service declaration (sparkfleet_services shape) -> problem text or None."""
    if not isinstance(entry, dict):
        return "must be a mapping {ports, proto, from, open_on}"
    unknown = sorted(set(entry) - {"ports", "proto", "from", "open_on", "comment", "enabled"})
    if unknown:
        return "has unknown keys %s (known: ports, proto, from, open_on, comment, enabled)" % ", ".join(unknown)
    ports = entry.get("ports")
    if not isinstance(ports, list) or not ports:
        return "ports must be a non-empty list"
    bad = _service_ports(ports)
    if bad:
        return "ports " + bad
    if entry.get("proto", "tcp") not in ("tcp", "udp"):
        return "proto=%r must be tcp or udp" % entry.get("proto")
    frm = entry.get("from")
    if not isinstance(frm, list) or not frm or any(f not in SERVICE_FROM for f in frm):
        return "from=%r must be a list of %s" % (frm, ", ".join(SERVICE_FROM))
    on = entry.get("open_on")
    if not isinstance(on, list) or not on or not all(isinstance(g, str) for g in on):
        return "open_on=%r must be a list of inventory groups" % (on,)
    # The comment lands in an nft ruleset as a `#` line: a line break would turn the rest into rules.
    if "comment" in entry and (not isinstance(entry["comment"], str) or re.search(r"[\r\n]", entry["comment"])):
        return "comment=%r must be one line of text" % (entry["comment"],)
    return None


def _services(value):
    for name, entry in value.items():
        if not NAME_RE.match(str(name)):
            return "has a service name %r that is not letters, digits, '.', '_', '-'" % (name,)
        bad = service_problem(entry)
        if bad:
            return "[%s] %s" % (name, bad)
    return None


def _e(t, check=None, **kw):
    return dict(type=t, check=check, **kw)


# type: str | int | bool | list | dict; elements: type of list items; elem_check: their value check.
SCHEMA = {
    "sparkfleet_cluster_name": _e("str", _match(HOSTNAME_RE, "a valid name (lower-case letters, digits, '-')"),
                                  doc="name of the cluster (markers, key and file names)", example="sparks"),
    "sparkfleet_mgmt_cidr": _e("str", _cidr4, doc="management network (SSH, Ansible, APIs)", example="192.168.10.0/24",
                               required=True),
    "sparkfleet_mgmt_interface": _e("str", _match(IFACE_RE, "an interface name"),
                                    doc="management interface (checked by preflight)", example="enP7s7"),
    "sparkfleet_mgmt_ip": _e("str", _ip4, scope="host", doc="management address when it differs from ansible_host",
                             example="192.168.10.13"),
    "sparkfleet_fabric_cidrs": _e("list", elements="str", elem_check=_cidr4,
                                  doc="fabric subnets, one per fabric interface (each CX-7 half on its own)",
                                  example="[192.168.100.0/24, 192.168.101.0/24]"),
    "sparkfleet_fabric_interfaces": _e("list", elements="str", elem_check=_match(IFACE_RE, "an interface name"),
                                       doc="fabric interfaces, in the order of sparkfleet_fabric_cidrs",
                                       example="[enp1s0f0np0, enP2p1s0f0np0]", default=["enp1s0f0np0", "enP2p1s0f0np0"]),
    "sparkfleet_fabric_ips": _e("list", elements="str", elem_check=_ip4, scope="host",
                                doc="explicit fabric addresses instead of derived ones", example="[192.168.100.13, 192.168.101.13]"),
    "sparkfleet_fabric_name_suffix": _e("str", _match(re.compile(r"^[a-z0-9-]{1,20}$"), "lower-case letters, digits and '-'"),
                                        doc="fabric host name suffix", example="-fab (spark-03-fab, spark-03-fab1)"),
    "sparkfleet_fabric_mtu": _e("int", _int_range(1280, 9216), doc="fabric MTU", example="9000"),
    "sparkfleet_admin_cidrs": _e("list", elements="str", elem_check=_cidr4,
                                 doc="networks allowed to reach SSH and the services", example="[192.168.1.0/24]"),
    "sparkfleet_cluster_user": _e("str", _cluster_user, doc="user for MPI/NCCL jobs (not root, not the Ansible user)",
                                  example="spark"),
    "sparkfleet_cluster_uid": _e("int", _int_range(*ID_RANGE, " (not the system range, not reserved ids)"),
                                 doc="UID of the cluster user, the same everywhere", example="2000"),
    "sparkfleet_cluster_gid": _e("int", _int_range(*ID_RANGE, " (not the system range, not reserved ids)"),
                                 doc="GID of the cluster user's group (default: the UID)", example="2000"),
    "sparkfleet_nccl_port_range": _e("list", _port_range, elements="int",
                                     doc="NCCL ports: the ephemeral range is pinned to it and it is open between nodes",
                                     example="[50000, 51000]"),
    "sparkfleet_ntp_servers": _e("list", elements="str", elem_check=_host_or_ip4,
                                 doc="upstream time servers; empty = air-gapped, the control node serves time", example="[]"),
    "sparkfleet_node_index": _e("int", _int_range(1, 4000), scope="host",
                                doc="node number: addresses derive from it (.10+N in each CIDR)", example="3"),
    "sparkfleet_address_offset": _e("int", _int_range(0, 4000), doc="offset of derived addresses (node N gets offset+N)",
                                    example="10"),
    "sparkfleet_domain": _e("str", _match(FQDN_RE, "a DNS domain"), doc="DNS domain added to the names in /etc/hosts",
                            example="cluster.lan"),
    "sparkfleet_extra_groups": _e("list", elements="str", elem_check=_match(re.compile(r"^[A-Za-z0-9_]+$"), "a group name"),
                                  doc="inventory groups preflight should accept", example="[]"),
    "sparkfleet_services": _e("dict", _services, doc="the port registry (playbooks/group_vars/all/services.yml)",
                              example="see services.yml"),
    "sparkfleet_extra_services": _e("dict", _services, doc="more services, same shape as sparkfleet_services",
                                    example="{jupyter: {ports: [8888], proto: tcp, from: [admin], open_on: [control]}}"),
    "sparkfleet_services_disabled": _e("list", elements="str", doc="names of declared services not to open",
                                       example="[kube_nodeports]"),
    "sparkfleet_cuda_test_image": _e("str", _match(re.compile(r"^\S+$"), "an image reference"),
                                     doc="CUDA image for the GPU container checks", example="nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04"),
    "sparkfleet_lab": _e("bool", doc="set by lab/lab.py on lab inventories", example="false"),
    "sparkfleet_gate": _e("bool", doc="role gates: skip a role whose inputs and footprint are as its last converge left "
                                      "them (false, or SPARKFLEET_GATE=off: every task of every role runs)",
                          example="true"),
    "sparkfleet_strict": _e("bool", doc="one unreachable node stops the whole run (site.yml, validation, drift), as "
                                        "before round 3; default false: the run goes on with the reachable nodes, names "
                                        "the others and exits 4 (drift: 3)", example="false"),
    "sparkfleet_scheduler": _e("str", _match(re.compile(r"^(slurm|kubernetes|none)$"), "one of slurm, kubernetes, none"),
                               doc="the scheduler layer users submit work to", example="slurm"),
    "sparkfleet_monitoring": _e("bool", doc="Prometheus, Alertmanager, Grafana and the exporters (playbooks/monitoring.yml)",
                                example="true"),
    "sparkfleet_inference": _e("bool", doc="Ray on every node, vLLM on GPU clusters, the gateway (playbooks/inference.yml)",
                               example="true"),
    "sparkfleet_slurm_partitions": _e("list", elements="dict", elem_check=_partition,
                                      doc="Slurm partitions: [{name, nodes (inventory groups or 'ALL'), default, options}]",
                                      example="[{name: gpu, nodes: ALL, default: true}]"),
    # Day 2 (usually given with -e).
    "sparkfleet_only": _e("str", doc="run the layer playbooks on these hosts only (a host pattern; add_node.yml sets it)",
                          example="spark-05"),
    "sparkfleet_change": _e("str", _match(re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$"), "letters, digits, . _ -"),
                            doc="name of a rolling change (playbooks/rolling_upgrade.yml keeps its state under it)",
                            example="driver-580.95"),
    "sparkfleet_canary": _e("str_or_int", _match(re.compile(r"^[A-Za-z0-9_.:&!\[\]-]+$"), "a number of nodes or a host pattern"),
                            doc="the rolling change's first batch: a number of nodes, or a group or host",
                            example="1"),
    "sparkfleet_batch": _e("str_or_int", _match(re.compile(r"^[1-9][0-9]*$"), "a positive whole number"),
                           doc="nodes per batch after the canary (rolling_upgrade.yml)", example="1"),
    # playbooks/roles.yml (a few roles on their own; the molecule role scenarios converge through it).
    "sparkfleet_roles": _e("str", _match(re.compile(r"^[a-z0-9_]+(@[A-Za-z0-9_]+)?(,[a-z0-9_]+(@[A-Za-z0-9_]+)?)*$"),
                                         "role names separated by commas, each optionally NAME@GROUP"),
                           doc="roles playbooks/roles.yml applies, in order (NAME@GROUP: on that group's hosts only)",
                           example="munge,slurm"),
    "sparkfleet_roles_hosts": _e("str", doc="the host pattern playbooks/roles.yml runs on (default: cluster)",
                                 example="control"),
    "sparkfleet_rolling_roles": _e("list", elements="str", doc="roles a rolling change applies per node",
                                   example="[nvidia_driver, fabric_manager, container_runtime]"),
}

TYPE_NAMES = {"str_or_int": "a number or a name", "str": "a string", "int": "a whole number", "bool": "true or false", "list": "a list", "dict": "a mapping"}


def type_of(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, float):
        return "float"
    return type(value).__name__


def _type_problem(value, want):
    got = type_of(value)
    if got == want or (want == "str_or_int" and got in ("str", "int")):
        return None
    if want == "list" and got == "str":
        return "is a string where a list is expected (write [%s])" % value
    if want == "int" and got == "str" and re.fullmatch(r"\s*-?\d+\s*", value):
        return "is the string %r where a whole number is expected (remove the quotes)" % value
    if want == "bool" and got == "str":
        return "is the string %r where true or false is expected" % value
    if want in ("str", "int", "bool") and got in ("list", "dict"):
        return "is %s where %s is expected (one value)" % (TYPE_NAMES.get(got, got), TYPE_NAMES[want])
    return "is %s where %s is expected" % (TYPE_NAMES.get(got, got), TYPE_NAMES[want])


def value_problems(name, value):
    """Problems of one variable's value, as (variable path, value, problem) triples."""
    spec = SCHEMA[name]
    bad = _type_problem(value, spec["type"])
    if bad:
        return [(name, value, bad)]
    out = []
    if spec["type"] == "list":
        want = spec.get("elements")
        for i, item in enumerate(value):
            path = "%s[%d]" % (name, i)
            if want:
                b = _type_problem(item, want)
                if b:
                    out.append((path, item, b))
                    continue
            if spec.get("elem_check"):
                b = spec["elem_check"](item)
                if b:
                    out.append((path, item, b))
        if out:
            return out
    if spec.get("check"):
        b = spec["check"](value)
        if b:
            out.append((name, value, b))
    return out


def did_you_mean(name, known=None):
    close = difflib.get_close_matches(name, sorted(known or SCHEMA), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_variable_problem(name):
    guess = did_you_mean(name)
    return "is not a sparkfleet variable%s" % (" (did you mean %s?)" % guess if guess else
                                               " (see the README's cluster variables table)")


def markdown_table():
    """The README's cluster variable table, generated from SCHEMA."""
    rows = ["| variable | type | scope | meaning | example |", "| --- | --- | --- | --- | --- |"]
    for name, spec in SCHEMA.items():
        t = spec["type"] + ("[%s]" % spec["elements"] if spec.get("elements") else "")
        rows.append("| `%s` | %s | %s | %s | `%s` |" % (name, t, "per host" if spec.get("scope") == "host" else "cluster",
                                                      spec["doc"], spec["example"]))
    return "\n".join(rows)
