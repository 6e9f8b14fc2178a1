#!/usr/bin/python
# Thin wrapper: what NVIDIA hardware and OS flavour this node has, from sysfs and /etc (no tools needed).
from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_platform
short_description: Detect NVIDIA GPUs, NVSwitches and DGX OS on a node
description:
  - Reads C(/sys/bus/pci/devices) (PCI vendor 10de; GPUs are class 0300/0302, NVSwitches class 0680)
    and C(/etc/dgx-release), and sets C(ansible_facts.nvidia_platform).
  - Needs no driver and no tool, so roles can decide what applies before installing anything.
version_added: "0.1.0"
author: sparkfleet developers
options:
  sysfs_root:
    description: Root of sysfs (tests point it at a fake tree).
    type: path
    default: /sys
  dgx_release:
    description: Path of the DGX OS release file.
    type: path
    default: /etc/dgx-release
"""

EXAMPLES = r"""
- name: Detect NVIDIA hardware
  sparkfleet.cluster.nvidia_platform:
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(nvidia_platform) - gpus and nvswitches (each {address, device_id, class}),
    gpu_count, nvswitch_count, dgx_os (bool), dgx_release (dict or null).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.hwparse import parse_os_release, read_nvidia_pci


def main():
    module = AnsibleModule(argument_spec=dict(sysfs_root=dict(type="path", default="/sys"),
                                              dgx_release=dict(type="path", default="/etc/dgx-release")),
                           supports_check_mode=True)
    gpus, switches = read_nvidia_pci(module.params["sysfs_root"])
    dgx = None
    try:
        with open(module.params["dgx_release"]) as f:
            dgx = parse_os_release(f.read())
    except OSError:
        pass
    module.exit_json(changed=False, ansible_facts={"nvidia_platform": {
        "gpus": gpus, "nvswitches": switches, "gpu_count": len(gpus), "nvswitch_count": len(switches),
        "dgx_os": dgx is not None, "dgx_release": dgx}})


if __name__ == "__main__":
    main()
