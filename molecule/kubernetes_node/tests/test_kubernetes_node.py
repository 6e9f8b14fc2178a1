"""sparkfleet_scheduler: kubernetes on lab nodes: the node prerequisites for real (modules, sysctls, swap, containerd's
CRI from a drop-in over Docker's CRI-disabled config), kubeadm skipped with its reason, the validation's "not
checked", drift found by --check and put back."""
from __future__ import annotations

import json

from labtools import NODES, playbook, recap, ssh

DROPIN = "/etc/containerd/conf.d/60-sparkfleet-kubernetes.toml"
K8S = ("-e", "sparkfleet_scheduler=kubernetes")


def test_modules_and_sysctls_at_boot_and_live():
    for n in NODES:
        out = ssh(n, "cat /etc/modules-load.d/60-sparkfleet-kubernetes.conf /etc/sysctl.d/60-sparkfleet-kubernetes.conf; "
                     "sysctl -n net.bridge.bridge-nf-call-iptables net.ipv4.ip_forward").stdout
        assert "overlay\nbr_netfilter\n" in out
        assert "net.bridge.bridge-nf-call-iptables=1" in out and "net.ipv4.ip_forward=1" in out
        assert out.strip().endswith("1\n1") or out.split()[-2:] == ["1", "1"]


def test_fstab_swap_line_commented_with_the_reason():
    for n in NODES:
        fstab = ssh(n, "cat /etc/fstab").stdout
        assert "# sparkfleet (kubernetes_node: the kubelet needs swap off): /swap.img" in fstab
        assert not [ln for ln in fstab.splitlines() if ln.startswith("/swap.img")]


def test_containerd_cri_enabled_from_a_dropin_keeping_dockers_file():
    for n in NODES:
        main = ssh(n, "cat /etc/containerd/config.toml").stdout
        # Docker's lines kept; only what containerd needs to read the drop-in and run CRI changed.
        assert "#   Copyright 2018-2022 Docker Inc." in main and '#root = "/var/lib/containerd"' in main
        assert "disabled_plugins = []" in main and 'imports = ["/etc/containerd/conf.d/*.toml"]' in main
        assert main.splitlines()[0] == "version = 2"
        dump = ssh(n, "containerd config dump").stdout
        assert 'sandbox_image = "registry.k8s.io/pause:3.10.1"' in dump
        assert "SystemdCgroup = true" in dump and 'bin_dir = "/opt/cni/bin"' in dump
        cri = [ln.split() for ln in ssh(n, "ctr plugins ls").stdout.splitlines() if " cri " in f" {ln} "]
        assert cri and cri[0][-1] == "ok", cri
        # Docker still runs on the same containerd.
        assert ssh(n, "docker info --format '{{.ServerVersion}}'").stdout.strip()


def test_kubeadm_skipped_with_its_reason_and_nothing_installed():
    res = playbook("playbooks/scheduler.yml", *K8S)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "kubeadm skipped: no Kubernetes package source: set kubeadm_apt_key_sha256" in res.stdout
    assert all(r["changed"] == 0 for r in recap(res.stdout).values()), res.stdout[-3000:]
    for n in NODES:
        assert ssh(n, "command -v kubeadm kubelet; test -e /etc/kubernetes", check=False).returncode != 0


def test_validation_says_not_checked_with_the_reason(tmp_path):
    # Only the runtime and scheduler layers ran here, so other checks fail; this one names why it did not run.
    extra = {"validate_fail": False, "validate_textfile": "", "validate_report_dir": f"{tmp_path}/report",
             "validate_bandwidth": False, "validate_inference": False}
    res = playbook("playbooks/validate.yml", *K8S, "-e", json.dumps(extra), timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
    report = json.loads((tmp_path / "report" / "latest.json").read_text())
    for n in NODES:
        kube = [c for c in report["hosts"][n] if c["check"] == "kubernetes"]
        assert kube and kube[0]["status"] == "not_checked", report["hosts"][n]
        assert "no Kubernetes package source" in kube[0]["detail"]


def test_drift_is_reported_by_check_and_put_back():
    n = NODES[-1]
    ssh(n, f"rm {DROPIN}; sysctl -w net.ipv4.ip_forward=0; sed -i 's|^# sparkfleet (kubernetes_node: the kubelet needs "
           f"swap off): ||' /etc/fstab")
    try:
        res = playbook("playbooks/scheduler.yml", "--check", "--diff", *K8S, "--limit", n)
        assert res.returncode == 0, res.stdout[-3000:]
        assert recap(res.stdout)[n]["changed"] >= 3
        assert DROPIN in res.stdout and "net.ipv4.ip_forward" in res.stdout and "/swap.img" in res.stdout
        # A dry run changed nothing.
        assert ssh(n, f"test -e {DROPIN}", check=False).returncode != 0
    finally:
        res = playbook("playbooks/scheduler.yml", *K8S, "--limit", n)
    assert res.returncode == 0, res.stdout[-3000:]
    assert ssh(n, f"test -e {DROPIN} && sysctl -n net.ipv4.ip_forward").stdout.strip() == "1"
    assert recap(playbook("playbooks/scheduler.yml", *K8S, "--limit", n).stdout)[n]["changed"] == 0
