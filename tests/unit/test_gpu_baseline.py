"""Single-node GPU baseline (module_utils/gpu_baseline.py): the probe's answer judged against the platform table, with
the figures the GPU machine gave (tests/fixtures/device-runs/) where a run exists."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

from ansible_collections.sparkfleet.cluster.plugins.module_utils import gpu_baseline as gb

RUNS = sorted((ROOT / "tests" / "fixtures" / "device-runs").glob("*/gpu-baseline.json"))


def probe_answer(name, tflops, tbps, index=0):
    return {"torch": "2.11.0", "cuda": "13.0", "gpus": [{"index": index, "name": name, "tflops_bf16": tflops, "copy_tbps": tbps}]}


@pytest.mark.parametrize(("name", "plat"), [("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H200", "H200"), ("NVIDIA GB10", "GB10"),
                                            ("NVIDIA B200", "B200"), ("NVIDIA GeForce RTX 5090", None)])
def test_platform_from_the_gpu_name(name, plat):
    assert gb.platform_of(name) == plat


def test_an_h100_at_its_reference_passes_and_a_slow_one_fails_naming_the_figures():
    ok = gb.judge(probe_answer("NVIDIA H100 80GB HBM3", 802.0, 3.0))
    assert [c["status"] for c in ok] == ["pass", "pass"]
    slow = gb.judge(probe_answer("NVIDIA H100 80GB HBM3", 400.0, 3.0))
    assert slow[0]["status"] == "fail" and "400.0 TFLOP/s, expected >= 600" in slow[0]["detail"]
    assert slow[0]["target"] == "GPU 0 bf16 matmul"


def test_no_torch_is_not_checked_and_a_timeout_fails_by_name():
    assert gb.judge({"error": "no_torch", "message": "No module named 'torch'"})[0]["status"] == "not_checked"
    t = gb.judge({"error": "timeout", "message": "the probe ran past 300 s (a wedged GPU?)"})[0]
    assert t["status"] == "fail" and "wedged" in t["detail"]


def test_unknown_platform_is_not_checked_and_the_table_can_be_overridden():
    res = gb.judge(probe_answer("NVIDIA GeForce RTX 5090", 200.0, 1.5))
    assert {c["status"] for c in res} == {"not_checked"}
    mine = {"RTX 5090": {"tflops_bf16": 200.0, "copy_tbps": 1.5}}
    assert {c["status"] for c in gb.judge(probe_answer("NVIDIA GeForce RTX 5090", 200.0, 1.5), mine)} == {"pass"}


def test_parse_takes_the_last_json_line_and_names_garbage():
    assert gb.parse('warning: x\n{"gpus": []}\n') == {"gpus": []}
    assert gb.parse("Segmentation fault")["error"] == "unparsed"


def test_probe_without_torch_answers_no_torch():
    res = subprocess.run([sys.executable, "-c", gb.PROBE, "64", "1", "1"], capture_output=True, text=True, check=False)
    data = gb.parse(res.stdout)
    if "gpus" in data:  # a machine with torch and CUDA: nothing to assert here
        pytest.skip("torch with CUDA present")
    assert data["error"] in ("no_torch", "no_cuda")


@pytest.mark.parametrize("run", RUNS, ids=[p.parent.name for p in RUNS])
def test_real_device_runs_pass_against_the_table(run):
    raw = json.loads(run.read_text())
    checks = gb.judge(raw)
    assert checks and all(c["status"] == "pass" for c in checks), checks


def test_the_h100_baseline_repeats_within_two_percent():
    """Three more probes on the same H100 (tests/fixtures/device-runs/h100-2026-12-07): every one passes, and the
    figures agree within 2 %, so the 0.75 share is far from noise."""
    lines = (ROOT / "tests" / "fixtures" / "device-runs" / "h100-2026-12-07" / "gpu-baseline-repeats.jsonl").read_text()
    runs = [json.loads(line) for line in lines.splitlines() if line.strip()]
    assert len(runs) == 3 and all(c["status"] == "pass" for r in runs for c in gb.judge(r))
    for key in ("tflops_bf16", "copy_tbps"):
        vals = [r["gpus"][0][key] for r in runs]
        assert (max(vals) - min(vals)) / max(vals) < 0.02, (key, vals)
