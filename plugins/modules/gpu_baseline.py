#!/usr/bin/python
# Thin wrapper: runs module_utils.gpu_baseline.PROBE under a Python with torch, judged by module_utils.gpu_baseline.
from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_baseline
short_description: Single-node GPU baseline (bf16 matmul rate, device memory copy bandwidth) against a platform table
description:
  - Runs a short torch probe under I(python) on every GPU of the node - a bf16 matmul of I(matmul_n) squared and a
    device-to-device copy of I(copy_mib) MiB, I(iters) times each - and compares both figures with the reference of the
    GPU's platform (GB10, H100, H200, B200; I(platforms) overrides) at I(min_share).
  - Without torch in I(python) the result is C(not_checked) with that reason; a probe that runs past I(timeout_s)
    (a wedged GPU) fails by name instead of hanging.
  - Never changes anything; supports check mode (the probe only reads).
version_added: "0.1.0"
author: sparkfleet developers
options:
  python:
    description: Python interpreter that has torch with CUDA.
    type: str
    default: python3
  matmul_n:
    description: Size of the square bf16 matrices.
    type: int
    default: 8192
  iters:
    description: Timed repetitions of each measurement.
    type: int
    default: 20
  copy_mib:
    description: Size of the copied buffer in MiB.
    type: int
    default: 1024
  min_share:
    description: Share of the platform's reference a GPU must reach.
    type: float
    default: 0.75
  platforms:
    description: Reference table (GPU name substring -> tflops_bf16, copy_tbps); default module_utils.gpu_baseline.PLATFORMS.
    type: dict
  timeout_s:
    description: Longest the probe may run.
    type: int
    default: 300
"""

EXAMPLES = r"""
- name: GPU baseline with the inference environment's torch
  sparkfleet.cluster.gpu_baseline:
    python: /opt/sparkfleet/inference/bin/python
"""

RETURN = r"""
checks:
  description: One result per GPU and figure (check gpu_baseline, target, status pass/fail/not_checked, detail, measured).
  returned: always
  type: list
raw:
  description: The probe's own result (torch and CUDA versions, per-GPU figures), or its error.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils import gpu_baseline


def main():
    module = AnsibleModule(argument_spec=dict(python=dict(type="str", default="python3"), matmul_n=dict(type="int", default=8192),
                                              iters=dict(type="int", default=20), copy_mib=dict(type="int", default=1024),
                                              min_share=dict(type="float", default=gpu_baseline.DEFAULT_MIN_SHARE),
                                              platforms=dict(type="dict"), timeout_s=dict(type="int", default=300)),
                           supports_check_mode=True)
    p = module.params
    exe = p["python"] if "/" in p["python"] else module.get_bin_path(p["python"])
    if not exe or not module.get_bin_path("timeout"):
        data = {"error": "no_torch", "message": "%s not found" % p["python"]}
    else:
        argv = ["timeout", str(p["timeout_s"]), exe, "-c", gpu_baseline.PROBE, str(p["matmul_n"]), str(p["iters"]), str(p["copy_mib"])]
        rc, out, err = module.run_command(argv, check_rc=False)
        if rc == 124:
            data = {"error": "timeout", "message": "the probe ran past %d s (a wedged GPU?)" % p["timeout_s"]}
        elif rc != 0 and "{" not in (out or ""):
            data = {"error": "probe_failed", "message": "rc %d: %s" % (rc, (err or out or "").strip()[-300:])}
        else:
            data = gpu_baseline.parse(out)
    module.exit_json(changed=False, raw=data, checks=gpu_baseline.judge(data, p["platforms"], p["min_share"]))


if __name__ == "__main__":
    main()
