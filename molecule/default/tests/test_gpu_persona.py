"""The GPU branch on DGX Spark persona nodes (lab/persona/: a Spark's software face at the hardware boundary; no role
tests for it). What a first contact with real Sparks broke, checked on the nodes: the driver branch pin apt accepts,
the runtime configured for the toolkit DGX OS ships (no repository, no key download, no reinstall), the model on every
node that runs a vLLM rank with unified-memory settings, and a report that never calls a stand-in a pass."""
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from labtools import CONTROL, NODES, PROJECT, playbook, ssh

REPORT = PROJECT / "reports" / "validate" / "latest.json"


@pytest.fixture(scope="module")
def converged_model(tmp_path_factory):
    """A tiny model published to the store, then the storage and inference layers with it (the lab's inventory has no
    model, so site.yml skipped vLLM by name)."""
    name = "tiny-gpu"
    src = tmp_path_factory.mktemp("gpu-model") / "v1"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"model_type": "tiny"}))
    res = playbook("playbooks/model_publish.yml", "-e", f"model_name={name}", "-e", "model_version=v1",
                   "-e", f"model_dir={src}", timeout=600)
    assert res.returncode == 0, res.stdout[-3000:]
    models = json.dumps({"model_sync_models": [{"name": name, "version": "v1"}]})
    # Gated, as users run them: the roles the model changes run (model_sync, vllm), the others are as converged.
    for pb in ("playbooks/storage.yml", "playbooks/inference.yml"):
        res = playbook(pb, "-e", models, env={"SPARKFLEET_GATE": "on"}, timeout=900)
        assert res.returncode == 0, res.stdout[-3000:]
    assert "vLLM's start skipped on" in res.stdout and "has no vllm" in res.stdout, res.stdout[-3000:]
    return name


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


def test_model_on_every_rank_node_and_vllm_unit_with_unified_memory_settings(converged_model):
    name = converged_model
    for n in NODES:  # every persona node has a GPU: every one runs a rank, the Ray head included
        assert ssh(n, f"test -f /models/{name}/current/config.json && echo ok").stdout.strip() == "ok", n
    unit = ssh(CONTROL, "systemctl cat sparkfleet-vllm").stdout
    util = float(re.search(r"--gpu-memory-utilization (\S+)", unit).group(1))
    assert 0.1 <= util <= 0.8, unit  # unified memory: never the 0.9 that runs a GB10 out of memory
    assert '"strategy":"SPREAD"' in unit and "RAY_memory_monitor_refresh_ms=0" in unit, unit
    assert f"--tensor-parallel-size {len(NODES) if len(NODES) in (2, 4) else 1}" in unit or "--pipeline-parallel-size" in unit
    assert ssh(CONTROL, "systemctl is-active sparkfleet-vllm", check=False).stdout.strip() != "active"  # no engine here
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
