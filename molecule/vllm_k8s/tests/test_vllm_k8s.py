"""vLLM on Kubernetes: an image by tag is refused before anything changes; without kubeadm the manifest is not
deployed and the reason says so (the rendered manifest itself is schema-checked in tests/unit/test_kubernetes.py)."""
from __future__ import annotations

import json

from labtools import playbook, recap

DIGEST = "registry.example/vllm/vllm-openai@sha256:" + "a" * 64
MODELS = {"model_sync_models": [{"name": "tiny", "version": "v1"}]}


def run(extra: dict):
    return playbook("playbooks/roles.yml", "-e", json.dumps({**MODELS, **extra}), timeout=300)


def test_without_kubeadm_the_reason_is_named():
    res = run({"vllm_k8s_image": DIGEST})
    assert res.returncode == 0, res.stdout[-2000:]
    assert "vLLM on Kubernetes skipped: kubeadm has not run on this node (no /etc/kubernetes/admin.conf)" in res.stdout


def test_image_by_tag_is_refused_naming_the_variable():
    res = run({"vllm_k8s_image": "vllm/vllm-openai:latest"})
    assert res.returncode != 0
    assert "vllm_k8s_image=vllm/vllm-openai:latest: pin it by digest" in res.stdout
    assert all(v.get("changed", 0) == 0 for v in recap(res.stdout).values())
