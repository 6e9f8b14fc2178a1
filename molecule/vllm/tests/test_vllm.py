"""vLLM without GPUs: skipped with the reason, no unit and no Prometheus target."""
from __future__ import annotations

from labtools import CONTROL, role_run, ssh


def test_skip_is_named_and_nothing_runs():
    out = role_run()
    assert f"vLLM skipped on {CONTROL}: no NVIDIA GPU on any node of the inference layer" in out, out[-2000:]
    assert ssh(CONTROL, "systemctl cat sparkfleet-vllm.service", check=False).returncode != 0
