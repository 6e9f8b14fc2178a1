#!/usr/bin/python
# Thin wrapper: nvidia-smi --query-gpu (+ --version for CUDA), parsed by module_utils.hwparse.
from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_facts
short_description: Gather NVIDIA GPU facts with nvidia-smi
description:
  - Runs C(nvidia-smi --query-gpu=... --format=csv,noheader,nounits) and sets C(ansible_facts.nvidia).
  - Driver errors do not fail the task; they are reported in C(nvidia.error) so roles can decide.
    It fails only on unusable arguments.
  - Values nvidia-smi prints as C(N/A) or C(Not Supported) (GB10 memory) become null.
  - Drivers too old for the C(fabric.*) fields are queried again without them (fabric values null).
version_added: "0.1.0"
author: sparkfleet developers
options:
  timeout_s:
    description: Longest one nvidia-smi call may take; past it the result is error kind C(timeout) (a wedged GPU).
    type: int
    default: 60
  nvidia_smi:
    description: Path or name of nvidia-smi (looked up on PATH).
    type: str
    default: nvidia-smi
  rdma:
    description: Also read the RDMA devices and ports from sysfs into C(ansible_facts.rdma), as C(rdma_facts) does
      (one round trip for both, where a play needs both).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Read GPU state
  sparkfleet.cluster.gpu_facts:

- name: Stop when the driver needs a reboot
  ansible.builtin.assert:
    that: ansible_facts.nvidia.error is none or ansible_facts.nvidia.error.kind != 'driver_library_mismatch'
    fail_msg: "reboot needed: {{ ansible_facts.nvidia.error.message | default('') }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(nvidia).
  returned: always
  type: dict
  contains:
    nvidia:
      description: driver_version, cuda_version, gpus (index, name, uuid, pci_bus_id, memory_total_mib,
        fabric_state, fabric_status) and error (null or {kind, message}; kind one of no_driver,
        driver_library_mismatch, no_devices, other).
      type: dict
      sample: {driver_version: 580.159.04, cuda_version: "13.0", error: null,
               gpus: [{index: 0, name: NVIDIA H200, uuid: GPU-48bd4383-4bb8-eed2-190d-057a4b212c62,
                       pci_bus_id: "00000000:00:06.0", memory_total_mib: 143771, fabric_state: null, fabric_status: null}]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.hwparse import (
    GPU_QUERY_FIELDS,
    bounded,
    classify_nvsmi_error,
    parse_cuda_version,
    parse_query_gpu,
    read_rdma_sysfs,
    unknown_field,
)


def run(module, argv):
    return module.run_command(bounded(argv, module.params["timeout_s"], module.get_bin_path("timeout")), check_rc=False)


def query(module, exe, fields):
    rc, out, err = run(module, [exe, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"])
    return rc, out or "", err or ""


def gather(module, exe):
    facts = {"driver_version": None, "cuda_version": None, "gpus": [], "error": None}
    if not exe:
        facts["error"] = {"kind": "no_driver", "message": "nvidia-smi not found on PATH (no NVIDIA driver installed)"}
        return facts
    fields = list(GPU_QUERY_FIELDS)
    rc, out, err = query(module, exe, fields)
    # Older drivers do not know fabric.*: ask again without the fields they reject.
    while rc != 0 and unknown_field(out + err) in fields and unknown_field(out + err).startswith("fabric."):
        fields.remove(unknown_field(out + err))
        rc, out, err = query(module, exe, fields)
    error = classify_nvsmi_error(out + "\n" + err, rc, module.params["timeout_s"])
    if error:
        facts["error"] = error
        return facts
    gpus, driver, notes = parse_query_gpu(out, tuple(fields))
    facts["gpus"], facts["driver_version"] = gpus, driver
    if not gpus:
        facts["error"] = {"kind": "no_devices" if not notes else "other",
                          "message": notes[0][:500] if notes else "nvidia-smi listed no GPU"}
    elif notes:
        facts["error"] = {"kind": "other", "message": "unparsed nvidia-smi output: " + notes[0][:300]}
    rc, out, err = run(module, [exe, "--version"])
    cuda = parse_cuda_version(out) if rc == 0 else None
    if cuda is None:  # drivers before --version: the banner of plain nvidia-smi has it
        rc, out, err = run(module, [exe])
        cuda = parse_cuda_version(out)
    facts["cuda_version"] = cuda
    return facts


def main():
    module = AnsibleModule(argument_spec=dict(nvidia_smi=dict(type="str", default="nvidia-smi"),
                                              rdma=dict(type="bool", default=False),
                                              timeout_s=dict(type="int", default=60)),
                           supports_check_mode=True)
    name = module.params["nvidia_smi"]
    if not name or any(c in name for c in ";|&$`\n"):
        module.fail_json(msg="nvidia_smi: unusable value %r" % name)
    exe = name if "/" in name else module.get_bin_path(name)
    facts = {"nvidia": gather(module, exe)}
    if module.params["rdma"]:
        devices = read_rdma_sysfs("/sys")
        facts["rdma"] = {"present": bool(devices), "devices": devices}
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
