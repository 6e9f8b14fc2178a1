"""Slurm text parsers and the node lines of slurm.conf (plain Python; unit-tested in tests/unit/test_slurm.py)."""
from __future__ import annotations

import re
import subprocess


def run(argv, timeout):
    """(rc, stdout, stderr) of a Slurm command; a timeout is rc 124 and a missing tool rc 127, never an exception."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return res.returncode, res.stdout, res.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout}s"
    except OSError as exc:
        return 127, "", str(exc)


# Node states a job can land on (Slurm appends * for not responding, ~ for powered off, and so on).
USABLE_STATES = {"idle", "mixed", "mix", "allocated", "alloc", "completing", "comp"}


def parse_slurmd_c(text: str) -> dict:
    """`slurmd -C` first line -> {'NodeName': 'n1', 'CPUs': 2, 'RealMemory': 24105, ...} (numbers as int)."""
    line = next((ln for ln in text.splitlines() if ln.startswith("NodeName=")), "")
    out: dict = {}
    for key, value in re.findall(r"(\w+)=(\S+)", line):
        out[key] = int(value) if value.isdigit() else value
    return out


def node_line(name: str, addr: str, hw: dict, gpus: int = 0, memory_percent: int = 95, hostname: str = "") -> str:
    """One NodeName line. The layout comes from slurmd -C (what slurmd itself reports, so the node never
    drains for 'Low socket*core*thread count'); memory keeps memory_percent of it for the scheduler. Slurm knows the
    node by its inventory name; NodeHostname is the machine's own name where that differs (slurmd finds its line by it)."""
    parts = [f"NodeName={name}"] + ([f"NodeHostname={hostname}"] if hostname and hostname != name else []) + [f"NodeAddr={addr}"]
    for key in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore"):
        if key in hw:
            parts.append(f"{key}={hw[key]}")
    if "RealMemory" in hw:
        parts.append(f"RealMemory={max(1, int(hw['RealMemory']) * memory_percent // 100)}")
    if gpus:
        parts.append(f"Gres=gpu:{gpus}")
    parts.append("State=UNKNOWN")
    return " ".join(parts)


def parse_sinfo_nodes(text: str) -> dict:
    """`sinfo -N -h -o '%N|%T|%E'` -> {node: {'state': 'idle', 'flags': '', 'reason': ''}} (one entry per node
    even when it sits in several partitions)."""
    nodes: dict = {}
    for line in text.splitlines():
        if "|" not in line:
            continue
        name, state, reason = (line.split("|", 2) + ["", ""])[:3]
        raw = state.strip().lower()
        base = raw.rstrip("*~#!%$@^-+")
        nodes[name.strip()] = {"state": base, "flags": raw[len(base):], "reason": "" if reason.strip() == "none" else reason.strip()}
    return nodes


def usable(entry: dict) -> bool:
    """Jobs can run there: a usable state and not marked not-responding (*)."""
    return entry["state"] in USABLE_STATES and "*" not in entry["flags"]


def parse_probe(text: str) -> dict:
    """The slurm role's probe (key=value lines, then `slurmd -C`) -> {'version', 'mpi', 'nvml', 'gpus', 'hostname', 'hw'}.
    'mpi' lists the MPI plugins this node can load: pmix only where its library (libpmix.so) is there too."""
    kv = dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln and not ln.startswith("NodeName="))
    mpi = kv.get("mpi", "").split()
    if kv.get("pmixlib", "0").strip() in ("", "0"):
        mpi = [t for t in mpi if not t.startswith("pmix")]
    gpus = kv.get("gpus", "0").strip()
    return {"version": kv.get("version", "").strip(), "mpi": mpi, "nvml": bool(kv.get("nvml", "").strip()),
            "gpus": int(gpus) if gpus.isdigit() else 0, "hostname": kv.get("hostname", "").strip(), "hw": parse_slurmd_c(text)}


def mpi_default(probes: list[dict]) -> str:
    """pmix where every node has it (Open MPI and mpi4py launch under srun directly), else pmi2 (in every Slurm)."""
    return "pmix" if probes and all("pmix" in p["mpi"] for p in probes) else "pmi2"


_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output prefix
# Recorded on an H100 with NCCL 2.28 (tests/fixtures/nccl-tests/*h100-1gpu*): "... NCCL WARN Bootstrap : no socket
# interface found", "vm: Test NCCL failure common.cu:1550 'invalid usage ...'", "Invalid number of GPUs: 2 requested ...".
_NCCL_ERROR = re.compile(r"NCCL WARN (?P<warn>.+)$|(?P<other>Test (?:NCCL |CUDA )?failure .+|Invalid number of GPUs.+)$")


def parse_nccl_tests(text: str) -> dict:
    """nccl-tests output (all_reduce_perf and friends) -> {'ranks': n, 'hosts': [...], 'rows': [{size, busbw, wrong}],
    'peak_busbw': GB/s of the best out-of-place row, 'avg_busbw': the tool's own average, 'wrong': total #wrong}.
    Rows are read from the right (time algbw busbw #wrong [time algbw busbw #wrong]), which holds across versions
    with and without the root column and without the in-place half. 'errors': why a run stopped, in NCCL's and the
    tool's own words (NCCL WARN lines, "Test ... failure", "Invalid number of GPUs"), at most 5."""
    ranks, hosts, rows, avg, errors = 0, [], [], None, []
    for raw in text.splitlines():
        line = _TAG.sub("", raw).rstrip()
        m = _NCCL_ERROR.search(line)
        if m and len(errors) < 5:
            msg = (m.group("warn") or m.group("other")).strip()
            if msg not in errors:
                errors.append(msg)
            continue
        m = re.match(r"#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)", line)
        if m:
            ranks += 1
            if m.group(2) not in hosts:
                hosts.append(m.group(2))
            continue
        m = re.match(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)", line)
        if m:
            avg = float(m.group(1))
            continue
        cols = line.split()
        if not cols or not cols[0].isdigit() or len(cols) < 8:
            continue
        try:
            halves = [cols[-8:-4], cols[-4:]] if len(cols) >= 12 else [cols[-4:]]
            busbw = [float(h[2]) for h in halves]
            wrong = sum(int(float(h[3])) if h[3] not in ("N/A",) else 0 for h in halves)
        except ValueError:
            continue
        rows.append({"size": int(cols[0]), "busbw": busbw[0], "wrong": wrong})
    return {"ranks": ranks, "hosts": hosts, "rows": rows, "avg_busbw": avg,
            "peak_busbw": max((r["busbw"] for r in rows), default=None), "wrong": sum(r["wrong"] for r in rows),
            "errors": errors}
