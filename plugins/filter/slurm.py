"""Slurm filters (logic in module_utils/slurm.py)."""
from __future__ import annotations

from ansible_collections.sparkfleet.cluster.plugins.module_utils import slurm


def slurm_probes(hosts, hostvars, others=None):
    """Parsed probes: {host: {...}} from the play's hosts (_slurm_probe) and from the delegated probe of the
    nodes outside --limit (others: its registered loop result). Every node line needs its node's numbers."""
    out = {}
    for h in hosts:
        probe = hostvars[h].get("_slurm_probe") or {}
        if "stdout" in probe:
            out[h] = slurm.parse_probe(probe["stdout"])
    for r in (others or {}).get("results", []):
        if "stdout" in r:
            out[r["item"]] = slurm.parse_probe(r["stdout"])
    return out


def slurm_node_line(name, addr, probe, memory_percent=95):
    probe = probe or {}
    return slurm.node_line(name, addr, probe.get("hw", {}), int(probe.get("gpus", 0)), int(memory_percent),
                           hostname=probe.get("hostname", ""))


def slurm_mpi_auto(hosts, probes):
    """pmix only when every host was probed and can load it."""
    return slurm.mpi_default([probes[h] for h in hosts] if all(h in probes for h in hosts) else [])


def munge_checks(hosts, hostvars, reference, reference_digest=None):
    """Per host, the munge_key check: its key's sha256 (the validate role's node_checks, checksums) against the
    reference host's. A node with another key cannot talk to slurmctld: its jobs fail with 'Invalid authentication
    credential'. Hosts where the key was not read (not Slurm, not reached) get no check. reference_digest: the
    reference's sha256 read apart, when the reference host is outside the play (`--limit` to compute nodes)."""
    key = "/etc/munge/munge.key"

    def sums(h):
        return ((hostvars[h].get("_validate_node") or {}).get("checksums")) or {}

    def digest(h):
        return sums(h).get(key)
    ref = digest(reference) if key in sums(reference) else reference_digest
    out = {}
    for h in hosts:
        if key not in sums(h):
            continue
        mine = digest(h)
        if ref is None:
            status, detail = "fail", f"no key on the control node {reference}"
        elif mine is None:
            status, detail = "fail", "no key on this node"
        elif mine != ref:
            status, detail = "fail", f"differs from the control node's ({reference}); run the scheduler layer to put the cluster key back"
        else:
            status, detail = "pass", "same key as the control node"
        out[h] = [{"check": "munge_key", "target": "/etc/munge/munge.key", "status": status, "detail": detail}]
    return out


def slurm_drain_reasons(hosts, hostvars, extra=None):
    """Node (Slurm knows nodes by their inventory names) -> 'check target: detail' of its first failed per-node check
    (hardware, node checks, the given extra per-host checks); nodes without a failure are left out (and resumed if
    we drained them)."""
    extra = extra or {}
    out = {}
    for h in hosts:
        hv = hostvars[h]
        if "checks" not in (hv.get("_validate_node") or {}):
            continue  # no result (unreachable): slurmctld marks it down by itself
        checks = list(hv.get("hardware_check_results") or []) + hv["_validate_node"]["checks"] + extra.get(h, [])
        bad = next((c for c in checks if c.get("status") == "fail"), None)
        if bad:
            out[h] = f"{bad['check']} {bad.get('target', '')}: {bad.get('detail', '')}".strip()
    return out


def min_gpus(hosts, hostvars):
    """The fewest GPUs any of the hosts has, from gpu_facts (0 where it found none or did not run, or no hosts)."""
    return min((len(((hostvars[h].get("ansible_facts") or {}).get("nvidia") or {}).get("gpus") or []) for h in hosts), default=0)


class FilterModule:
    def filters(self):
        return {"slurm_probes": slurm_probes, "slurm_node_line": slurm_node_line, "slurm_mpi_auto": slurm_mpi_auto,
                "munge_checks": munge_checks, "min_gpus": min_gpus, "slurm_drain_reasons": slurm_drain_reasons}
