#!/usr/bin/python
# Thin wrapper over module_utils.hwparse.read_rdma_sysfs: no text parsing, sysfs only.
from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_facts
short_description: Map RDMA devices to netdevs, port state, rate and RoCE v2 GID index from sysfs
description:
  - Reads C(/sys/class/infiniband/*) and sets C(ansible_facts.rdma).
  - For each device and port, returns state, physical state, rate (Gb/s), link layer, netdev and the
    index of the RoCE v2 GID (the IPv4-mapped one when there is one), which the fabric role uses for
    C(NCCL_IB_HCA) and GID checks.
  - A host without RDMA devices gets C(present=false); that is not an error.
version_added: "0.1.0"
author: sparkfleet developers
options:
  sysfs_root:
    description: Root of the sysfs tree (tests point it at a fake tree).
    type: path
    default: /sys
"""

EXAMPLES = r"""
- name: Read RDMA state
  sparkfleet.cluster.rdma_facts:

- name: HCA list for NCCL
  ansible.builtin.debug:
    msg: "{{ ansible_facts.rdma.devices | map(attribute='name') | join(',') }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(rdma).
  returned: always
  type: dict
  contains:
    rdma:
      description: present (bool) and devices [{name, netdevs, ports [{port, state, physical_state,
        rate_gbps, link_layer, netdev, roce_v2_gid_index, ipv4, gids}]}].
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.hwparse import read_rdma_sysfs


def main():
    module = AnsibleModule(argument_spec=dict(sysfs_root=dict(type="path", default="/sys")), supports_check_mode=True)
    devices = read_rdma_sysfs(module.params["sysfs_root"])
    module.exit_json(changed=False, ansible_facts={"rdma": {"present": bool(devices), "devices": devices}})


if __name__ == "__main__":
    main()
