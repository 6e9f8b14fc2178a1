"""Slurm filters (logic in module_utils/slurm.py)."""
from __future__ import annotations

from ansible_collections.sparkfleet.cluster.plugins.module_utils import slurm


def slurmd_c(text):
    """`slurmd -C` output -> {'CPUs': 2, 'RealMemory': ..., ...}."""
    return slurm.parse_slurmd_c(text or "")


def slurm_node_line(name, addr, hw, gpus=0, memory_percent=95):
    return slurm.node_line(name, addr, hw or {}, int(gpus or 0), int(memory_percent))


def slurm_names(hosts, hostvars):
    """Inventory names -> the names Slurm knows them by (what `slurmd -C` reports, else the inventory name)."""
    out = {}
    for h in hosts:
        probe = hostvars[h].get("_slurm_probe") or {}
        out[h] = slurm.parse_slurmd_c(probe.get("stdout", "") if isinstance(probe, dict) else "").get("NodeName", h)
    return out


def slurm_versions(hosts, hostvars):
    """Inventory names -> installed Slurm version from the role's probe ('' where it is not installed)."""
    out = {}
    for h in hosts:
        probe = hostvars[h].get("_slurm_probe") or {}
        text = probe.get("stdout", "") if isinstance(probe, dict) else ""
        out[h] = next((ln[8:].strip() for ln in text.splitlines() if ln.startswith("version=")), "")
    return out


def slurm_mpi_types(probe):
    """The role's probe output (its 'mpi=' line lists the MPI plugins installed) -> ['none', 'pmi2', ...]."""
    lines = (probe or "").splitlines()
    types = next((ln[4:] for ln in lines if ln.startswith("mpi=")), "").split()
    if next((ln[8:] for ln in lines if ln.startswith("pmixlib=")), "0").strip() in ("", "0"):
        types = [t for t in types if not t.startswith("pmix")]  # plugin without its library cannot load
    return types


def slurm_mpi_auto(hosts, hostvars):
    """'pmix' where every node that runs or submits jobs has the pmix plugin and its library (Open MPI and mpi4py launch under srun
    directly), else 'pmi2', which every Slurm build has."""
    types = [slurm_mpi_types((hostvars[h].get("_slurm_probe") or {}).get("stdout", "")) for h in hosts]
    return "pmix" if types and all("pmix" in t for t in types) else "pmi2"


class FilterModule:
    def filters(self):
        return {"slurmd_c": slurmd_c, "slurm_node_line": slurm_node_line, "slurm_mpi_types": slurm_mpi_types, "slurm_mpi_auto": slurm_mpi_auto,
                "slurm_names": slurm_names, "slurm_versions": slurm_versions}
