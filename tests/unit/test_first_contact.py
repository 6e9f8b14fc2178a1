"""First contact with DGX Spark, before any change: preflight refuses a download without its checksum on the nodes that
would download it (GPU nodes without DGX OS), and never asks DGX OS, which ships the driver and the toolkit, for one."""
from __future__ import annotations

from ansible_collections.sparkfleet.cluster.plugins.module_utils import cluster_model as cm

FACTS = {"distribution": "Ubuntu", "distribution_version": "24.04", "architecture": "aarch64", "memtotal_mb": 124000,
         "interfaces": ["enP7s7"], "python": {"version": {"major": 3, "minor": 12}}, "user_uid": 0}
REQ = {"supported_os": {"Ubuntu": ["24.04"]}, "architectures": ["aarch64"],
       "checksums": [{"var": "container_runtime_nvidia_key_sha256", "value": "", "when": "gpu_not_dgx", "why": "toolkit key"},
                     {"var": "container_runtime_docker_key_sha256", "value": "", "when": "never", "why": "docker key"}]}


def errors(platform, req=REQ):
    return cm.host_errors("spark-02", dict(FACTS, nvidia_platform=platform), {}, req)


def test_gpu_node_without_dgx_os_needs_the_toolkit_key_checksum():
    errs = errors({"gpu_count": 1, "dgx_os": False})
    assert len(errs) == 1 and errs[0].startswith("spark-02: container_runtime_nvidia_key_sha256 must be the SHA-256")


def test_dgx_os_and_cpu_nodes_download_nothing_so_need_no_checksum():
    assert errors({"gpu_count": 1, "dgx_os": True}) == []
    assert errors({"gpu_count": 0, "dgx_os": False}) == []


def test_a_64_hex_checksum_passes_and_always_applies_where_asked():
    ok = dict(REQ, checksums=[dict(REQ["checksums"][0], value="a" * 64)])
    assert errors({"gpu_count": 1, "dgx_os": False}, ok) == []
    always = dict(REQ, checksums=[dict(REQ["checksums"][1], when="always", value="tooshort")])
    assert "container_runtime_docker_key_sha256" in errors({"gpu_count": 0}, always)[0]
