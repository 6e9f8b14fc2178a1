"""Kubernetes helpers as plain Python: the pinned Flannel manifest made ours (pod CIDR, the interface it uses), and
the verdicts of the validation checks read from `kubectl get nodes -o json`. Unit-tested on the controller."""
from __future__ import annotations

import json

GPU_RESOURCE = "nvidia.com/gpu"


class ManifestError(Exception):
    """The manifest lacks what we patch (named in the message)."""


def flannel_patch(docs: list[dict], pod_cidr: str, iface_can_reach: str = "", iface: str = "") -> list[dict]:
    """Flannel's released manifest with net-conf.json's Network set to the pod CIDR and flanneld pinned to one
    network: --iface (a name or address) or --iface-can-reach (the interface that reaches the control node)."""
    out, cfg_seen, ds_seen = [], False, False
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        doc = json.loads(json.dumps(doc))  # a copy
        kind = doc.get("kind")
        if kind == "ConfigMap" and "net-conf.json" in (doc.get("data") or {}):
            conf = json.loads(doc["data"]["net-conf.json"])
            conf["Network"] = pod_cidr
            doc["data"]["net-conf.json"] = json.dumps(conf, indent=2) + "\n"
            cfg_seen = True
        elif kind == "DaemonSet":
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if c.get("name") != "kube-flannel":
                    continue
                args = [a for a in c.get("args", []) if not a.startswith(("--iface=", "--iface-can-reach=", "--iface-regex="))]
                if iface:
                    args.append(f"--iface={iface}")
                elif iface_can_reach:
                    args.append(f"--iface-can-reach={iface_can_reach}")
                c["args"] = args
                ds_seen = True
        out.append(doc)
    if not cfg_seen:
        raise ManifestError("no ConfigMap with net-conf.json (is this Flannel's kube-flannel.yml?)")
    if not ds_seen:
        raise ManifestError("no DaemonSet with a kube-flannel container (is this Flannel's kube-flannel.yml?)")
    return out


def _condition(node: dict, kind: str) -> dict:
    return next((c for c in node.get("status", {}).get("conditions", []) if c.get("type") == kind), {})


def node_checks(nodes_json: str, expected_gpus: dict[str, int]) -> dict[str, list[dict]]:
    """Per inventory node: registered and Ready, and nvidia.com/gpu allocatable equal to its GPU count.
    expected_gpus maps inventory names (Kubernetes node names) to GPU counts."""
    try:
        items = {n["metadata"]["name"]: n for n in json.loads(nodes_json).get("items", [])}
    except (ValueError, KeyError, TypeError) as e:
        return {h: [{"check": "kube_node_ready", "target": h, "status": "fail",
                     "detail": f"kubectl get nodes gave no node list: {e}"}] for h in expected_gpus}
    out = {}
    for host, gpus in expected_gpus.items():
        node = items.get(host)
        if node is None:
            out[host] = [{"check": "kube_node_ready", "target": host, "status": "fail",
                          "detail": "not registered with the API server (kubeadm join did not complete?)"}]
            continue
        ready = _condition(node, "Ready")
        checks = [{"check": "kube_node_ready", "target": host,
                   "status": "pass" if ready.get("status") == "True" else "fail",
                   "detail": f"Ready={ready.get('status', 'unknown')}" + (f" ({ready.get('reason')}: {ready.get('message', '')})"
                                                                         if ready.get("status") != "True" else "")}]
        if gpus > 0:
            have = node.get("status", {}).get("allocatable", {}).get(GPU_RESOURCE, "0")
            try:
                have_n = int(have)
            except ValueError:
                have_n = -1
            checks.append({"check": "kube_gpu_allocatable", "target": host,
                           "status": "pass" if have_n == gpus else "fail",
                           "detail": f"{GPU_RESOURCE} allocatable {have}, GPUs on the node {gpus}"
                                     + ("" if have_n == gpus else " (device plugin not running or not all GPUs seen)")})
        out[host] = checks
    return out


def cuda_pod(name: str, node: str, image: str, gpus: int) -> dict:
    """A pod pinned to one node that asks for its GPUs and lists them (nvidia-smi -L)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "sparkfleet"}},
            "spec": {"nodeName": node, "restartPolicy": "Never",
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "cuda", "image": image, "command": ["nvidia-smi", "-L"],
                                     "resources": {"limits": {GPU_RESOURCE: gpus}}}]}}


def net_pods(prefix: str, server_node: str, client_node: str, image: str, port: int = 8080) -> tuple[dict, dict]:
    """agnhost netexec on one node; the client on another connects to the server pod's IP (filled in later)."""
    meta = {"labels": {"app.kubernetes.io/managed-by": "sparkfleet"}}
    server = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{prefix}-server", **meta},
              "spec": {"nodeName": server_node, "tolerations": [{"operator": "Exists"}],
                       "containers": [{"name": "netexec", "image": image, "args": ["netexec", f"--http-port={port}"],
                                       "ports": [{"containerPort": port}]}]}}
    client = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{prefix}-client", **meta},
              "spec": {"nodeName": client_node, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                       "containers": [{"name": "connect", "image": image,
                                       "args": ["connect", f"SERVER_IP:{port}", "--timeout=10s"]}]}}
    return server, client


def not_checked(hosts, reason: str) -> dict[str, list[dict]]:
    return {h: [{"check": "kubernetes", "target": h, "status": "not_checked", "detail": reason}] for h in hosts}
