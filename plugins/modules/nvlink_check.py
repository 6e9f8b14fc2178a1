#!/usr/bin/python
# Thin wrapper: one `nvidia-smi nvlink --status` call, parsed by module_utils.hwparse.
from __future__ import annotations

DOCUMENTATION = r"""
module: nvlink_check
short_description: Read NVLink state with nvidia-smi and check it
description:
  - "Runs C(nvidia-smi nvlink --status) once. GPU index, name and UUID come from its C(GPU N: NAME (UUID: ...)) lines."
  - Empty output means no NVLink information (a PCIe GPU, a single H200, a GB10); then C(gpus) is empty, which is a
    problem only if I(min_active_links) > 0.
  - Never changes anything; supports check mode.
version_added: "0.1.0"
author: sparkfleet developers
options:
  min_active_links:
    description: Minimum number of active links per GPU.
    type: int
    default: 0
  min_speed_gbps:
    description: Minimum speed of each active link, in GB/s (gigabytes per second, as nvidia-smi prints it).
    type: float
  fail_on_problems:
    description: Fail the task when problems are found.
    type: bool
    default: true
  timeout_s:
    description: Longest the nvidia-smi call may take; past it the error kind is C(timeout) (a wedged GPU).
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Every GPU of an HGX H100 has its 18 links up
  sparkfleet.cluster.nvlink_check:
    min_active_links: 18
    min_speed_gbps: 26
"""

RETURN = r"""
gpus:
  description: GPUs with their links. C(speed_gbps) is in GB/s as nvidia-smi prints it; null for inactive links.
  returned: always
  type: list
  elements: dict
  sample: [{index: 0, name: NVIDIA A100-SXM4-80GB, uuid: GPU-5269b708-678a-b1a8-60f0-c90406537486,
            links: [{link: 0, active: true, speed_gbps: 25.0}]}]
problems:
  description: One entry per GPU/link and reason.
  returned: always
  type: list
  elements: dict
error:
  description: null, or C({kind, message}) when nvidia-smi could not be run or NVML failed
    (kinds C(no_driver), C(driver_library_mismatch), C(no_devices), C(other)).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.hwparse import (
    bounded,
    classify_nvsmi_error,
    nvlink_problems,
    parse_nvlink_status,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            min_active_links=dict(type="int", default=0),
            min_speed_gbps=dict(type="float"),
            fail_on_problems=dict(type="bool", default=True),
            timeout_s=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["min_active_links"] < 0:
        module.fail_json(msg="min_active_links must be >= 0, got %d" % p["min_active_links"])
    exe = module.get_bin_path("nvidia-smi")
    gpus, problems, error = [], [], None
    if not exe:
        error = {"kind": "no_driver", "message": "nvidia-smi not found on PATH (no NVIDIA driver installed)"}
    else:
        rc, out, err = module.run_command(bounded([exe, "nvlink", "--status"], p["timeout_s"], module.get_bin_path("timeout")),
                                          check_rc=False)
        error = classify_nvsmi_error((out or "") + "\n" + (err or ""), rc, p["timeout_s"])
        if error is None:
            gpus, notes = parse_nvlink_status(out)
            problems += [{"gpu": None, "link": None, "reason": n[:300]} for n in notes]
    if error:
        problems.append({"gpu": None, "link": None, "reason": "%s: %s" % (error["kind"], error["message"])})
    else:
        problems += nvlink_problems(gpus, p["min_active_links"], p["min_speed_gbps"])
    result = dict(changed=False, gpus=gpus, problems=problems, error=error)
    if problems and p["fail_on_problems"]:
        msg = "; ".join("GPU %s link %s: %s" % (x["gpu"] if x["gpu"] is not None else "-",
                                                 x["link"] if x["link"] is not None else "-", x["reason"])
                        for x in problems)
        module.fail_json(msg="NVLink check failed: " + msg, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
