"""kubeadm with no Kubernetes package source (none is reachable from the lab): skipped with that reason, nothing
installed, and a half-configured source is refused with the variable named."""
from __future__ import annotations

from labtools import NODES, role_run, ssh


def test_skip_names_the_missing_package_source():
    out = role_run()
    assert "kubeadm skipped: no Kubernetes package source: set kubeadm_apt_key_sha256" in out, out[-2000:]
    for n in NODES:
        assert ssh(n, "command -v kubeadm kubelet", check=False).returncode != 0
