"""Parsers for the fabric's performance tools: perftest (ib_write_bw), ethtool, lspci -vv link status, NCCL's debug
log. The slow-cluster checks (README: "a cluster that is slow gets named") compare what these read with a table.

Plain Python, no Ansible imports, unit-tested on real outputs (../shared/fixtures). As in hwparse: never raise on
what a tool printed (tabs or spaces, grep excerpts, truncated runs, error lines); return what could be read and a
list of problems.
"""

from __future__ import annotations

import re

# perftest's MB is 2^20 bytes (its default report; --report_gbits prints Gb/s, 10^9 bits).
_MIB_TO_GBIT = 1048576 * 8 / 1e9


# The header's key fields: (result key, pattern, conversion). "Device" shares its line with "Dual-port".
_IB_HEADER = (("device", r"Device\s*:\s*(\S+)", str), ("mtu", r"^Mtu\s*:\s*(\d+)", int),
              ("link_type", r"^Link type\s*:\s*(\S+)", str), ("gid_index", r"^GID index\s*:\s*(\d+)", int))


def parse_ib_write_bw(text):
    """ib_write_bw client output -> {device, mtu, link_type, gid_index, rows: [{bytes, iterations, peak_gbps,
    avg_gbps}], avg_gbps (the last row's average), error, problems}. Bandwidth in Gb/s whatever the report unit."""
    out = {"device": None, "mtu": None, "link_type": None, "gid_index": None, "rows": [], "avg_gbps": None,
           "error": None, "problems": []}
    unit = None
    errors = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        for key, pattern, conv in _IB_HEADER:
            m = re.search(pattern, line)
            if m:
                out[key] = conv(m.group(1))
        m = re.match(r"#bytes\s+#iterations\s+BW peak\[(\w+)/sec\]", line)
        if m:
            unit = m.group(1)
            continue
        if unit:
            cols = line.split()
            if len(cols) >= 4 and all(re.fullmatch(r"[0-9.]+", c) for c in cols[:4]):
                factor = _MIB_TO_GBIT if unit == "MB" else 1.0
                out["rows"].append({"bytes": int(cols[0]), "iterations": int(cols[1]),
                                    "peak_gbps": round(float(cols[2]) * factor, 2),
                                    "avg_gbps": round(float(cols[3]) * factor, 2)})
                continue
        if re.search(r"Couldn't|Unable to|Failed|error", line, re.I) and not line.startswith("#"):
            errors.append(line)
    if errors:
        out["error"] = "; ".join(errors[:3])
    if out["rows"]:
        out["avg_gbps"] = out["rows"][-1]["avg_gbps"]
    elif not errors:
        out["problems"].append("no result row (truncated output, or not ib_write_bw's)")
    if unit not in (None, "MB", "Gb"):
        out["problems"].append("unknown bandwidth unit %s/sec" % unit)
    return out


def parse_ethtool(text):
    """`ethtool IFACE` (whole, trimmed or a grep excerpt) and `ethtool --show-fec` -> {speed_mbps, lanes, duplex,
    link_detected, fec_active, problems}. An unknown speed (link down) is None."""
    out = {"speed_mbps": None, "lanes": None, "duplex": None, "link_detected": None, "fec_active": None, "problems": []}
    seen = False
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.match(r"Speed:\s*(\S+)", line)
        if m:
            seen = True
            sp = re.match(r"(\d+)Mb/s", m.group(1))
            out["speed_mbps"] = int(sp.group(1)) if sp else None
        m = re.match(r"Lanes:\s*(\d+)", line)
        if m:
            out["lanes"] = int(m.group(1))
        m = re.match(r"Duplex:\s*(\S+)", line)
        if m:
            out["duplex"] = m.group(1)
        m = re.match(r"Link detected:\s*(\w+)", line)
        if m:
            seen = True
            out["link_detected"] = m.group(1) == "yes"
        m = re.match(r"Active FEC encoding:\s*(.+)", line)
        if m:
            seen = True
            out["fec_active"] = m.group(1).strip()
    if not seen:
        out["problems"].append("no Speed, Link detected or FEC line")
    return out


def _lnk(value):
    speed = re.search(r"Speed\s+([0-9.]+)GT/s", value)
    width = re.search(r"Width\s+x(\d+)", value)
    return (float(speed.group(1)) if speed else None, int(width.group(1)) if width else None)


def parse_lspci_links(text):
    """`lspci -vv` (or its LnkCap/LnkSta lines) -> [{device, cap_speed_gts, cap_width, speed_gts, width, downgraded,
    problems}], one per LnkCap/LnkSta pair. `downgraded`: running below capability in speed or width (what lspci
    marks "(downgraded)", computed too where an older lspci does not say so)."""
    links, device, cap = [], None, None
    for raw in (text or "").splitlines():
        m = re.match(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s", raw)
        if m:
            device = raw.split()[0]
            cap = None
            continue
        line = raw.strip()
        if line.startswith("LnkCap:"):
            cap = _lnk(line)
        elif line.startswith("LnkSta:"):
            speed, width = _lnk(line)
            entry = {"device": device, "cap_speed_gts": cap[0] if cap else None, "cap_width": cap[1] if cap else None,
                     "speed_gts": speed, "width": width, "problems": []}
            if cap is None:
                entry["problems"].append("LnkSta without LnkCap")
            if speed is None or width is None:
                entry["problems"].append("LnkSta without speed or width: %s" % line[:80])
            entry["downgraded"] = "downgraded" in line or bool(
                cap and speed and width and ((cap[0] and speed < cap[0]) or (cap[1] and width < cap[1])))
            links.append(entry)
            cap = None
    return links


def nccl_transport(text):
    """NCCL_DEBUG=INFO lines -> {network: 'IB' | 'Socket' | None, ib_devices: [...], socket_ifaces: [...],
    transports: sorted set of 'via' transports (NET/IB/0, NET/Socket/0, SHM/direct/direct, P2P/...), warnings,
    problems}. What NCCL chose, from its own log: the seed's "wrong NIC" is `network == 'Socket'` where RDMA was meant,
    or a socket interface that is not a fabric port."""
    out = {"network": None, "ib_devices": [], "socket_ifaces": [], "transports": [], "warnings": [], "problems": []}
    transports = set()
    for raw in (text or "").splitlines():
        if "NCCL WARN" in raw:
            out["warnings"].append(raw.split("NCCL WARN", 1)[1].strip())
        if "NCCL INFO" not in raw:
            continue
        info = raw.split("NCCL INFO", 1)[1].strip()
        m = re.match(r"Using network (\w+)", info)
        if m:
            out["network"] = m.group(1)
        m = re.match(r"NET/IB\s*:\s*Using\s+(.*)", info)
        if m:
            for dev in re.findall(r"\[\d+\]([^:\s]+)(?::\d+)?", m.group(1).split(";")[0]):
                if dev not in out["ib_devices"]:
                    out["ib_devices"].append(dev)
        m = re.match(r"NET/Socket\s*:\s*Using\s+(.*)", info)
        if m:
            for dev in re.findall(r"\[\d+\]([^:\s]+):", m.group(1)):
                if dev not in out["socket_ifaces"]:
                    out["socket_ifaces"].append(dev)
        m = re.search(r"\bvia\s+(\S+)", info)
        if m and info.startswith("Channel"):
            transports.add(m.group(1))
    out["transports"] = sorted(transports)
    if out["network"] is None and not transports:
        out["problems"].append("no 'Using network' or channel line (NCCL_DEBUG=INFO not set, or the run ended early)")
    return out


# What a healthy fabric measures, per platform (NVIDIA's own numbers; the user's table overrides, key by key):
# GB10 through a switch, all_gather/all_reduce bus bandwidth >= 21.875 GB/s (10 in a ring); ib_write_bw per CX-7 half
# about 90 Gb/s and more (92.57 measured on NVIDIA's performance guide); every fabric port at 200000 Mb/s; each CX-7
# function's PCIe link at its capability.
FABRIC_EXPECT = {
    "GB10": {"port_speed_mbps": 200000, "rdma_write_gbps": 90.0, "nccl_busbw_gbps": {"switch": 21.875, "ring": 10.0},
             "nccl_network": "IB"},
    # DGX/HGX: no row yet (their fabrics vary: 400G InfiniBand or RoCE, rails per GPU): the user's table sets them, and
    # until then each check says `not_checked` with that reason.
}


def expectations(platform, overrides=None):
    """The platform's row merged with the user's overrides (a key set to None turns that check off)."""
    out = dict(FABRIC_EXPECT.get(platform, {}))
    out.update(overrides or {})
    return out


def _check(check, target, status, detail):
    return {"check": check, "target": target, "status": status, "detail": detail}


def judge_port_speed(host, port, parsed, expect_mbps):
    """ethtool's speed against the expected one: the seed's "a link that came up at 100G"."""
    if not expect_mbps:
        return _check("fabric_speed", port, "not_checked", "no expected speed for this platform (set the table)")
    got = parsed.get("speed_mbps")
    if got is None:
        why = "link down" if parsed.get("link_detected") is False else "; ".join(parsed.get("problems") or ["speed unknown"])
        return _check("fabric_speed", port, "fail", "%s %s: no speed (%s), expected %d Mb/s" % (host, port, why, expect_mbps))
    status = "pass" if got >= expect_mbps else "fail"
    return _check("fabric_speed", port, status, "%s %s: %d Mb/s, expected %d" % (host, port, got, expect_mbps))


def judge_pcie_links(host, links):
    """Each function's PCIe link against its capability: a BIOS that wires the second CX-7 at Gen5 x2 halves it."""
    out = []
    for ln in links:
        target = ln.get("device") or "pcie"
        if ln["problems"]:
            out.append(_check("pcie_link", target, "not_checked", "%s %s: %s" % (host, target, "; ".join(ln["problems"]))))
            continue
        detail = "%s %s: %sGT/s x%s, capable of %sGT/s x%s" % (host, target, _num(ln["speed_gts"]), ln["width"],
                                                            _num(ln["cap_speed_gts"]), ln["cap_width"])
        out.append(_check("pcie_link", target, "fail" if ln["downgraded"] else "pass", detail))
    return out


def judge_rdma_write(host, port, parsed, min_gbps):
    """ib_write_bw's average against the floor: a CX-7 that initialised degraded reads a fine link speed and moves far
    less."""
    if parsed.get("error") or parsed.get("avg_gbps") is None:
        return _check("rdma_write_bw", port, "fail", "%s %s: no bandwidth (%s)"
                      % (host, port, parsed.get("error") or "; ".join(parsed.get("problems") or [])))
    if not min_gbps:
        return _check("rdma_write_bw", port, "not_checked", "%s %s: %.2f Gb/s, no floor for this platform"
                      % (host, port, parsed["avg_gbps"]))
    status = "pass" if parsed["avg_gbps"] >= float(min_gbps) else "fail"
    return _check("rdma_write_bw", port, status, "%s %s: %.2f Gb/s, expected >= %s" % (host, port, parsed["avg_gbps"],
                                                                                        _num(min_gbps)))


def judge_nccl_transport(host, parsed, fabric_hcas, fabric_ifaces, expect="IB"):
    """NCCL's own choice against the fabric: RDMA on the fabric's HCAs, or sockets on fabric ports only. The seed's
    "wrong NIC" (NET/Socket on the management port) fails, naming what NCCL used."""
    if parsed.get("network") is None:
        return _check("nccl_transport", "nccl", "not_checked", "%s: %s" % (host, "; ".join(parsed.get("problems") or [])))
    used_hca = [d for d in parsed["ib_devices"] if d not in fabric_hcas]
    used_if = [i for i in parsed["socket_ifaces"] if i not in fabric_ifaces]
    if expect == "IB" and fabric_hcas and parsed["network"] != "IB":
        return _check("nccl_transport", "nccl", "fail", "%s: NCCL used NET/%s on %s, expected NET/IB on %s" % (
            host, parsed["network"], ", ".join(parsed["socket_ifaces"]) or "?", ", ".join(fabric_hcas)))
    if used_hca or used_if:
        return _check("nccl_transport", "nccl", "fail", "%s: NCCL used %s, not fabric devices (%s)" % (
            host, ", ".join(used_hca + used_if), ", ".join(list(fabric_hcas) + list(fabric_ifaces))))
    on = parsed["ib_devices"] if parsed["network"] == "IB" else parsed["socket_ifaces"]
    return _check("nccl_transport", "nccl", "pass", "%s: NET/%s on %s" % (host, parsed["network"], ", ".join(on) or "?"))


def _num(v):
    return ("%g" % v) if isinstance(v, float) else str(v)
