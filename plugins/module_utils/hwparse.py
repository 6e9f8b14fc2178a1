"""Parsers for hardware tools' text output (ibstat, nvidia-smi) and sysfs RDMA state.

Plain Python, no Ansible imports: unit-tested on real outputs in tests/unit. Every parser
takes whatever the tool printed (tabs or spaces, truncated, error lines) and never raises on
bad input: it returns what it could read plus a list of problems.
"""

from __future__ import annotations

import csv
import io
import os
import re

UNSET = ("", "n/a", "[n/a]", "not supported", "[not supported]", "unknown", "[unknown error]", "none")


def clean(value):
    """Tool placeholder values ('N/A', 'Not Supported', ...) become None."""
    if value is None:
        return None
    v = str(value).strip()
    return None if v.lower() in UNSET else v


def to_float(value):
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)", str(value or ""))
    return float(m.group(1)) if m else None


def to_int(value):
    m = re.match(r"\s*([0-9]+)\s*(?:MiB)?\s*$", str(value or ""))
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------- ibstat
_CA_RE = re.compile(r"^CA\s+'([^']+)'")
_PORT_RE = re.compile(r"^Port\s+(\d+)\s*:")
_KV_RE = re.compile(r"^([A-Za-z][A-Za-z /]*?)\s*:\s*(.*)$")
_CA_KEYS = {"ca type": "ca_type", "firmware version": "firmware_version", "number of ports": "number_of_ports"}
_PORT_KEYS = {"state": "state", "physical state": "physical_state", "rate": "rate", "link layer": "link_layer"}


def parse_ibstat(text):
    """Parse `ibstat` output. Returns (cas, notes): notes are lines that were not understood
    (error lines such as `ibpanic:`/`ibwarn:`), kept for the caller's problem report."""
    cas, notes = [], []
    ca = port = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _CA_RE.match(line)
        if m:
            ca = {"name": m.group(1), "ca_type": None, "firmware_version": None, "number_of_ports": None, "ports": []}
            cas.append(ca)
            port = None
            continue
        m = _PORT_RE.match(line)
        if m and ca is not None:
            port = {"port": int(m.group(1)), "state": None, "physical_state": None, "rate_gbps": None, "link_layer": None}
            ca["ports"].append(port)
            continue
        m = _KV_RE.match(line)
        if m and ca is not None:
            key, val = m.group(1).strip().lower(), m.group(2).strip()
            if port is not None and key in _PORT_KEYS:
                if key == "rate":
                    port["rate_gbps"] = to_float(val)
                else:
                    port[_PORT_KEYS[key]] = clean(val)
            elif port is None and key in _CA_KEYS:
                ca[_CA_KEYS[key]] = to_int(val) if key == "number of ports" else clean(val)
            continue
        notes.append(line)
    for ca in cas:
        ca.pop("number_of_ports", None)
    return cas, notes


def ibstat_problems(cas, state="Active", min_rate_gbps=None, link_layer=None, devices=None):
    """Compare parsed CAs with expectations; one problem per CA/port and reason."""
    problems = []
    names = {c["name"] for c in cas}
    for dev in devices or []:
        if dev not in names:
            problems.append({"ca": dev, "port": None, "reason": "CA not found"})
    for ca in cas:
        if devices and ca["name"] not in devices:
            continue
        if not ca["ports"]:
            problems.append({"ca": ca["name"], "port": None, "reason": "no ports listed (truncated output?)"})
        for p in ca["ports"]:
            where = {"ca": ca["name"], "port": p["port"]}
            if p["state"] is None:
                problems.append(dict(where, reason="port state missing (truncated output?)"))
            elif state and p["state"].lower() != state.lower():
                problems.append(dict(where, reason="state %s, expected %s (physical state %s)"
                                     % (p["state"], state, p["physical_state"] or "unknown")))
            if min_rate_gbps is not None:
                if p["rate_gbps"] is None:
                    problems.append(dict(where, reason="rate unknown, expected >= %g Gb/s" % min_rate_gbps))
                elif p["rate_gbps"] < min_rate_gbps:
                    problems.append(dict(where, reason="rate %g Gb/s, expected >= %g Gb/s" % (p["rate_gbps"], min_rate_gbps)))
            if link_layer and (p["link_layer"] or "").lower() != link_layer.lower():
                problems.append(dict(where, reason="link layer %s, expected %s" % (p["link_layer"], link_layer)))
    return problems


# --------------------------------------------------------------------------- nvidia-smi
_GPU_RE = re.compile(r"^GPU\s+(\d+)\s*:\s*(.*?)\s*\(UUID:\s*([^)]+)\)\s*$")
_LINK_RE = re.compile(r"^Link\s+(\d+)\s*:\s*(.*)$")

NVML_ERRORS = (
    ("driver_library_mismatch", re.compile(r"driver/library version mismatch", re.I)),
    ("no_driver", re.compile(r"couldn't communicate with the nvidia driver|nvidia driver is not loaded|"
                             r"failed to initialize nvml: (?!driver/library)|libnvidia-ml\.so.*(not found|cannot open)|"
                             r"unable to load the nvidia driver|no such file or directory.*nvidia", re.I)),
    ("no_devices", re.compile(r"^no devices were found", re.I | re.M)),
)


TIMEOUT_RC = 124  # coreutils timeout: the command ran past its limit


def bounded(argv, timeout_s, timeout_bin):
    """argv under coreutils `timeout` (then KILL 5 s later): a GPU wedged by an Xid makes nvidia-smi hang, and a hung
    tool must end a check by name, not stall validation or a rolling change. Unbounded when no timeout binary."""
    if not timeout_bin or not timeout_s:
        return list(argv)
    return [timeout_bin, "-k", "5", str(int(timeout_s))] + list(argv)


def classify_nvsmi_error(text, rc, timeout_s=None):
    """nvidia-smi's output and exit code -> None or {kind, message}."""
    if rc == TIMEOUT_RC and timeout_s:
        return {"kind": "timeout", "message": "nvidia-smi did not answer within %s s (a GPU wedged by an Xid?)" % timeout_s}
    text = (text or "").strip()
    for kind, rx in NVML_ERRORS:
        if rx.search(text):
            return {"kind": kind, "message": _first_error_line(text, rx)}
    if rc not in (0, None):
        first = text.splitlines()[0][:500] if text else "no output"
        return {"kind": "other", "message": "%s (exit code %s)" % (first, rc)}
    return None


def _first_error_line(text, rx):
    for line in text.splitlines():
        if rx.search(line):
            return line.strip()[:500]
    return text.splitlines()[0][:500] if text else ""


def parse_nvlink_status(text):
    """`nvidia-smi nvlink --status` -> (gpus, notes). Empty output -> no GPUs (no NVLink)."""
    gpus, notes = [], []
    gpu = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _GPU_RE.match(line)
        if m:
            gpu = {"index": int(m.group(1)), "name": m.group(2), "uuid": m.group(3).strip(), "links": []}
            gpus.append(gpu)
            continue
        m = _LINK_RE.match(line)
        if m and gpu is not None:
            val = m.group(2).strip()
            speed = to_float(val) if re.search(r"\d", val) else None
            inactive = "inactive" in val.lower() or speed is None or speed == 0
            gpu["links"].append({"link": int(m.group(1)), "active": not inactive,
                                 "speed_gbps": None if inactive else speed, "raw": val})
            continue
        notes.append(line)
    return gpus, notes


def nvlink_problems(gpus, min_active_links=0, min_speed_gbps=None):
    problems = []
    if min_active_links and not gpus:
        problems.append({"gpu": None, "link": None,
                         "reason": "no NVLink information (expected >= %d active links per GPU)" % min_active_links})
    for g in gpus:
        active = [link for link in g["links"] if link["active"]]
        if len(active) < (min_active_links or 0):
            down = [str(link["link"]) for link in g["links"] if not link["active"]]
            problems.append({"gpu": g["index"], "link": None,
                             "reason": "%d active links, expected >= %d%s" % (
                                 len(active), min_active_links, (" (inactive: %s)" % ", ".join(down)) if down else "")})
        if min_speed_gbps is not None:
            for link in active:
                if link["speed_gbps"] is not None and link["speed_gbps"] < min_speed_gbps:
                    problems.append({"gpu": g["index"], "link": link["link"],
                                     "reason": "speed %g GB/s, expected >= %g GB/s" % (link["speed_gbps"], min_speed_gbps)})
    return problems


GPU_QUERY_FIELDS = ("index", "name", "uuid", "pci.bus_id", "memory.total", "driver_version",
                    "fabric.state", "fabric.status")


def parse_query_gpu(text, fields=GPU_QUERY_FIELDS):
    """`--query-gpu=FIELDS --format=csv[,noheader][,nounits]` -> (gpus, driver_version, notes)."""
    gpus, notes, driver = [], [], None
    for line in (text or "").splitlines():
        try:
            row = next(csv.reader(io.StringIO(line.replace("\0", "")), skipinitialspace=True), [])
        except csv.Error:
            notes.append(line.strip()[:300])
            continue
        if not row or not "".join(row).strip():
            continue
        if row[0].strip().lower() == fields[0] or row[0].strip().lower().startswith("index"):
            continue  # header line
        if len(row) != len(fields) or not re.fullmatch(r"\d+", row[0].strip()):
            notes.append(", ".join(row).strip())
            continue
        rec = dict(zip(fields, (c.strip() for c in row), strict=False))
        driver = driver or clean(rec.get("driver_version"))
        gpus.append({
            "index": int(rec["index"]),
            "name": clean(rec.get("name")),
            "uuid": clean(rec.get("uuid")),
            "pci_bus_id": clean(rec.get("pci.bus_id")),
            "memory_total_mib": to_int(rec.get("memory.total")),
            "fabric_state": clean(rec.get("fabric.state")),
            "fabric_status": clean(rec.get("fabric.status")),
        })
    return gpus, driver, notes


def parse_cuda_version(text):
    """CUDA version from `nvidia-smi --version` or the header of plain `nvidia-smi`."""
    m = re.search(r"CUDA Version\s*:?\s*([0-9]+\.[0-9]+)", text or "")
    return m.group(1) if m else None


def unknown_field(text):
    """Name of the field an older nvidia-smi rejected, or None."""
    m = re.search(r'Field "([^"]+)" is not a valid field to query', text or "")
    return m.group(1) if m else None


# --------------------------------------------------------------------------- sysfs RDMA
def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _state_word(value):
    """sysfs '4: ACTIVE' -> 'ACTIVE'; '5: LinkUp' -> 'LinkUp'."""
    if value is None:
        return None
    return value.split(":", 1)[1].strip() if ":" in value else value


def _gid_ipv4(gid):
    """'0000:0000:0000:0000:0000:ffff:c0a8:640a' -> '192.168.100.10' (IPv4-mapped GIDs)."""
    parts = (gid or "").split(":")
    if len(parts) != 8 or [p.lower() for p in parts[:6]] != ["0000"] * 5 + ["ffff"]:
        return None
    try:
        b = bytes.fromhex(parts[6] + parts[7])
    except ValueError:
        return None
    return ".".join(str(x) for x in b)


def read_rdma_sysfs(root="/sys"):
    """Read /sys/class/infiniband: devices, ports, netdevs and the RoCE v2 GID index."""
    base = os.path.join(root, "class", "infiniband")
    devices = []
    if not os.path.isdir(base):
        return devices
    for dev in sorted(os.listdir(base)):
        ddir = os.path.join(base, dev)
        netdir = os.path.join(ddir, "device", "net")
        netdevs = sorted(os.listdir(netdir)) if os.path.isdir(netdir) else []
        ports = []
        pdir = os.path.join(ddir, "ports")
        for pname in sorted(os.listdir(pdir), key=lambda s: int(s) if s.isdigit() else 0) if os.path.isdir(pdir) else []:
            if not pname.isdigit():
                continue
            pp = os.path.join(pdir, pname)
            gids = []
            gdir = os.path.join(pp, "gids")
            for idx in sorted(os.listdir(gdir), key=lambda s: int(s) if s.isdigit() else 0) if os.path.isdir(gdir) else []:
                if not idx.isdigit():
                    continue
                gid = _read(os.path.join(gdir, idx))
                if not gid or re.fullmatch(r"[0:]+", gid):
                    continue
                gids.append({"index": int(idx), "gid": gid,
                             "type": _read(os.path.join(pp, "gid_attrs", "types", idx)),
                             "ndev": _read(os.path.join(pp, "gid_attrs", "ndevs", idx)),
                             "ipv4": _gid_ipv4(gid)})
            v2 = [g for g in gids if (g["type"] or "").lower().replace(" ", "") == "rocev2"]
            v2_ipv4 = [g for g in v2 if g["ipv4"]]
            pick = (v2_ipv4 or v2 or [None])[0]
            netdev = next((g["ndev"] for g in gids if g["ndev"]), None) or (netdevs[0] if netdevs else None)
            ports.append({
                "port": int(pname),
                "state": _state_word(_read(os.path.join(pp, "state"))),
                "physical_state": _state_word(_read(os.path.join(pp, "phys_state"))),
                "rate_gbps": to_float(_read(os.path.join(pp, "rate"))),
                "link_layer": _read(os.path.join(pp, "link_layer")),
                "netdev": netdev,
                "roce_v2_gid_index": pick["index"] if pick else None,
                "ipv4": pick["ipv4"] if pick else None,
                "gids": gids,
            })
        devices.append({"name": dev, "netdevs": netdevs, "ports": ports})
    return devices


def cas_from_sysfs(devices):
    """read_rdma_sysfs() devices -> CAs shaped as parse_ibstat() gives them, so ibstat_problems() judges either. ibstat
    reads these same sysfs files (through libibumad): the kernel's view without the tool."""
    return [{"name": d["name"], "ca_type": None, "firmware_version": None,
             "ports": [{"port": p["port"], "state": (p.get("state") or "").capitalize() or None,
                        "physical_state": p.get("physical_state"), "rate_gbps": p.get("rate_gbps"),
                        "link_layer": p.get("link_layer")} for p in d.get("ports") or []]}
            for d in devices or []]


# --------------------------------------------------------------------------- PCI / platform
NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")  # VGA, 3D controller (class code prefix)
NVSWITCH_CLASS = "0x0680"  # "bridge, other": how NVSwitches enumerate


def read_nvidia_pci(root="/sys"):
    """NVIDIA GPUs and NVSwitches from /sys/bus/pci/devices (no lspci needed)."""
    base = os.path.join(root, "bus", "pci", "devices")
    gpus, switches = [], []
    if not os.path.isdir(base):
        return gpus, switches
    for addr in sorted(os.listdir(base)):
        d = os.path.join(base, addr)
        if (_read(os.path.join(d, "vendor")) or "").lower() != NVIDIA_VENDOR:
            continue
        cls = (_read(os.path.join(d, "class")) or "").lower()
        rec = {"address": addr, "device_id": (_read(os.path.join(d, "device")) or "").lower(), "class": cls}
        if cls.startswith(GPU_CLASSES):
            gpus.append(rec)
        elif cls.startswith(NVSWITCH_CLASS):
            switches.append(rec)
    return gpus, switches


def parse_os_release(text):
    """KEY=VALUE files (/etc/os-release, /etc/dgx-release) -> dict, quotes removed."""
    out = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, _, v = line.partition("=")
        out[k.strip()] = v.strip().strip('"').strip("'")
    return out
