"""The GPU branch on DGX Spark persona nodes (lab/persona/: a Spark's software face at the hardware boundary; no role
tests for it). What a first contact with real Sparks broke, checked on the nodes: the driver branch pin apt accepts,
the runtime configured for the toolkit DGX OS ships (no repository, no key download, no reinstall), vLLM as Spark
owners run it (NVIDIA's image, native multi-node or Ray, replicas behind the gateway) up to the engine's start with the
model on every rank's node and unified-memory settings, and a report that never calls a stand-in a pass."""
# Not in CI (its time budget, README): on a Spark persona lab converged with site.yml,
#   LAB_PERSONA=spark LAB_MGMT_CIDR=10.79.0.0/24 LAB_FABRIC_CIDR=10.80.0.0/24 python3 lab/lab.py up --name pd --outsider
#   ansible-playbook -i inventory/lab-pd site.yml
#   PYTHONPATH=molecule/_shared/pytest MOLECULE_PROJECT_DIRECTORY=$PWD MOLECULE_LAB_INVENTORY=$PWD/inventory/lab-pd \
#       SPARKFLEET_GATE=on .venv/bin/pytest -p no:cacheprovider molecule/default/persona/test_gpu_persona.py
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from labtools import CONTROL, INV, NODES, PROJECT, playbook, recap, ssh

REPORT = PROJECT / "reports" / "validate" / "latest.json"
MGMT_IPS = [INV["hosts"][n]["ansible_host"] for n in NODES]
FABRIC_IPS = [INV["hosts"][n]["sparkfleet_fabric_ips"][0] for n in NODES]


MODEL = "tiny-gpu"


MODELS = json.dumps({"model_sync_models": [{"name": MODEL, "version": "v1"}]})


def vllm_role(*extra, models=MODELS):
    """The vllm role alone (playbooks/roles.yml: preflight, then the role on every node; facts from the cache)."""
    res = playbook("playbooks/roles.yml", "-e", "sparkfleet_roles=vllm", "-e", models, *extra, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
    return res


@pytest.fixture(scope="module")
def converged_model(tmp_path_factory):
    """A tiny model published to the store and synced to every GPU node; then the inference layer with it, as
    DGX OS gets it by default: NVIDIA's vLLM image, vLLM's native multi-node executor, the layout by the model's size.
    Afterwards the lab's inventory again (no model): the role removes its units and targets."""
    src = tmp_path_factory.mktemp("gpu-model") / "v1"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"model_type": "tiny"}))
    res = playbook("playbooks/model_publish.yml", "-e", f"model_name={MODEL}", "-e", "model_version=v1",
                   "-e", f"model_dir={src}", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:]
    # Gated, as users run them: the roles the model changes run (model_sync, vllm, gateway), the others are as converged.
    for pb in ("playbooks/storage.yml", "playbooks/inference.yml"):
        res = playbook(pb, "-e", MODELS, env={"SPARKFLEET_GATE": "on"}, timeout=900)
        assert res.returncode == 0, res.stdout[-3000:]
    yield res
    # The lab's inventory again: vLLM's units and targets go, the gateway is back to its one default backend.
    gone = vllm_role("-e", "sparkfleet_roles=vllm,gateway@control", models=json.dumps({"model_sync_models": []}))
    assert "vLLM skipped on" in gone.stdout and "no model" in gone.stdout
    assert all(u == ["", ""] for u in units().values()), units()


def units():
    def one(n):
        return ssh(n, "cat /etc/systemd/system/sparkfleet-vllm.service 2>/dev/null; echo ===;"
                      " cat /etc/sparkfleet/vllm.env 2>/dev/null", check=False).stdout.split("===\n")
    with ThreadPoolExecutor(len(NODES)) as pool:
        return dict(zip(NODES, pool.map(one, NODES), strict=True))


def test_driver_branch_pin_is_accepted_by_apt_and_keeps_other_branches_out():
    def apt(n):  # one login per node, the nodes at once: apt's cache reads take seconds each
        return ssh(n, "apt-cache policy cuda-drivers nvidia-driver-590-open nvidia-container-toolkit 2>&1; echo ===;"
                      " apt-get install -s -q nvidia-driver-590-open >/dev/null 2>&1; echo sim-rc=$?", timeout=180).stdout
    with ThreadPoolExecutor(len(NODES)) as pool:
        answers = dict(zip(NODES, pool.map(apt, NODES), strict=True))
    for n, out in answers.items():
        policy = out.split("===")[0]
        assert "Candidate: 580.95.05-1" in policy, (n, policy)
        assert re.search(r"590\.44\.01-1 -1\b", policy), (n, policy)  # the newer branch: never
        assert "nvidia-driver-590-open:\n  Installed: (none)\n  Candidate: (none)" in policy, (n, policy)
        assert "Candidate: 1.18.0-1" in policy, (n, policy)  # the toolkit has its own versions: not pinned away
        assert "sim-rc=0" not in out, (n, out)  # apt refuses to install the other branch


def test_dgx_os_toolkit_configured_not_reinstalled_and_no_key_downloaded():
    for n in NODES:
        daemon = json.loads(ssh(n, "cat /etc/docker/daemon.json").stdout)
        assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime", (n, daemon)
        assert "nvidia" in ssh(n, "docker info --format '{{json .Runtimes}}'").stdout
        out = ssh(n, "ls /etc/apt/sources.list.d /etc/apt/keyrings 2>/dev/null; dpkg-query -W nvidia-container-toolkit").stdout
        assert "nvidia-container-toolkit-sparkfleet" not in out and "nvidia-container-toolkit.asc" not in out, (n, out)
        assert "nvidia-container-toolkit\t1.18.0-1" in out, (n, out)  # what DGX OS shipped, not reinstalled


def test_default_on_dgx_os_nvidias_image_one_replica_per_node_behind_the_gateway(converged_model):
    res = converged_model
    for n in NODES:  # every persona node has a GPU: each holds the model and runs a replica
        assert ssh(n, f"test -f /models/{MODEL}/current/config.json && echo ok").stdout.strip() == "ok", n
    assert "vLLM on 3 engine(s) of 1 node(s), tensor 1 x pipeline 1 (replicas:" in res.stdout, res.stdout[-3000:]
    image = f"/nvidia/vllm:26.04-py3@sha256:{'0' * 64}"
    for n, (unit, env) in units().items():
        assert "ExecStart=/usr/bin/docker run --rm --name sparkfleet-vllm --gpus all --network host" in unit, (n, unit)
        assert image in unit and f"vllm serve /models/{MODEL}/current" in unit, (n, unit)
        assert "--nnodes" not in unit and "--host 0.0.0.0 --port 8000" in unit, (n, unit)  # a replica: its own API
        util = float(re.search(r"--gpu-memory-utilization (\S+)", unit).group(1))
        assert 0.1 <= util <= 0.8, unit  # unified memory: never the 0.9 that runs a GB10 out of memory
        assert "RAY_" not in env, env  # no Ray in NVIDIA's image: the native executor
        # vLLM's API key from its root-only environment file (the gateway presents it), never on the command line.
        assert re.search(r"^VLLM_API_KEY=\S{24,}$", env, re.M) and "API_KEY" not in unit and "--api-key" not in unit, n
        # The lab has no registry: the image is not pulled and the start is skipped, named - never faked.
        assert f"vLLM's start skipped on {n}: image " in res.stdout and "its pull failed" in res.stdout
        assert ssh(n, "systemctl is-active sparkfleet-vllm", check=False).stdout.strip() != "active"
    gw = ssh(CONTROL, "cat /etc/nginx/conf.d/sparkfleet-gateway.conf").stdout
    assert all(f"{ip}:8000" in gw for ip in MGMT_IPS), gw  # every replica is a backend


def test_native_multi_node_and_ray_executors_render_on_the_nodes(converged_model):
    res = vllm_role("-e", "vllm_layout=tensor_pipeline")
    assert "tensor 1 x pipeline 3 (tensor_pipeline:" in res.stdout
    u = units()
    for rank, n in enumerate(NODES):
        unit = u[n][0]
        assert f"--nnodes 3 --node-rank {rank} --master-addr {FABRIC_IPS[0]} --master-port 29501" in unit, (n, unit)
        assert ("--headless" in unit) == (rank > 0) and ("--port 8000" in unit) == (rank == 0), (n, unit)
    # The virtualenv with Ray: one server on the Ray head, Ray places the other ranks (SPREAD, one GPU per node).
    res = vllm_role("-e", "vllm_layout=tensor_pipeline", "-e", "vllm_runtime=venv", "-e", "vllm_executor=ray")
    u = units()
    head, env = u[CONTROL]
    assert "/opt/sparkfleet/inference/bin/vllm serve" in head and "--distributed-executor-backend ray" in head, head
    assert '"strategy":"SPREAD"' in env and "RAY_memory_monitor_refresh_ms=0" in env, env
    assert all(u[n][0] == "" for n in NODES if n != CONTROL), u  # Ray starts their ranks
    assert "has no vllm" in res.stdout  # the lab's lock is the CPU one
    for n in NODES:
        assert "RAY_memory_monitor_refresh_ms=0" in ssh(n, "cat /etc/sparkfleet/ray.env").stdout, n


def test_report_marks_stand_in_evidence_persona_and_never_pass():
    rep = json.loads(REPORT.read_text())
    assert sorted(rep["personas"]) == NODES and rep["persona"] > 0
    for n in NODES:
        st = {(c["check"], c["target"]): c["status"] for c in rep["hosts"][n]}
        assert st[("gpu", "nvidia-smi")] == "persona", (n, st)
        assert all(s != "pass" for (check, _), s in st.items()
                   if check in ("gpu", "nvlink", "connectx", "container_gpu", "nccl_all_reduce", "gpu_baseline")), (n, st)
        assert st[("fleet_version", "driver")] == "persona", (n, st)
    assert "no real hardware was verified" in (REPORT.parent / "latest.md").read_text()


def test_a_hung_nvidia_smi_is_bounded_and_named_with_its_node():
    """A GPU wedged by an Xid leaves nvidia-smi hanging: the hardware check gives up after its bound, names the tool
    and the node, and the other nodes' checks finish (an nvidia-smi that never returns, ahead of the persona's on PATH).
    Preflight's scan of the role gates probes nvidia-smi too (slurm's GPU count): bounded there as well (60 s)."""
    victim = NODES[-1]
    ssh(victim, "printf '#!/bin/sh\\nexec sleep 600\\n' > /usr/local/bin/nvidia-smi && chmod 755 /usr/local/bin/nvidia-smi")
    try:
        res = playbook("playbooks/roles.yml", "-e", "sparkfleet_roles=hardware_check", "-e", "hardware_check_fail=true",
                       "-e", "hardware_check_tool_timeout_s=5", timeout=300)
    finally:
        ssh(victim, "rm -f /usr/local/bin/nvidia-smi")
    assert res.returncode != 0, res.stdout[-3000:]
    assert f"{victim}: timeout: nvidia-smi did not answer within 5 s" in res.stdout, res.stdout[-3000:]
    r = recap(res.stdout)
    assert r[victim]["failed"] == 1 and all(r[n]["failed"] == 0 for n in NODES if n != victim), r
