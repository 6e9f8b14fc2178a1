"""Slurm text parsers and the node lines of slurm.conf (plain Python; unit-tested in tests/unit/test_slurm.py)."""
from __future__ import annotations

import re

# Node states a job can land on (Slurm appends * for not responding, ~ for powered off, and so on).
USABLE_STATES = {"idle", "mixed", "mix", "allocated", "alloc", "completing", "comp"}


def parse_slurmd_c(text: str) -> dict:
    """`slurmd -C` first line -> {'NodeName': 'n1', 'CPUs': 2, 'RealMemory': 24105, ...} (numbers as int)."""
    line = next((ln for ln in text.splitlines() if ln.startswith("NodeName=")), "")
    out: dict = {}
    for key, value in re.findall(r"(\w+)=(\S+)", line):
        out[key] = int(value) if value.isdigit() else value
    return out


def node_line(name: str, addr: str, hw: dict, gpus: int = 0, memory_percent: int = 95, features=()) -> str:
    """One NodeName line. The layout comes from slurmd -C (what slurmd itself reports, so the node never
    drains for 'Low socket*core*thread count'); memory keeps memory_percent of it for the scheduler."""
    parts = [f"NodeName={name}", f"NodeAddr={addr}"]
    for key in ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore"):
        if key in hw:
            parts.append(f"{key}={hw[key]}")
    if "RealMemory" in hw:
        parts.append(f"RealMemory={max(1, int(hw['RealMemory']) * memory_percent // 100)}")
    if gpus:
        parts.append(f"Gres=gpu:{gpus}")
    if features:
        parts.append("Features=" + ",".join(features))
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


def parse_srun_mpi_list(text: str) -> list[str]:
    """`srun --mpi=list` -> ['none', 'pmi2', 'pmix', ...] (22.05 prints 'MPI plugin types are...' then one per line;
    23.x adds 'specific pmix plugin versions available: pmix_v4')."""
    types = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.endswith(":") or line.lower().startswith(("mpi plugin", "specific")):
            continue
        types.extend(t.strip() for t in line.split(",") if re.fullmatch(r"[a-z0-9_]+", t.strip()))
    return types
