#!/usr/bin/env python3
"""Write the README's security table - every port the cluster listens on, who may reach it, how it is authenticated -
from the firewall's service registry (playbooks/group_vars/all/services.yml) and AUTH below.

    python3 scripts/ports_doc.py          # rewrite the table in README.md
    python3 scripts/ports_doc.py --check  # exit 1 when README.md is out of date or a service has no AUTH entry
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import readme_block  # scripts/, beside this file
import yaml

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- ports:begin (scripts/ports_doc.py) -->", "<!-- ports:end -->"
WHO = {"cluster": "cluster nodes", "control": "the control node (the gateway)", "mgmt": "management network",
       "admin": "admin CIDRs", "any": "anyone"}
# How each service authenticates whoever the firewall lets through. "none" is said plainly: the firewall is then the
# only control (README, security).
AUTH = {
    "ssh": "keys only (no passwords, no root password login); the drift key `from=` the control node and `restrict`",
    "kubernetes_api": "Kubernetes client certificates and RBAC (kubeadm)",
    "etcd": "mutual TLS (kubeadm's etcd CA)",
    "kubelet": "client certificates (kubeadm)",
    "kube_control_plane": "client certificates (kubeadm)",
    "kube_nodeports": "whatever the service behind the port does",
    "flannel_vxlan": "none (VXLAN; the firewall limits it to the nodes)",
    "object_store": "S3 access keys (root key for publishing, a read-only key on the nodes); anonymous requests refused",
    "ray": "Ray's token (RAY_AUTH_MODE=token: GCS, dashboard and job API, client; a file only root and Ray's user read); "
           "the dashboard listens on the head's fabric address only; Ray runs as an unprivileged user",
    "ray_node": "Ray's token (the same, between Ray's own processes)",
    "ray_workers": "Ray's token (the same, between Ray's own processes)",
    "vllm": "vLLM's API key (VLLM_API_KEY from a root-only file), which only the gateway presents",
    "gateway": "a team's bearer key (401 and a JSON body without one); rate and concurrency limits per key; "
               "HTTPS with gateway_tls_cert/gateway_tls_key",
    "iperf3": "none (a bandwidth test server, started by validation for 10 minutes at most)",
    "ntp_server": "none (NTP)",
    "slurmctld": "munge credentials (the cluster's munge key)",
    "slurmd": "munge credentials",
    "srun": "munge credentials",
    "node_exporter": "none (read-only metrics)",
    "dcgm_exporter": "none (read-only metrics)",
    "slurm_exporter": "none (read-only metrics)",
    "prometheus": "none (read-only API; the admin networks only)",
    "alertmanager": "none (its API can silence alerts: the admin networks only)",
    "grafana": "Grafana users; the admin password required by preflight, from the vault or the environment",
}


def services() -> dict:
    text = (ROOT / "playbooks/group_vars/all/services.yml").read_text()
    return yaml.safe_load(re.sub(r"\{\{.*?\}\}", "", text))["sparkfleet_services"]


def table() -> str:
    rows = ["| service | ports | from | on | authentication |", "| --- | --- | --- | --- | --- |",
            "| ssh | 22/tcp | management network, admin CIDRs, cluster nodes | every node | %s |" % AUTH["ssh"],
            "| nccl (`sparkfleet_nccl_port_range`) | 50000-51000/tcp | cluster nodes (management and fabric addresses)"
            " | every node | none (NCCL's bootstrap and socket transport: the job's own processes) |",
            "| rocev2 | 4791/udp | cluster nodes | every node | none (RDMA queue pairs set up by the job's own processes) |"]
    for name, s in services().items():
        ports = ", ".join(str(p) for p in s["ports"])
        rows.append("| %s (%s) | %s/%s | %s | %s | %s |" % (
            name, s.get("comment", ""), ports, s.get("proto", "tcp"), ", ".join(WHO[f] for f in s["from"]),
            ", ".join(s["open_on"]), AUTH.get(name, "MISSING")))
    return "\n".join(rows)


def main() -> int:
    missing = sorted(set(services()) - set(AUTH))
    if missing:
        print("scripts/ports_doc.py: no AUTH entry for %s" % ", ".join(missing), file=sys.stderr)
        return 1
    return readme_block.sync(BEGIN, END, table(), "port table", "--check" in sys.argv)


if __name__ == "__main__":
    sys.exit(main())
