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


IMAGE = {"var": "vllm_image_digest", "value": "", "pattern": "sha256:[0-9a-f]{64}", "what": "the image's digest (sha256:...)",
         "when": "gpu_dgx", "why": "nvcr.io/nvidia/vllm:26.04-py3"}


def test_dgx_os_serving_a_model_from_nvidias_image_needs_its_digest_before_any_change():
    errs = errors({"gpu_count": 1, "dgx_os": True}, dict(REQ, checksums=[IMAGE]))
    assert errs == ["spark-02: vllm_image_digest must be the image's digest (sha256:...) (nvcr.io/nvidia/vllm:26.04-py3;"
                    " every download is pinned)"]
    pinned = dict(IMAGE, value="sha256:" + "ab" * 32)
    assert errors({"gpu_count": 1, "dgx_os": True}, dict(REQ, checksums=[pinned])) == []
    assert errors({"gpu_count": 0, "dgx_os": True}, dict(REQ, checksums=[IMAGE])) == []  # no GPU: no vLLM here


def test_a_vllm_choice_out_of_range_is_refused_naming_the_variable():
    req = dict(REQ, checksums=[], choices=[{"var": "vllm_executor", "value": "mpi", "allowed": ["auto", "native", "ray"]}])
    assert errors({"gpu_count": 1}, req) == ["spark-02: vllm_executor=mpi is not one of auto, native, ray"]


def test_bucket_names_outside_s3s_rules_are_refused_before_any_change():
    req = dict(REQ, checksums=[], buckets=[{"var": "object_store_buckets", "list": True, "value": ["models", "Team_A", "a..b"]},
                                           {"var": "model_sync_bucket", "value": ["10.0.0.1"]}])
    assert errors({"gpu_count": 0}, req) == [
        "spark-02: object_store_buckets[1]='Team_A' is not an S3 bucket name (3-63 lowercase letters, digits, '.', '-',"
        " a letter or digit at each end)",
        "spark-02: object_store_buckets[2]='a..b' is not an S3 bucket name (no '..', not an IP address)",
        "spark-02: model_sync_bucket='10.0.0.1' is not an S3 bucket name (no '..', not an IP address)"]
    assert cm.bucket_problem("models") is None and cm.bucket_problem("team-a.v2") is None


def test_grafana_installed_needs_its_admin_password_and_only_set_ness_reaches_preflight():
    need = {"var": "grafana_admin_password", "set": False, "applies": True, "why": "Grafana would keep admin/admin"}
    req = dict(REQ, checksums=[], required=[need])
    assert errors({"gpu_count": 0}, req) == ["spark-02: grafana_admin_password must be set (Grafana would keep admin/admin)"]
    assert errors({"gpu_count": 0}, dict(req, required=[dict(need, set=True)])) == []
    assert errors({"gpu_count": 0}, dict(req, required=[dict(need, applies=False)])) == []
