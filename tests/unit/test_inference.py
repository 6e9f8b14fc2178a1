"""The inference layer's plain logic: the lock, the fleet consistency check, vLLM's command line, the gateway's
latency figures, the wheel cache (built from real wheel files with pip), and the gateway's rendered nginx file."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest
from conftest import ROOT

from ansible_collections.sparkfleet.cluster.plugins.module_utils import inference
from sparkfleet_tools import wheels

LOCK = ROOT / "roles" / "python_env" / "files" / "python-env.lock"


def test_the_shipped_lock_pins_every_package_with_hashes_for_both_architectures():
    text = LOCK.read_text()
    pins, errors = inference.parse_lock(text)
    assert errors == []
    assert pins["ray"] == "2.60.0" and len(pins) > 20
    assert wheels.lock_header(text, "architectures") == ["x86_64", "aarch64"]
    assert set(wheels.lock_header(text, "pythons")) >= {"3.11", "3.12"}  # Debian 12 lab, Ubuntu 24.04 (DGX OS 7)


def test_parse_lock_names_unpinned_and_unhashed_lines():
    pins, errors = inference.parse_lock("ray>=2 \\\n    --hash=sha256:aa\nidna==3.10\n# comment\n")
    assert pins == {"idna": "3.10"}
    assert len(errors) == 2 and errors[0].startswith("line 1: 'ray>=2 ") and errors[0].endswith("is not pinned as name==version")
    assert errors[1] == "line 2: idna has no --hash"


def test_env_diff_names_each_package_that_differs():
    locked = {"ray": "2.60.0", "idna": "3.10", "grpcio": "1.70.0"}
    installed = {"ray": "2.60.0", "idna": "3.9", "Extra_Pkg": "1.0", "pip": "24.0"}
    assert inference.env_diff(locked, installed) == [
        "extra-pkg: 1.0 installed, not in the lock", "grpcio: 1.70.0 missing", "idna: 3.9 installed, lock says 3.10"]
    assert inference.env_diff(locked, dict(locked, pip="25", setuptools="70")) == []


def test_fleet_consistency_names_the_node_its_version_and_the_majority():
    same = {"python": "3.11.2", "ray": "2.60.0", "vllm": None, "torch": None, "nccl": "2.28.3"}
    hosts = {"spark-01": dict(same, driver="580.95.05", cuda="13.0"), "spark-02": dict(same, driver="580.95.05", cuda="13.0"),
             "spark-03": dict(same, ray="2.59.0", driver=None, cuda=None)}
    out = inference.fleet_consistency(hosts)
    fails = {h: [c for c in checks if c["status"] == "fail"] for h, checks in out.items()}
    assert fails["spark-01"] == fails["spark-02"] == []
    assert fails["spark-03"] == [{"check": "fleet_version", "target": "ray", "status": "fail",
                                  "detail": "spark-03 has ray 2.59.0; the majority has 2.60.0 (spark-01, spark-02)"}]
    # vLLM is nowhere installed: not compared. The driver only where there is one (the CPU-only node is not "different").
    assert {c["target"] for c in out["spark-01"]} == {"python", "ray", "torch", "nccl", "driver", "cuda"} - {"torch"}
    assert [c["detail"] for c in out["spark-01"] if c["target"] == "python"] == ["3.11.2 on all 3 nodes"]
    assert [c["target"] for c in out["spark-03"]] == ["python", "ray", "nccl"]


def test_fleet_consistency_a_missing_package_differs_from_an_installed_one():
    out = inference.fleet_consistency({"a": {"ray": "2.60.0"}, "b": {"ray": "2.60.0"}, "c": {"ray": None}})
    assert out["c"][0]["detail"] == "c has ray not installed; the majority has 2.60.0 (a, b)"


SPARKS = ["spark-%02d" % i for i in range(1, 9)]
FABRIC = {h: "192.168.100.%d" % (10 + i) for i, h in enumerate(SPARKS, 1)}
VENV = ["/opt/sparkfleet/inference/bin/vllm"]
GB10_GIB, GB10_FRACTION = 119.7, 0.8  # a Spark's MemTotal (GiB) and the derived --gpu-memory-utilization


def plan(nodes, **kw):
    kw.setdefault("node_gib", GB10_GIB)
    kw.setdefault("memory_fraction", GB10_FRACTION)
    return inference.vllm_plan(SPARKS[:nodes], 1, **kw)


def cmd(p, host, executor="ray", prefix=VENV, **kw):
    return " ".join(inference.vllm_command(p, host, prefix, "/models/m/current", "m", "0.0.0.0", 8000, FABRIC,
                                           executor=executor, gpu_memory_utilization=GB10_FRACTION, **kw))


SERVE = "serve /models/m/current --served-model-name m"
API = " --host 0.0.0.0 --port 8000"


def test_two_sparks_tp2_with_ray_and_native():
    p = plan(2, model_gib=140)  # Llama-3.3-70B in BF16: more than one Spark holds
    assert (p["layout"], p["tensor"], p["pipeline"], p["replicas"], p["groups"]) == (
        "tensor_pipeline", 2, 1, 1, [["spark-01", "spark-02"]])
    assert cmd(p, "spark-01") == ("/opt/sparkfleet/inference/bin/vllm " + SERVE + API + " --tensor-parallel-size 2"
                                  " --pipeline-parallel-size 1 --gpu-memory-utilization 0.8 --distributed-executor-backend ray")
    assert cmd(p, "spark-02") == ""  # Ray starts the second rank from the first node
    native = "--tensor-parallel-size 2 --pipeline-parallel-size 1 --gpu-memory-utilization 0.8 --distributed-executor-backend mp --nnodes 2"
    assert cmd(p, "spark-01", "native") == ("/opt/sparkfleet/inference/bin/vllm " + SERVE + API + " " + native +
                                            " --node-rank 0 --master-addr 192.168.100.11 --master-port 29501")
    assert cmd(p, "spark-02", "native") == ("/opt/sparkfleet/inference/bin/vllm " + SERVE + " " + native +
                                            " --node-rank 1 --master-addr 192.168.100.11 --master-port 29501 --headless")


def test_eight_sparks_by_model_size():
    # gpt-oss-120b (about 65 GiB of MXFP4 weights) fits one Spark: 8 replicas, each a plain one-GPU engine.
    p = plan(8, model_gib=65)
    assert (p["layout"], p["replicas"], p["tensor"], p["pipeline"]) == ("replicas", 8, 1, 1)
    assert all(cmd(p, h, "native").endswith("--tensor-parallel-size 1 --pipeline-parallel-size 1"
                                            " --gpu-memory-utilization 0.8") for h in SPARKS)
    # Llama 3.1 405B in NVFP4 (about 230 GiB): groups of 4 Sparks, TP 4, two replicas.
    p = plan(8, model_gib=230)
    assert (p["layout"], p["replicas"], p["tensor"], p["pipeline"], p["group_nodes"]) == ("tensor_pipeline", 2, 4, 1, 4)
    assert "--nnodes 4 --node-rank 0 --master-addr 192.168.100.15" in cmd(p, "spark-05", "native")
    # 405B in FP8 (about 410 GiB): all 8, TP 4 x PP 2.
    p = plan(8, model_gib=410)
    assert (p["replicas"], p["tensor"], p["pipeline"]) == (1, 4, 2)
    assert cmd(p, "spark-08", "native").endswith(
        "--tensor-parallel-size 4 --pipeline-parallel-size 2 --gpu-memory-utilization 0.8 --distributed-executor-backend mp"
        " --nnodes 8 --node-rank 7 --master-addr 192.168.100.11 --master-port 29501 --headless")
    # TP 8 over all eight, as set.
    p = plan(8, layout="tensor")
    assert (p["tensor"], p["pipeline"], p["replicas"]) == (8, 1, 1)
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 1" in cmd(p, "spark-01")
    # Too big for the whole cluster: one engine over all nodes, and the plan says it does not fit.
    p = plan(8, model_gib=1000)
    assert p["replicas"] == 1 and "do NOT fit" in p["why"]
    # Size unknown: one engine over all nodes, as before.
    assert plan(8)["why"] == "model size not known: one engine over all 8 nodes"


def test_container_runtime_wraps_the_same_command_in_nvidias_image():
    image = "mirror.lan:5000/nvidia/vllm:26.04-py3@sha256:" + "ab" * 32
    prefix = inference.vllm_container_prefix(image, rdma=True)
    line = cmd(plan(2, model_gib=140), "spark-02", "native", prefix=prefix)
    assert line.startswith("/usr/bin/docker run --rm --name sparkfleet-vllm --gpus all --network host --ipc host"
                           " --shm-size 16g --ulimit memlock=-1 --ulimit stack=67108864 --env-file /etc/sparkfleet/vllm.env"
                           " -v /models:/models:ro -v /etc/nccl.conf:/etc/nccl.conf:ro --device /dev/infiniband"
                           " --cap-add IPC_LOCK " + image + " vllm serve /models/m/current"), line
    assert line.endswith("--headless")


def test_multi_gpu_nodes_and_explicit_sizes():
    hgx = inference.vllm_plan(["dgx-1", "dgx-2"], 8, model_gib=140, node_gib=640, memory_fraction=0.9)
    assert (hgx["layout"], hgx["replicas"], hgx["tensor"]) == ("replicas", 2, 8)
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 1 --gpu-memory-utilization 0.8 --distributed-executor-backend mp" in \
        cmd(hgx, "dgx-2")
    p = plan(8, tensor=2, pipeline=1)
    assert (p["layout"], p["replicas"], p["groups"][3]) == ("explicit", 4, ["spark-07", "spark-08"])
    with pytest.raises(ValueError, match="tensor 16 x pipeline 1 = 16 GPUs, the cluster has 8"):
        plan(8, tensor=16)
    with pytest.raises(ValueError, match="layout 'tp' is not one of"):
        plan(2, layout="tp")
    with pytest.raises(ValueError, match="executor 'mpi' is not one of"):
        cmd(plan(2), "spark-01", "mpi")
    assert plan(3, model_gib=140)["idle"] == ["spark-03"]  # groups of 2 on 3 nodes: one node left out, named


@pytest.mark.parametrize("nodes,gpus,tp,pp", [(3, 1, 1, 3), (4, 1, 4, 1), (6, 1, 2, 3), (2, 8, 8, 2), (1, 8, 8, 1)])
def test_vllm_parallelism(nodes, gpus, tp, pp):
    assert inference.vllm_parallelism(nodes, gpus) == (tp, pp)


def test_vllm_explicit_sizes_win_and_too_many_gpus_is_an_error():
    assert inference.vllm_parallelism(8, 1, tensor=8, pipeline=1) == (8, 1)
    assert cmd(plan(2), "spark-01", extra_args=["--enforce-eager"]).endswith(
        "--gpu-memory-utilization 0.8 --distributed-executor-backend ray --enforce-eager")
    with pytest.raises(ValueError, match="tensor 4 x pipeline 1 = 4 GPUs, the cluster has 2"):
        inference.vllm_parallelism(2, 1, tensor=4)
    with pytest.raises(ValueError, match="at least one node with a GPU"):
        inference.vllm_parallelism(0, 0)


def test_latency_percentiles_nearest_rank_over_json_lines():
    lines = [json.dumps({"request_time": t / 100, "status": 200}) for t in range(1, 101)] + ["garbage", "{}"]
    assert inference.latency_percentiles(lines) == {"count": 100, "p50": 0.5, "p95": 0.95, "p99": 0.99}
    assert inference.latency_percentiles([]) == {"count": 0, "p50": None, "p95": None, "p99": None}


def make_wheel(folder, name, version):
    """A real (minimal) wheel pip accepts: metadata, WHEEL and RECORD."""
    path = folder / ("%s-%s-py3-none-any.whl" % (name, version))
    files = {"%s/__init__.py" % name: "VERSION = %r\n" % version,
             "%s-%s.dist-info/METADATA" % (name, version): "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version),
             "%s-%s.dist-info/WHEEL" % (name, version): "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join("%s,sha256=%s,%d\n" % (n, base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b"=").decode(), len(c))
                     for n, c in files.items())
    with zipfile.ZipFile(path, "w") as z:
        for n, c in files.items():
            z.writestr(n, c)
        z.writestr("%s-%s.dist-info/RECORD" % (name, version), record + "%s-%s.dist-info/RECORD,,\n" % (name, version))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_fetch_from_a_local_mirror_is_hash_checked_and_deterministic(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (_, ha), (_, hb) = make_wheel(mirror, "alpha", "1.0"), make_wheel(mirror, "beta", "2.0")
    make_wheel(mirror, "alpha", "1.1")  # a newer one on the mirror: the lock's pin wins
    lock = tmp_path / "env.lock"
    lock.write_text("# pythons: 3.11 3.12\n# architectures: x86_64 aarch64\nalpha==1.0 \\\n    --hash=sha256:%s\n"
                    "beta==2.0 \\\n    --hash=sha256:%s\n" % (ha, hb))
    first = wheels.fetch(lock, "3.12", "aarch64", tmp_path / "c1", find_links=str(mirror))
    assert first["changed"] and first["tar"].endswith("-cp312-aarch64.tar")
    with tarfile.open(first["tar"]) as tf:
        assert [(m.name, m.mtime, m.uid) for m in tf.getmembers()] == [
            ("alpha-1.0-py3-none-any.whl", 0, 0), ("beta-2.0-py3-none-any.whl", 0, 0)]
    again = wheels.fetch(lock, "3.12", "aarch64", tmp_path / "c1", find_links=str(mirror))
    assert again == dict(first, changed=False)
    other = wheels.fetch(lock, "3.12", "aarch64", tmp_path / "c2", find_links=str(mirror))
    assert other["sha256"] == first["sha256"]  # same lock, same bytes, whichever controller built it
    # A wheel whose bytes do not match the lock is refused.
    lock.write_text(lock.read_text().replace(ha, "0" * 64))
    with pytest.raises(wheels.WheelError, match="pip download for Python 3.12 on aarch64 failed"):
        wheels.fetch(lock, "3.12", "aarch64", tmp_path / "c3", find_links=str(mirror))
    with pytest.raises(wheels.WheelError, match="locked for pythons 3.11, 3.12 only, not 3.13"):
        wheels.fetch(lock, "3.13", "aarch64", tmp_path / "c3", find_links=str(mirror))


GATEWAY_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    sparkfleet_services: {gateway: {ports: [8090]}, vllm: {ports: [8000]}}
    gateway_listen_address: 10.77.0.11
    gateway_backends: ["10.77.0.11:8000", "10.77.0.12:8000"]
  tasks:
    - ansible.builtin.include_vars: {file: "%(role)s/defaults/main.yml"}
    - ansible.builtin.set_fact: {gateway_listen_address: 10.77.0.11, gateway_backends: ["10.77.0.11:8000", "10.77.0.12:8000"]}
    - ansible.builtin.template: {src: "%(role)s/templates/sparkfleet-gateway.conf.j2", dest: "%(out)s/gw.conf", mode: "0644"}
    - ansible.builtin.set_fact:
        gateway_api_keys: {research: "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrr", ops: "oooooooooooooooooooooooooooooo"}
        gateway_backend_key: "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
    - ansible.builtin.template: {src: "%(role)s/templates/sparkfleet-gateway-keys.conf.j2", dest: "%(out)s/keys.conf", mode: "0600"}
"""


def test_gateway_drop_in_limits_load_logs_request_time_and_answers_json_without_a_backend(tmp_path):
    pb = tmp_path / "render.yml"
    pb.write_text(GATEWAY_PLAYBOOK % {"role": ROOT / "roles" / "gateway", "out": tmp_path})
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", str(pb), "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}"], cwd=ROOT, env=env, text=True, capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    conf = (tmp_path / "gw.conf").read_text()
    assert "server 10.77.0.11:8000 max_fails=2 fail_timeout=10s;" in conf and "server 10.77.0.12:8000 max_fails=2" in conf
    assert "listen 10.77.0.11:8090;" in conf and "listen 127.0.0.1:8090;" in conf
    assert "zone=inference_rate:10m rate=20r/s;" in conf and "limit_req zone=inference_rate burst=40 nodelay;" in conf
    assert "limit_conn inference_conn 64;" in conf and "limit_req_status 429;" in conf
    assert '"request_time":$request_time' in conf and "access_log /var/log/nginx/sparkfleet-gateway.log inference_json;" in conf
    assert "error_page 502 503 504 = @no_backend;" in conf and '"type":"service_unavailable","code":503' in conf
    # Every path but the health check needs a team's key: the keys and vLLM's key live in their own root-only file.
    assert "include /etc/nginx/sparkfleet-gateway-keys.conf;" in conf and 'if ($gateway_team = "")' in conf
    assert "limit_req_zone $gateway_team zone=inference_rate" in conf and "limit_conn inference_conn_key 32;" in conf
    assert "proxy_set_header Authorization $gateway_backend_auth;" in conf and "error_page 401 = @unauthorized;" in conf
    keys = (tmp_path / "keys.conf").read_text()
    assert '"Bearer rrrrrrrrrrrrrrrrrrrrrrrrrrrrrr" "research";' in keys and '"Bearer oooooooooooooooooooooooooooooo" "ops";' in keys
    assert 'default "Bearer vvvvvvvvvvvvvvvvvvvvvvvvvvvvvv";' in keys and "vvvvvvvvvv" not in conf
    # The JSON bodies nginx returns are valid JSON once nginx fills in its variable.
    bodies = [b.split("'")[1] for b in conf.split("return ")[1:] if b.split(";")[0].strip() not in ("401",)]
    assert len(bodies) == 4, bodies
    for text in bodies:
        json.loads(text.replace("$upstream_addr", "10.77.0.11:8000").removesuffix("\\n"))


def test_readme_shows_the_command_lines_the_code_writes():
    """The README's inference section shows, per node, what vllm_command returns for 2 and 8 Sparks."""
    readme = (ROOT / "README.md").read_text()
    cases = [(2, ["spark-01", "spark-02"], "native", {"model_gib": 140}), (2, ["spark-01"], "ray", {"model_gib": 140}),
             (8, ["spark-01"], "native", {"model_gib": 61}), (8, ["spark-01", "spark-02", "spark-05"], "native", {"model_gib": 230}),
             (8, ["spark-01", "spark-08"], "native", {"model_gib": 410}), (8, ["spark-01", "spark-08"], "native", {"layout": "tensor"})]
    for nodes, hosts, executor, kw in cases:
        p = plan(nodes, **kw)
        for h in hosts:
            line = "  %s: %s" % (h, cmd(p, h, executor, prefix=["vllm"]))
            assert line + "\n" in readme, line
