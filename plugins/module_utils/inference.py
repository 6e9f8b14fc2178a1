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


VLLM_LAYOUTS = ("auto", "replicas", "tensor", "tensor_pipeline")
VLLM_EXECUTORS = ("ray", "native")
# Weights are not all an engine needs: KV cache, activations and CUDA graphs. A model "fits" a group of nodes when
# its files take at most this share of the memory vLLM may use there.
VLLM_WEIGHTS_SHARE = 0.75


def vllm_plan(hosts, gpus_per_node, layout="auto", model_gib=None, node_gib=None, memory_fraction=0.9,
              tensor=None, pipeline=None, max_tensor_nodes=4):
    """How vLLM spreads over the GPU nodes `hosts` (inventory order) -> {layout, tensor, pipeline, group_nodes,
    replicas, groups, idle, why}.

    - replicas: one engine per node (TP = the node's GPUs), all behind the gateway: for a model that fits one node,
      independent replicas beat tensor parallelism at high concurrency (gpt-oss-120b on 2 Sparks: 568 tok/s against
      472 for TP 2 at concurrency 64).
    - tensor: one engine, tensor parallel over every GPU of every node (TP 8 on 8 Sparks).
    - tensor_pipeline: one engine, tensor parallel over up to `max_tensor_nodes` one-GPU nodes (or inside a multi-GPU
      node), pipeline parallel over the rest (TP 4 x PP 2 on 8 Sparks).
    - auto: the smallest power-of-two group of nodes that holds the model (its files within VLLM_WEIGHTS_SHARE of the
      memory vLLM may use there), one replica per group; replicas when it fits one node; tensor_pipeline over all
      nodes when its size is not known.
    Explicit tensor/pipeline sizes win: groups of that many GPUs."""
    hosts = list(hosts)
    n, g = len(hosts), int(gpus_per_node or 0)
    if n < 1 or g < 1:
        raise ValueError("vLLM needs at least one node with a GPU (nodes=%s, gpus_per_node=%s)" % (n, gpus_per_node))
    if layout not in VLLM_LAYOUTS:
        raise ValueError("layout %r is not one of %s" % (layout, ", ".join(VLLM_LAYOUTS)))
    why = ""
    if tensor or pipeline:
        tp, pp = int(tensor or 1), int(pipeline or 1)
        k = max(1, -(-(tp * pp) // g))
        if k > n:
            raise ValueError("tensor %d x pipeline %d = %d GPUs, the cluster has %d" % (tp, pp, tp * pp, n * g))
        layout, why = "explicit", "tensor %d x pipeline %d as set" % (tp, pp)
    else:
        if layout == "auto":
            per_node = float(node_gib or 0) * float(memory_fraction) * VLLM_WEIGHTS_SHARE
            if not model_gib or per_node <= 0:
                layout, k = "tensor_pipeline", n
                why = "model size not known: one engine over all %d nodes" % n
            else:
                k = 1
                while k * per_node < float(model_gib) and k * 2 <= n:
                    k *= 2
                fits = k * per_node >= float(model_gib)
                layout = "replicas" if k == 1 and fits else "tensor_pipeline"
                if not fits:
                    k = n
                why = ("%.0f GiB of weights %s %d node(s) of %.0f GiB for weights each"
                       % (float(model_gib), "fit" if fits else "do NOT fit even", k, per_node))
        elif layout == "replicas":
            k, why = 1, "one engine per node, as set"
        else:
            k, why = n, "one engine over all %d nodes, as set" % n
        if layout == "replicas":
            tp, pp = g, 1
        elif layout == "tensor":
            tp, pp = k * g, 1
        else:
            tp, pp = vllm_parallelism(k, g, max_tensor_nodes=max_tensor_nodes)
    replicas = n // k
    groups = [hosts[i * k:(i + 1) * k] for i in range(replicas)]
    return {"layout": layout, "tensor": tp, "pipeline": pp, "group_nodes": k, "replicas": replicas,
            "groups": groups, "idle": hosts[replicas * k:], "why": why}


def vllm_command(plan, host, prefix, model_path, served_name, listen, port, master_addrs, executor="ray",
                 master_port=29501, gpu_memory_utilization=0.9, max_model_len=None, extra_args=()):
    """The exact `vllm serve` command line of `host` in `plan` ([] where it runs no part).

    `prefix` runs vLLM (the venv's [.../bin/vllm], or `docker run ... IMAGE vllm`). `master_addrs` maps a group's
    first node to the address its ranks meet at (the fabric). A group of one node needs no executor across nodes;
    Ray: the group's first node runs the server and Ray starts the workers; native: every node of the group runs
    `vllm serve` with --nnodes/--node-rank/--master-addr, those after the first --headless (no API)."""
    if executor not in VLLM_EXECUTORS:
        raise ValueError("executor %r is not one of %s" % (executor, ", ".join(VLLM_EXECUTORS)))
    group = next((gr for gr in plan["groups"] if host in gr), None)
    if group is None:
        return []
    rank, k = group.index(host), len(group)
    if executor == "ray" and rank > 0:
        return []  # Ray starts this node's workers from the group's first node
    tp, pp = plan["tensor"], plan["pipeline"]
    argv = list(prefix) + ["serve", model_path, "--served-model-name", served_name]
    if rank == 0:
        argv += ["--host", listen, "--port", str(port)]
    argv += ["--tensor-parallel-size", str(tp), "--pipeline-parallel-size", str(pp),
             "--gpu-memory-utilization", str(gpu_memory_utilization)]
    if k > 1 and executor == "ray":
        argv += ["--distributed-executor-backend", "ray"]
    elif k > 1:
        argv += ["--distributed-executor-backend", "mp", "--nnodes", str(k), "--node-rank", str(rank),
                 "--master-addr", str(master_addrs[group[0]]), "--master-port", str(master_port)]
        if rank > 0:
            argv.append("--headless")
    elif tp * pp > 1:
        argv += ["--distributed-executor-backend", "mp"]  # several GPUs of one node
    if max_model_len:
        argv += ["--max-model-len", str(max_model_len)]
    return argv + [str(a) for a in extra_args]


def vllm_container_prefix(image, name="sparkfleet-vllm", models_root="/models", env_file="/etc/sparkfleet/vllm.env",
                          rdma=False, shm_gib=16, extra=()):
    """`docker run` for NVIDIA's vLLM image, as NVIDIA's Spark guide runs it: all GPUs, the host's network (NCCL
    and the API on the node's own addresses) and IPC, the models read-only, the fabric's /etc/nccl.conf."""
    argv = ["/usr/bin/docker", "run", "--rm", "--name", name, "--gpus", "all", "--network", "host", "--ipc", "host",
            "--shm-size", "%dg" % int(shm_gib), "--ulimit", "memlock=-1", "--ulimit", "stack=67108864",
            "--env-file", env_file, "-v", "%s:%s:ro" % (models_root, models_root), "-v", "/etc/nccl.conf:/etc/nccl.conf:ro"]
    if rdma:
        argv += ["--device", "/dev/infiniband", "--cap-add", "IPC_LOCK"]
    return argv + [str(a) for a in extra] + [image, "vllm"]


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
