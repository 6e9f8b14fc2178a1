"""The cluster model: nodes, their addresses and names, and the inventory checks.

Plain Python (netaddr only), used on the controller by the filter plugin
plugins/filter/cluster.py and unit-tested in tests/unit/test_cluster_model.py.
Every error message names the host, the variable and the value.
"""

from __future__ import annotations

import json
import re

import netaddr

from ansible_collections.sparkfleet.cluster.plugins.module_utils import inventory_schema as schema

KNOWN_GROUPS = {"all", "ungrouped", "cluster", "control", "compute"}
# Made at run time by preflight (group_by) for the hosts that passed it; an inventory must not define it.
PASSED_GROUP = "_sparkfleet_preflight_passed"
HOSTNAME_RE = schema.HOSTNAME_RE


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


def _is_undefined(value):
    try:
        import jinja2
    except ImportError:  # plain-Python use without Jinja: nothing is deferred
        return False
    return isinstance(value, jinja2.Undefined)


def _raw(hv, name):
    try:
        return hv[name]
    except KeyError:
        return None
    except Exception as e:  # a template that does not evaluate
        return e


def _get(hv, name, default=None):
    try:
        v = hv[name]
    except Exception:  # KeyError, or a templating error of a value derived from a bad one
        return default
    if _is_undefined(v):  # Ansible defers templating errors as Undefined markers (reported by schema_errors)
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
    # data_ip: where cluster traffic (Ray, NCCL bootstrap) goes - the first fabric address, else the management one.
    return {"name": name, "index": index, "mgmt_ip": mgmt_ip, "fabric_ips": fabric_ips, "fabric_names": fabric_names,
            "data_ip": (fabric_ips or [mgmt_ip])[0]}


def cluster_node(hostvars, groups, name):
    """One node with its role (control/compute) and addresses, from its own hostvars only."""
    rec = node_record(name, hostvars[name])
    rec["role"] = "control" if name in set(groups.get("control", [])) else "compute"
    return rec


def cluster_nodes(hostvars, groups):
    """Every node of the `cluster` group with its role (control/compute) and addresses."""
    nodes = [cluster_node(hostvars, groups, name) for name in groups.get("cluster", [])]
    return sorted(nodes, key=lambda n: (n["index"] if isinstance(n["index"], int) else 10 ** 6, n["name"]))


def _show(value):
    return repr(value) if isinstance(value, str) else str(value)


def _ip(value):
    try:
        return netaddr.IPAddress(str(value))
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def _cidr(value):
    """A valid IPv4 network or None (the schema check names what is wrong with it)."""
    if value is None or schema._cidr4(value):
        return None
    return netaddr.IPNetwork(str(value))


def _ports_of(entry):
    """A service's ports as (low, high) pairs."""
    out = []
    for p in entry.get("ports") or []:
        lo, _, hi = str(p).partition("-")
        out.append((int(lo), int(hi or lo)))
    return out


def _services(hv):
    """The declared, enabled services: sparkfleet_services + sparkfleet_extra_services - disabled."""
    svcs = dict(_get(hv, "sparkfleet_services", {}) or {})
    extra = _get(hv, "sparkfleet_extra_services", {}) or {}
    if isinstance(extra, dict):
        svcs.update(extra)
    disabled = set(_get(hv, "sparkfleet_services_disabled", []) or [])
    return {k: v for k, v in svcs.items() if k not in disabled and isinstance(v, dict)}


def structure_errors(groups, extra_groups=()):
    """Groups: cluster/control/compute present and consistent, no unknown group (with a guess)."""
    errors = []
    known = KNOWN_GROUPS | set(extra_groups or ())
    for g in sorted(groups):
        if g not in known:
            guess = schema.did_you_mean(g, known - {"all", "ungrouped"})
            errors.append("inventory: unknown group '%s'%s (known: %s; add it to sparkfleet_extra_groups if intended)"
                          % (g, " (did you mean '%s'?)" % guess if guess else "",
                             ", ".join(sorted(known - {"all", "ungrouped"}))))
    cluster = list(groups.get("cluster", []))
    control = list(groups.get("control", []))
    compute = list(groups.get("compute", []))
    if not cluster:
        errors.append("inventory: group 'cluster' is missing or empty (it must hold the groups 'control' and 'compute'); "
                      "nothing runs without it")
    if len(control) != 1:
        errors.append("inventory: group 'control' must hold exactly one host, has %d (%s)"
                      % (len(control), ", ".join(control) or "none"))
    if not compute:
        errors.append("inventory: group 'compute' is empty")
    for h in sorted(set(control) & set(compute)):
        errors.append("%s: in both 'control' and 'compute'" % h)
    for h in sorted((set(control) | set(compute)) - set(cluster)):
        errors.append("%s: in 'control'/'compute' but not in 'cluster'" % h)
    return errors


def schema_errors(h, hv):
    """Every sparkfleet_* variable of a host: known (else a guess), of the declared type and range."""
    errors = []
    try:
        names = sorted(k for k in hv.keys() if str(k).startswith("sparkfleet_"))
    except (AttributeError, TypeError):
        names = []
    unevaluable = []
    for name in names + ["ansible_host"]:
        raw = _raw(hv, name)
        if _is_undefined(raw) or isinstance(raw, Exception):
            why = raw._as_message() if hasattr(raw, "_as_message") else str(raw)
            unevaluable.append("%s: %s cannot be evaluated (%s)" % (h, name, why.splitlines()[0][:300] if why else "undefined"))
    for name in names:
        if name not in schema.SCHEMA:
            errors.append("%s: %s %s" % (h, name, schema.unknown_variable_problem(name)))
            continue
        value = _get(hv, name)
        if value is None:
            continue
        for path, val, problem in schema.value_problems(name, value):
            errors.append("%s: %s=%s %s" % (h, path, _show(val), problem))
    for name, spec in schema.SCHEMA.items():
        if spec.get("required") and _get(hv, name) is None:
            errors.append("%s: %s is not set (%s, e.g. %s)" % (h, name, spec["doc"], spec["example"]))
    # A value derived from a bad one (ansible_host from a bad CIDR) fails to evaluate: name the cause only.
    return errors or unevaluable


def _typed(hv, name, default=None):
    """A variable's value if it passes the schema, else the default (its error is reported already)."""
    value = _get(hv, name, default)
    if name in schema.SCHEMA and value is not None and schema.value_problems(name, value):
        return default
    return value


def network_errors(h, hv, n_nodes):
    """One host's networks: sizes, overlaps, counts."""
    errors = []
    mgmt = _cidr(_typed(hv, "sparkfleet_mgmt_cidr"))
    fabs = [_cidr(c) for c in _typed(hv, "sparkfleet_fabric_cidrs", []) or []]
    admins = [_cidr(c) for c in _typed(hv, "sparkfleet_admin_cidrs", []) or []]
    ifaces = _typed(hv, "sparkfleet_fabric_interfaces", schema.SCHEMA["sparkfleet_fabric_interfaces"]["default"])
    if fabs and len(fabs) != len(ifaces):
        errors.append("%s: sparkfleet_fabric_cidrs has %d subnets for %d sparkfleet_fabric_interfaces %s (one subnet per interface)"
                      % (h, len(fabs), len(ifaces), ifaces))
    nets = ([("sparkfleet_mgmt_cidr", mgmt)] if mgmt is not None else []) + \
        [("sparkfleet_fabric_cidrs[%d]" % i, n) for i, n in enumerate(fabs) if n is not None]
    for i, (va, a) in enumerate(nets):
        if a.size - 2 < n_nodes:
            errors.append("%s: %s=%s is too small for %d nodes (%d usable addresses)" % (h, va, a, n_nodes, max(a.size - 2, 0)))
        for vb, b in nets[i + 1:]:
            if a.first <= b.last and b.first <= a.last:
                errors.append("%s: %s=%s overlaps %s=%s" % (h, va, a, vb, b))
    for i, adm in enumerate(admins):
        for j, fab in enumerate(fabs):
            if adm is not None and fab is not None and adm.first <= fab.last and fab.first <= adm.last:
                errors.append("%s: sparkfleet_admin_cidrs[%d]=%s overlaps the fabric subnet sparkfleet_fabric_cidrs[%d]=%s "
                              "(admin networks reach services; the fabric carries only node-to-node traffic)"
                              % (h, i, adm, j, fab))
    return errors, mgmt, fabs


def port_errors(h, hv):
    """The NCCL range against every declared port, RoCE and SSH."""
    errors = []
    rng = _get(hv, "sparkfleet_nccl_port_range", [50000, 51000])
    if schema.value_problems("sparkfleet_nccl_port_range", rng):
        return errors  # its own error is reported already
    lo, hi = rng
    ssh_port = int(_get(hv, "firewall_ssh_port", 22))
    fixed = [("RoCEv2", [(4791, 4791)]), ("SSH", [(ssh_port, ssh_port)])]
    for name, entry in sorted(_services(hv).items()):
        try:
            fixed.append(("service %s" % name, _ports_of(entry)))
        except ValueError:
            continue  # reported by the schema
    for what, pairs in fixed:
        for a, b in pairs:
            if a <= hi and lo <= b:
                errors.append("%s: sparkfleet_nccl_port_range=%s overlaps %s port%s %s (the ephemeral range would take its ports)"
                              % (h, _show(rng), what, "s" if a != b else "", a if a == b else "%d-%d" % (a, b)))
    return errors


def service_group_errors(h, hv, groups, extra_groups):
    errors = []
    known = KNOWN_GROUPS | set(extra_groups or ())
    for name, entry in sorted(_services(hv).items()):
        for g in entry.get("open_on") or []:
            if isinstance(g, str) and g not in known:
                errors.append("%s: sparkfleet_services[%s].open_on names the unknown group %r" % (h, name, g))
    declared = set(_get(hv, "sparkfleet_services", {}) or {}) | set(_get(hv, "sparkfleet_extra_services", {}) or {})
    for i, name in enumerate(_typed(hv, "sparkfleet_services_disabled", []) or []):
        if name not in declared:
            guess = schema.did_you_mean(name, declared)
            errors.append("%s: sparkfleet_services_disabled[%d]=%r is not a declared service%s"
                          % (h, i, name, " (did you mean %s?)" % guess if guess else ""))
    return errors


def user_errors(h, hv):
    errors = []
    user = _typed(hv, "sparkfleet_cluster_user", "spark")
    login = _get(hv, "ansible_user")
    if login and user == login:
        errors.append("%s: sparkfleet_cluster_user=%r is the Ansible login user (ansible_user); the cluster user's keys "
                      "are managed exclusively, so it must be another user" % (h, user))
    return errors


def _merge_hosts(errors, all_hosts):
    """'a: X', 'b: X', 'c: X' -> 'a, b, c: X' (group variables are reported once, naming every host)."""
    order, by_text = [], {}
    for e in errors:
        host, sep, text = e.partition(": ")
        key = text if sep and host in all_hosts else e
        if key not in by_text:
            by_text[key] = []
            order.append(key)
        if sep and host in all_hosts:
            if host not in by_text[key]:
                by_text[key].append(host)
    out = []
    for key in order:
        hosts = by_text[key]
        out.append("%s: %s" % (", ".join(hosts), key) if hosts else key)
    return out


def inventory_errors(hostvars, groups, extra_groups=(), gateway_keys_env=""):
    """Checks that need only the inventory (no facts): structure, schema, networks, addresses, ports, names, and the
    gateway's bearer keys where they are given (inventory or SPARKFLEET_GATEWAY_KEYS, gateway_keys_env)."""
    # The run-time group is fine where preflight made it (its hosts carry _preflight_passed), an error otherwise.
    passed = list(groups.get(PASSED_GROUP, []))
    groups = {g: hs for g, hs in groups.items() if g != PASSED_GROUP}
    errors = ["inventory: group '%s' is reserved (preflight makes it at run time); remove it from the inventory"
              % PASSED_GROUP] if any(not hostvars[h].get("_preflight_passed") for h in passed if h in hostvars) else []
    errors += structure_errors(groups, extra_groups)
    cluster = list(groups.get("cluster", []))
    seen_ip, seen_name, seen_index = {}, {}, {}
    for h in cluster:
        hv = hostvars[h]
        if not HOSTNAME_RE.match(h):
            errors.append("%s: inventory name %r is not a valid host name (lower-case letters, digits, '-')" % (h, h))
        host_schema_errors = schema_errors(h, hv)
        errors += host_schema_errors
        net_errors, mgmt, fabs = network_errors(h, hv, len(cluster))
        errors += net_errors + port_errors(h, hv) + service_group_errors(h, hv, groups, extra_groups) + user_errors(h, hv)
        idx = _get(hv, "sparkfleet_node_index")
        if idx is not None:
            if schema.value_problems("sparkfleet_node_index", idx):
                idx = None
            elif idx in seen_index:
                errors.append("%s: sparkfleet_node_index=%d is also used by %s" % (h, idx, seen_index[idx]))
            else:
                seen_index[idx] = h
        try:
            rec = node_record(h, hv) if (idx is not None or _get(hv, "ansible_host")) and not host_schema_errors else None
        except (ValueError, netaddr.AddrFormatError, TypeError) as e:
            errors.append("%s: cannot derive addresses: %s" % (h, e))
            rec = None
        if rec is None:
            if not _get(hv, "ansible_host") and idx is None:
                errors.append("%s: neither ansible_host nor sparkfleet_node_index is set" % h)
            continue
        suffix = _get(hv, "sparkfleet_fabric_name_suffix", "-fab")
        for n in rec["fabric_names"]:
            if not HOSTNAME_RE.match(n):
                errors.append("%s: sparkfleet_fabric_name_suffix=%r makes the fabric name %r, not a valid host name "
                              "(63 characters at most, no leading or trailing '-')" % (h, suffix, n))
        ip = _ip(rec["mgmt_ip"])
        var = "sparkfleet_mgmt_ip" if _get(hv, "sparkfleet_mgmt_ip") else "ansible_host"
        if ip is None:
            errors.append("%s: %s=%r is not an IP address (the management address)" % (h, var, rec["mgmt_ip"]))
        elif ip.version != 4:
            errors.append("%s: %s=%s is IPv6, which is not supported (the firewall and the fabric are IPv4-only)" % (h, var, ip))
        elif mgmt is not None and ip not in mgmt:
            errors.append("%s: %s=%s is outside sparkfleet_mgmt_cidr=%s" % (h, var, ip, mgmt))
        elif mgmt is not None and ip in (mgmt.network, mgmt.broadcast):
            errors.append("%s: %s=%s is the %s address of sparkfleet_mgmt_cidr=%s"
                          % (h, var, ip, "network" if ip == mgmt.network else "broadcast", mgmt))
        if len(rec["fabric_ips"]) != len(fabs) and _get(hv, "sparkfleet_fabric_ips"):
            errors.append("%s: sparkfleet_fabric_ips has %d addresses for %d sparkfleet_fabric_cidrs"
                          % (h, len(rec["fabric_ips"]), len(fabs)))
        for i, fip in enumerate(rec["fabric_ips"]):
            fa = _ip(fip)
            fab = fabs[i] if i < len(fabs) else None
            if fa is None:
                errors.append("%s: sparkfleet_fabric_ips[%d]=%r is not an IP address" % (h, i, fip))
            elif fab is not None and fa not in fab:
                errors.append("%s: sparkfleet_fabric_ips[%d]=%s is outside sparkfleet_fabric_cidrs[%d]=%s"
                              % (h, i, fa, i, fab))
            elif fab is not None and fa in (fab.network, fab.broadcast):
                errors.append("%s: sparkfleet_fabric_ips[%d]=%s is the %s address of sparkfleet_fabric_cidrs[%d]=%s"
                              % (h, i, fa, "network" if fa == fab.network else "broadcast", i, fab))
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
    errors += gateway_key_errors(hostvars, groups, gateway_keys_env)
    return _merge_hosts(_dedupe(errors), set(cluster))


# The gateway's bearer keys (roles/gateway): what nginx' map and the Authorization header can carry.
GATEWAY_TEAM_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
GATEWAY_KEY_RE = re.compile(r"^[A-Za-z0-9._~+/=-]{24,256}$")


def gateway_key_errors(hostvars, groups, env_raw=""):
    """The gateway host's TLS pair and bearer keys, where the inventory (or SPARKFLEET_GATEWAY_KEYS, env_raw) gives them:
    gateway_input_errors before any change (the gateway role comes late in site.yml)."""
    host = (groups.get("control") or [None])[0]
    if host is None or host not in hostvars or not _bool(_get(hostvars[host], "sparkfleet_inference", True)):
        return []
    cert, key = _get(hostvars[host], "gateway_tls_cert", ""), _get(hostvars[host], "gateway_tls_key", "")
    keys, source = _get(hostvars[host], "gateway_api_keys"), "gateway_api_keys"
    if keys is None and env_raw:
        source = "SPARKFLEET_GATEWAY_KEYS"
        try:
            keys = json.loads(env_raw)
        except ValueError:
            return gateway_input_errors(host, None, None, cert, key) + [
                "%s: SPARKFLEET_GATEWAY_KEYS is not JSON (a JSON object {team: key} is expected; not shown)" % host]
    return gateway_input_errors(host, keys, None, cert, key, source)


def gateway_input_errors(host, keys, backend_key=None, cert="", key="", source="gateway_api_keys"):
    """The gateway's inputs, the one definition preflight and the gateway role both check: the TLS pair both or
    neither, as PEM; {team: key} (None: generated) with plain team names and distinct keys of 24 to 256 characters;
    vLLM's key (None: not checked here) of the same shape. No message shows a key."""
    cert, tls_key = str(cert or ""), str(key or "")
    errors = []
    if bool(cert) != bool(tls_key):
        errors.append("%s: gateway_tls_cert and gateway_tls_key go together (given: only %s)"
                      % (host, "gateway_tls_cert" if cert else "gateway_tls_key"))
    if cert and "BEGIN CERTIFICATE" not in cert:
        errors.append("%s: gateway_tls_cert is not a PEM certificate (-----BEGIN CERTIFICATE-----)" % host)
    if tls_key and "PRIVATE KEY" not in tls_key:
        errors.append("%s: gateway_tls_key is not a PEM private key (not shown)" % host)
    if backend_key is not None and not (isinstance(backend_key, str) and GATEWAY_KEY_RE.match(backend_key)):
        errors.append("%s: gateway_backend_key (SPARKFLEET_VLLM_API_KEY) must be 24 to 256 characters of letters, digits "
                      "and . _ ~ + / = - (not shown)" % host)
    if keys is None:
        return errors  # one key for team default is generated
    if not isinstance(keys, dict) or not keys:
        return errors + ["%s: %s must map team names to bearer keys ({team: key}, at least one)" % (host, source)]
    for team, value in keys.items():
        if not GATEWAY_TEAM_RE.match(str(team)):
            errors.append("%s: %s has the team name %r (letters, digits, '_', '-'; 64 at most)" % (host, source, team))
        if not isinstance(value, str) or not GATEWAY_KEY_RE.match(value):
            errors.append("%s: %s[%s]: the key must be 24 to 256 characters of letters, digits and . _ ~ + / = - "
                          "(%s)" % (host, source, team, "not shown" if isinstance(value, str) else "not a string"))
    if len({str(v) for v in keys.values()}) != len(keys):
        errors.append("%s: %s gives two teams the same key (each team's key must be its own)" % (host, source))
    return errors


def _bool(v):
    return v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true", "yes", "on")


def _dedupe(errors):
    out, seen = [], set()
    for e in errors:
        if e not in seen:
            seen.add(e)
            out.append(e)
    return out


BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def bucket_problem(name):
    """S3's bucket naming rules (3-63 lowercase letters, digits, '.', '-'; a letter or digit at each end; no '..';
    not an IPv4 address) -> problem text or None. A name outside them fails at the store, after the nodes changed."""
    name = str(name)
    if not BUCKET_RE.match(name):
        return "is not an S3 bucket name (3-63 lowercase letters, digits, '.', '-', a letter or digit at each end)"
    if ".." in name or re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name):
        return "is not an S3 bucket name (no '..', not an IP address)"
    return None


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
    # Architecture-specific downloads: a pin for this node's architecture, or the variables to set, before any change.
    for a in req.get("arch_artifacts", []):
        if arch in req.get("architectures", []) and arch not in (a.get("pinned") or []):
            errors.append("%s: %s has no pinned build for %s (pinned: %s): set %s"
                          % (host, a["name"], arch, ", ".join(a.get("pinned") or []) or "none", a["set"]))
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
    # Downloads this node will make, by what it is (NVIDIA GPUs without DGX OS fetch NVIDIA's repository keys): each
    # needs its checksum before any change, not after the base layer already ran.
    plat = f("nvidia_platform", {}) or {}
    gpu = (plat.get("gpu_count") or 0) > 0
    when = {"always": True, "gpu": gpu, "gpu_not_dgx": gpu and not plat.get("dgx_os"), "gpu_dgx": gpu and bool(plat.get("dgx_os"))}
    for c in req.get("checksums", []):
        if when.get(c.get("when"), False) and not re.fullmatch(c.get("pattern") or r"[0-9a-fA-F]{64}", str(c.get("value") or "")):
            errors.append("%s: %s must be %s (%s; every download is pinned)"
                          % (host, c["var"], c.get("what") or "the SHA-256 of what it downloads", c["why"]))
    for b in req.get("buckets", []):
        for i, name in enumerate(b.get("value") or []):
            bad = bucket_problem(name)
            if bad:
                errors.append("%s: %s%s=%r %s" % (host, b["var"], "[%d]" % i if b.get("list") else "", name, bad))
    for r in req.get("required", []):
        if r.get("applies") and not r.get("set"):
            errors.append("%s: %s must be set (%s)" % (host, r["var"], r["why"]))
    # Role choices a later layer would refuse only after the earlier layers changed the nodes.
    for c in req.get("choices", []):
        if c.get("value") not in c.get("allowed", []):
            errors.append("%s: %s=%s is not one of %s" % (host, c["var"], c.get("value"), ", ".join(c.get("allowed", []))))
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


PLAIN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def model_entry_errors(models, var="model_sync_models"):
    """[{name, version}] -> problems naming the entry; names become paths under /models and in the bucket."""
    if not isinstance(models, list):
        return ["%s=%r must be a list of {name, version}" % (var, models)]
    errors = []
    for i, m in enumerate(models):
        if not isinstance(m, dict):
            errors.append("%s[%d]=%r must be a mapping {name, version}" % (var, i, m))
            continue
        for key in ("name", "version"):
            v = m.get(key)
            if not isinstance(v, str) or not PLAIN_NAME_RE.match(v) or v in (".", ".."):
                errors.append("%s[%d].%s=%r must be a plain name (letters, digits, '.', '_', '-'; not starting "
                              "with '.' or '-')" % (var, i, key, v))
            elif key == "version" and v == "current":
                # /models/NAME/current is the link to the served version.
                errors.append("%s[%d].version='current' is reserved (the link to the served version)" % (var, i))
    return errors
