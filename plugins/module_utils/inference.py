# The inference layer's plain logic: the Python environment's lock, fleet consistency, vLLM's command line.
# No Ansible imports: modules, filters and unit tests all use it.
from __future__ import annotations

import json
import math
import re
from collections import Counter

_PIN_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")
# Installed by venv itself, never part of a lock.
VENV_BASE = frozenset({"pip", "setuptools", "wheel", "pkg-resources"})


def canonical(name):
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def parse_lock(text):
    """A hash-pinned requirements file -> {canonical name: version}. Every requirement must be `name==version`."""
    pins, errors = {}, []
    joined = re.sub(r"\\\n", " ", text or "")
    for n, line in enumerate(joined.splitlines(), 1):
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("--hash") else line.strip()
        if not line or line.startswith("--"):
            continue
        m = _PIN_RE.match(line)
        if not m:
            errors.append("line %d: %r is not pinned as name==version" % (n, line[:80]))
            continue
        if "--hash=" not in line:
            errors.append("line %d: %s has no --hash" % (n, m.group(1)))
        pins[canonical(m.group(1))] = m.group(3)
    return pins, errors


def env_diff(locked, installed):
    """What differs between a lock and an environment's installed distributions -> sorted list of lines."""
    inst = {canonical(k): v for k, v in (installed or {}).items() if canonical(k) not in VENV_BASE}
    out = []
    for name in sorted(set(locked) | set(inst)):
        want, have = locked.get(name), inst.get(name)
        if want == have:
            continue
        if have is None:
            out.append("%s: %s missing" % (name, want))
        elif want is None:
            out.append("%s: %s installed, not in the lock" % (name, have))
        else:
            out.append("%s: %s installed, lock says %s" % (name, have, want))
    return out


# Compared across every node (a node without it differs from one with it) / only among nodes that have it (GPU nodes).
FLEET_EVERYWHERE = ("python", "ray", "vllm", "torch", "nccl")
FLEET_WHERE_PRESENT = ("driver", "cuda")


def fleet_consistency(versions_by_host):
    """{host: {component: version or None}} -> {host: [check]}: each component's version against the majority.

    A node that differs is named with its version and the majority version (a tie goes to the version that sorts
    first, so the answer is stable)."""
    hosts = sorted(versions_by_host)
    out = {h: [] for h in hosts}
    for comp in FLEET_EVERYWHERE + FLEET_WHERE_PRESENT:
        vals = {h: (versions_by_host[h] or {}).get(comp) for h in hosts}
        if comp in FLEET_WHERE_PRESENT:
            vals = {h: v for h, v in vals.items() if v}
        elif not any(vals.values()):
            continue  # nowhere installed: nothing to compare (vLLM on CPU-only clusters)
        if not vals:
            continue
        counts = Counter(str(v) if v else "not installed" for v in vals.values())
        majority, n = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        agree = sorted(h for h, v in vals.items() if (str(v) if v else "not installed") == majority)
        for h, v in vals.items():
            mine = str(v) if v else "not installed"
            if len(counts) == 1:
                out[h].append(_check(comp, "pass", "%s on all %d nodes" % (mine, len(vals))))
            elif mine == majority:
                out[h].append(_check(comp, "pass", "%s, the majority (%d of %d nodes)" % (mine, n, len(vals))))
            else:
                out[h].append(_check(comp, "fail", "%s has %s %s; the majority has %s (%s)"
                                     % (h, comp, mine, majority, ", ".join(agree))))
    return out


def _check(comp, status, detail):
    return {"check": "fleet_version", "target": comp, "status": status, "detail": detail}


def vllm_parallelism(nodes, gpus_per_node, tensor=None, pipeline=None, max_tensor_nodes=4):
    """(tensor, pipeline) for vLLM over `nodes` nodes of `gpus_per_node` GPUs each; explicit values win.

    Several GPUs per node: tensor parallel inside the node (NVLink), pipeline across nodes. One GPU per node (DGX
    Spark): tensor parallel across up to `max_tensor_nodes` nodes (a power of two dividing the count, as attention
    heads need), pipeline parallel over the rest - 2 Sparks: TP 2; 8 Sparks: TP 4 x PP 2."""
    nodes, gpus = int(nodes), int(gpus_per_node)
    if nodes < 1 or gpus < 1:
        raise ValueError("vLLM needs at least one node with a GPU (nodes=%s, gpus_per_node=%s)" % (nodes, gpus))
    if gpus > 1:
        tp, pp = gpus, nodes
    else:
        tp = 1
        while tp * 2 <= min(nodes, max_tensor_nodes) and nodes % (tp * 2) == 0:
            tp *= 2
        pp = nodes // tp
    tp, pp = int(tensor or tp), int(pipeline or pp)
    if tp * pp > nodes * gpus:
        raise ValueError("tensor %d x pipeline %d = %d GPUs, the cluster has %d" % (tp, pp, tp * pp, nodes * gpus))
    return tp, pp


def unified_memory(gpus):
    """True when a GPU reports no memory of its own: nvidia-smi's memory.total [N/A] / "Not Supported" on GB10, whose
    GPU shares the node's LPDDR5x with the CPU (gpu_facts reads that as memory_total_mib null)."""
    return any(g.get("memory_total_mib") is None for g in gpus or [])


def vllm_memory_fraction(unified, memtotal_mb, explicit=None, unified_max=0.8, os_reserve_gib=16, dedicated=0.9):
    """--gpu-memory-utilization. Explicit wins. Dedicated GPU memory: `dedicated`. Unified memory (GB10): what leaves
    the OS `os_reserve_gib`, at most `unified_max` (free memory caps near 102 of 121.7 GiB on a Spark; NVIDIA's recipes
    use 0.8: 0.9 runs out of memory), at least 0.1."""
    if explicit not in (None, ""):
        return float(explicit)
    if not unified:
        return float(dedicated)
    total_gib = float(memtotal_mb or 0) / 1024
    room = 1 - float(os_reserve_gib) / total_gib if total_gib > 0 else unified_max
    return round(max(0.1, min(float(unified_max), room)), 2)


def vllm_env(nodes, gpus_per_node, unified):
    """Environment of the vLLM server for its Ray workers. One GPU per node (DGX Spark): Ray's default PACK placement
    wants every GPU of the group on one node and never fits, so SPREAD. Unified memory: Ray's memory monitor counts
    the GPU's allocation as host memory and kills the workers, so it is off."""
    env = {}
    if int(nodes) > 1 and int(gpus_per_node) == 1:
        env["VLLM_DISTRIBUTED_EXECUTOR_CONFIG"] = json.dumps({"placement_group_options": {"strategy": "SPREAD"}},
                                                             separators=(",", ":"))
    if unified:
        env["RAY_memory_monitor_refresh_ms"] = "0"
    return env


def vllm_argv(binary, model_path, served_name, host, port, nodes, gpus_per_node, tensor=None, pipeline=None,
              gpu_memory_utilization=0.9, max_model_len=None, extra_args=(), max_tensor_nodes=4):
    """The exact command line of `vllm serve` on the Ray head."""
    tp, pp = vllm_parallelism(nodes, gpus_per_node, tensor, pipeline, max_tensor_nodes)
    argv = [binary, "serve", model_path, "--served-model-name", served_name, "--host", host, "--port", str(port),
            "--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp),
            "--gpu-memory-utilization", str(gpu_memory_utilization)]
    # One node and one GPU needs no Ray; everything else runs its workers through the Ray cluster.
    if tp * pp > 1:
        argv += ["--distributed-executor-backend", "ray"]
    if max_model_len:
        argv += ["--max-model-len", str(max_model_len)]
    return argv + [str(a) for a in extra_args]


def latency_percentiles(lines, quantiles=(0.5, 0.95, 0.99)):
    """Gateway access-log lines (JSON, request_time in seconds) -> {count, p50, p95, p99} of the proxied requests."""
    times = []
    for line in lines:
        try:
            rec = json.loads(line)
            times.append(float(rec["request_time"]))
        except (ValueError, KeyError, TypeError):
            continue
    times.sort()
    out = {"count": len(times)}
    for q in quantiles:
        key = "p%d" % round(q * 100)
        out[key] = times[max(0, math.ceil(q * len(times)) - 1)] if times else None  # nearest rank
    return out
