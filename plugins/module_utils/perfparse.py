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


def parse_ib_write_bw(text):
    """ib_write_bw client output -> {device, mtu, link_type, gid_index, rows: [{bytes, iterations, peak_gbps,
    avg_gbps}], avg_gbps (the last row's average), error, problems}. Bandwidth in Gb/s whatever the report unit."""
    out = {"device": None, "mtu": None, "link_type": None, "gid_index": None, "rows": [], "avg_gbps": None,
           "error": None, "problems": []}
    unit = None
    errors = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.search(r"Device\s*:\s*(\S+)", line)
        if m:
            out["device"] = m.group(1)
        m = re.match(r"Mtu\s*:\s*(\d+)", line)
        if m:
            out["mtu"] = int(m.group(1))
        m = re.match(r"Link type\s*:\s*(\S+)", line)
        if m:
            out["link_type"] = m.group(1)
        m = re.match(r"GID index\s*:\s*(\d+)", line)
        if m:
            out["gid_index"] = int(m.group(1))
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
