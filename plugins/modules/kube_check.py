#!/usr/bin/python
# The Kubernetes part of the validation report, from the control node: nodes, GPUs, a CUDA pod per GPU node,
# pod-to-pod traffic between two nodes. Every wait is bounded.
from __future__ import annotations

DOCUMENTATION = r"""
module: kube_check
short_description: Validate a kubeadm cluster (nodes Ready, GPUs allocatable, CUDA pods, pod-to-pod traffic)
description:
  - Without I(kubeconfig) (kubeadm never ran) every node gets one C(not_checked) entry with I(reason).
  - Otherwise, per node, C(kube_node_ready) and, where the node has GPUs, C(kube_gpu_allocatable) (nvidia.com/gpu
    equals its GPU count); a pod per GPU node runs C(nvidia-smi -L) (C(kube_cuda_pod)); an agnhost pod on one node is
    reached from a pod on another over the pod network (C(kube_pod_network)). Test pods are deleted afterwards.
options:
  kubeconfig: {description: Admin kubeconfig., type: path, default: /etc/kubernetes/admin.conf}
  expected_gpus: {description: "Inventory node name -> GPU count.", type: dict, required: true}
  cuda_image: {description: CUDA image for the GPU pods (mirrorable)., type: str, required: true}
  net_image: {description: agnhost image for the pod network check (mirrorable)., type: str, required: true}
  reason: {description: Why nothing is checked when the kubeconfig is missing., type: str, default: kubeadm has not run}
  timeout_s: {description: Bound for each pod to finish., type: int, default: 180}
author: sparkfleet developers
"""

EXAMPLES = r"""
- sparkfleet.cluster.kube_check:
    expected_gpus: {spark-01: 1, spark-02: 1}
    cuda_image: nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04
    net_image: registry.k8s.io/e2e-test-images/agnhost:2.53
"""

RETURN = r"""
checks:
  description: "{node: [{check, target, status, detail}]}"
  returned: always
  type: dict
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils import kube


def main():
    module = AnsibleModule(argument_spec=dict(
        kubeconfig=dict(type="path", default="/etc/kubernetes/admin.conf"),
        expected_gpus=dict(type="dict", required=True),
        cuda_image=dict(type="str", required=True),
        net_image=dict(type="str", required=True),
        reason=dict(type="str", default="kubeadm has not run"),
        timeout_s=dict(type="int", default=180),
    ), supports_check_mode=True)
    p = module.params
    gpus = {k: int(v) for k, v in p["expected_gpus"].items()}
    kubectl = module.get_bin_path("kubectl")
    if not os.path.exists(p["kubeconfig"]) or not kubectl:
        module.exit_json(changed=False, checks=kube.not_checked(gpus, p["reason"]))
    base = [kubectl, "--kubeconfig", p["kubeconfig"]]

    def k(*args, data=None):
        return module.run_command(base + list(args), data=data)

    rc, out, err = k("get", "nodes", "-o", "json")
    checks = kube.node_checks(out if rc == 0 else err, gpus)
    if module.check_mode:
        module.exit_json(changed=False, checks=checks)

    def run_pod(pod):
        name = pod["metadata"]["name"]
        k("delete", "pod", name, "--ignore-not-found", "--wait=true")
        rc, _, err = k("apply", "-f", "-", data=json.dumps(pod))
        if rc != 0:
            return "fail", f"could not create the pod: {err.strip()[-300:]}"
        deadline, phase = time.time() + p["timeout_s"], ""
        while time.time() < deadline:
            _, phase, _ = k("get", "pod", name, "-o", "jsonpath={.status.phase}")
            if phase in ("Succeeded", "Failed"):
                break
            time.sleep(2)
        _, logs, _ = k("logs", name)
        k("delete", "pod", name, "--ignore-not-found", "--wait=false")
        return ("pass" if phase == "Succeeded" else "fail"), f"phase {phase or 'unknown'}: {logs.strip()[-300:]}"

    for node, n in gpus.items():
        if n > 0:
            status, detail = run_pod(kube.cuda_pod(f"sparkfleet-cuda-{node}", node, p["cuda_image"], n))
            checks.setdefault(node, []).append({"check": "kube_cuda_pod", "target": node, "status": status, "detail": detail})
    nodes = sorted(gpus)
    if len(nodes) >= 2:
        server, client = kube.net_pods("sparkfleet-net", nodes[0], nodes[1], p["net_image"])
        k("delete", "pod", server["metadata"]["name"], "--ignore-not-found", "--wait=true")
        k("apply", "-f", "-", data=json.dumps(server))
        rc, _, err = k("wait", "--for=condition=Ready", f"pod/{server['metadata']['name']}", f"--timeout={p['timeout_s']}s")
        _, ip, _ = k("get", "pod", server["metadata"]["name"], "-o", "jsonpath={.status.podIP}")
        if rc == 0 and ip:
            c = client["spec"]["containers"][0]
            c["args"] = [a.replace("SERVER_IP", ip) for a in c["args"]]
            status, detail = run_pod(client)
        else:
            status, detail = "fail", f"server pod on {nodes[0]} not ready: {err.strip()[-300:]}"
        k("delete", "pod", server["metadata"]["name"], "--ignore-not-found", "--wait=false")
        checks.setdefault(nodes[1], []).append({"check": "kube_pod_network", "target": f"{nodes[1]} -> {nodes[0]} ({ip})",
                                                "status": status, "detail": detail})
    module.exit_json(changed=False, checks=checks)


if __name__ == "__main__":
    main()
