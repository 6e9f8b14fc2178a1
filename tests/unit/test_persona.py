"""The lab's DGX Spark persona at the hardware boundary (lab/persona/): its nvidia-smi replays real GB10 recordings
for every invocation the project makes and names any other; the project's parsers read it as a GB10 (memory "Not
Supported" included); the report marks what rests on it `persona`; the stand-in packages carry NVIDIA's names."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from ansible_collections.sparkfleet.cluster.plugins.module_utils import hwparse, inference
from sparkfleet_tools import validate_report

PERSONA = ROOT / "lab" / "persona"
QUERY = "--query-gpu=" + ",".join(hwparse.GPU_QUERY_FIELDS)


def smi(tmp_path, *args, persona="spark"):
    marker = tmp_path / "persona"
    marker.write_text(persona + "\n")
    env = dict(os.environ, SPARKFLEET_PERSONA_DIR=str(PERSONA), SPARKFLEET_PERSONA_MARKER=str(marker))
    return subprocess.run([sys.executable, str(PERSONA / "nvidia-smi"), *args], env=env, capture_output=True, text=True)


def test_gpu_facts_query_reads_as_a_gb10_with_unified_memory(tmp_path):
    res = smi(tmp_path, QUERY, "--format=csv,noheader,nounits")
    assert res.returncode == 0, res.stderr
    gpus, driver, notes = hwparse.parse_query_gpu(res.stdout)
    assert notes == [] and driver == "580.95.05"
    assert [g["name"] for g in gpus] == ["NVIDIA GB10"] and gpus[0]["pci_bus_id"] == "0000000F:01:00.0"
    assert gpus[0]["memory_total_mib"] is None  # [N/A]: GB10 shares the node's memory
    assert inference.unified_memory(gpus)


def test_version_table_and_list_come_from_the_recordings(tmp_path):
    assert hwparse.parse_cuda_version(smi(tmp_path, "--version").stdout) == "13.0"
    table = smi(tmp_path).stdout
    assert "NVIDIA GB10" in table and "Not Supported" in table and hwparse.parse_cuda_version(table) == "13.0"
    assert smi(tmp_path, "-L").stdout.startswith("GPU 0: NVIDIA GB10 (UUID: GPU-")
    assert smi(tmp_path, "nvlink", "--status").returncode == 0  # no NVLink on GB10: nothing listed


def test_an_invocation_without_a_recording_fails_naming_its_arguments(tmp_path):
    res = smi(tmp_path, "topo", "-m")
    assert res.returncode == 3 and "no recording for `nvidia-smi topo -m`" in res.stderr
    bad = smi(tmp_path, "--query-gpu=index,no.such.field", "--format=csv")
    assert bad.returncode == 2 and hwparse.unknown_field(bad.stdout) == "no.such.field"


def test_every_preinstalled_package_is_in_the_repository_with_nvidia_names():
    spec = {(p[0], p[1]) for p in json.loads((PERSONA / "repo.json").read_text())["packages"]}
    hw = json.loads((PERSONA / "spark" / "hardware.json").read_text())
    assert {tuple(p.split("=")) for p in hw["preinstalled"]} <= spec
    names = {n for n, _ in spec}
    assert {"nvidia-container-toolkit", "cuda-drivers", "nvidia-driver-580-open", "nvidia-driver-590-open"} <= names
    assert [d["name"] for d in hw["rdma"]] == ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]


def test_report_marks_stand_in_evidence_persona_never_pass(tmp_path):
    checks = lambda: [{"check": "gpu", "target": "nvidia-smi", "status": "pass", "detail": "1 GPU(s) NVIDIA GB10"},  # noqa: E731
                      {"check": "connectx", "target": "rocep1s0f0", "status": "pass", "detail": "up"},
                      {"check": "fleet_version", "target": "driver", "status": "pass", "detail": "580.95.05"},
                      {"check": "firewall", "target": "inet sparkfleet", "status": "pass", "detail": "loaded"},
                      {"check": "nvlink", "target": "nvidia-smi nvlink", "status": "fail", "detail": "x"}]
    data = {"cluster": "lab", "hosts": {"spark-01": checks(), "real-01": checks()}, "personas": {"spark-01": "spark"}}
    out = tmp_path / "v"
    validate_report.main(["--input", json.dumps(data), "--out", str(out)])
    rep = json.loads((out / "latest.json").read_text())
    st = {c["check"]: c["status"] for c in rep["hosts"]["spark-01"]}
    assert st == {"gpu": "persona", "connectx": "persona", "fleet_version": "persona", "firewall": "pass", "nvlink": "fail"}
    assert all(c["status"] != "persona" for c in rep["hosts"]["real-01"])
    assert rep["persona"] == 3 and "stand-in" in rep["hosts"]["spark-01"][0]["detail"]
    md = (out / "latest.md").read_text()
    assert "3 persona" in md and "no real hardware was verified" in md
    assert 'skipped="3"' in (out / "latest.xml").read_text()


@pytest.mark.parametrize(("unified", "mem_mb", "explicit", "want"), [
    (True, 128 * 1024, None, 0.8),      # GB10 (about 121.7 GiB seen): capped at NVIDIA's 0.8
    (True, 24 * 1024, None, 0.33),      # a small unified-memory node: what leaves the OS 16 GiB
    (False, 2 * 1024 * 1024, None, 0.9),  # dedicated GPU memory (H100/H200)
    (True, 128 * 1024, 0.7, 0.7),       # the user's value wins
])
def test_vllm_memory_fraction_leaves_the_os_room_on_unified_memory(unified, mem_mb, explicit, want):
    assert inference.vllm_memory_fraction(unified, mem_mb, explicit) == pytest.approx(want)


def test_vllm_env_spreads_one_gpu_nodes_and_stops_rays_memory_monitor_on_unified_memory():
    env = inference.vllm_env(2, 1, True)
    assert json.loads(env["VLLM_DISTRIBUTED_EXECUTOR_CONFIG"]) == {"placement_group_options": {"strategy": "SPREAD"}}
    assert env["RAY_memory_monitor_refresh_ms"] == "0"
    assert inference.vllm_env(2, 8, False) == {}  # 8-GPU nodes: PACK fits, memory is the GPU's own


def test_hgx_persona_reads_as_eight_h100_on_a_completed_fabric(tmp_path):
    res = smi(tmp_path, QUERY, "--format=csv,noheader,nounits", persona="hgx")
    gpus, driver, notes = hwparse.parse_query_gpu(res.stdout)
    assert res.returncode == 0 and notes == [] and driver == "535.161.08"
    assert len(gpus) == 8 and {g["name"] for g in gpus} == {"NVIDIA H100 80GB HBM3"}
    assert {(g["fabric_state"], g["fabric_status"]) for g in gpus} == {("Completed", "Success")}
    assert gpus[0]["memory_total_mib"] == 81559 and not inference.unified_memory(gpus)
    assert "==============NVSMI LOG==============" in smi(tmp_path, "-q", persona="hgx").stdout
    hw = json.loads((PERSONA / "hgx" / "hardware.json").read_text())
    assert sum(d["class"].startswith("0x0680") for d in hw["pci"]) == 4  # NVSwitches, as nvidia_platform counts them
