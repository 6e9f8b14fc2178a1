#!/usr/bin/python
# Thin wrapper: run ibstat once, parse with module_utils.hwparse, compare with expectations.
from __future__ import annotations

DOCUMENTATION = r"""
module: ibstat_check
short_description: Read InfiniBand/RoCE port state with ibstat and check it
description:
  - Runs C(ibstat) (found through PATH) once and returns every CA and port it lists.
  - Fails when a checked port is not in the expected state, below the minimum rate or on another link layer,
    and names each CA/port with the reason.
  - Never changes anything; supports check mode.
version_added: "0.1.0"
author: sparkfleet developers
options:
  state:
    description: Expected port state (as ibstat prints it).
    type: str
    default: Active
  min_rate_gbps:
    description: Minimum port rate in Gb/s. Not checked when unset.
    type: float
  link_layer:
    description: Expected link layer. Not checked when unset.
    type: str
    choices: [InfiniBand, Ethernet]
  devices:
    description: CA names to check (for example C(mlx5_0)). Default all CAs found. A listed CA that is missing is a problem.
    type: list
    elements: str
    default: []
  timeout_s:
    description: Longest ibstat may take; past it the check names the timeout.
    type: int
    default: 60
  fail_on_problems:
    description: Fail the task when problems are found. With C(false) the problems are only returned.
    type: bool
    default: true
notes:
  - When C(ibstat) is not installed the module fails with C(tool_missing=true) and says so; that is not the same as a host without ports.
"""

EXAMPLES = r"""
- name: All ConnectX ports Active at 200 Gb/s or more, Ethernet (RoCE)
  sparkfleet.cluster.ibstat_check:
    min_rate_gbps: 200
    link_layer: Ethernet

- name: Only report
  sparkfleet.cluster.ibstat_check:
    devices: [mlx5_0, mlx5_1]
    fail_on_problems: false
  register: ib
"""

RETURN = r"""
cas:
  description: Every CA ibstat listed.
  returned: always
  type: list
  elements: dict
  sample: [{name: mlx5_0, ca_type: MT4129, firmware_version: 28.39.1002,
            ports: [{port: 1, state: Active, physical_state: LinkUp, rate_gbps: 400.0, link_layer: Ethernet}]}]
problems:
  description: One entry per CA/port and reason.
  returned: always
  type: list
  elements: dict
  sample: [{ca: mlx5_5, port: 1, reason: "state Down, expected Active (physical state Disabled)"}]
tool_missing:
  description: True when ibstat is not installed (the ports were then read from sysfs).
  returned: always
  type: bool
source:
  description: Where the port states came from, C(ibstat) or C(sysfs) (ibstat not installed).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.hwparse import (
    TIMEOUT_RC,
    bounded,
    cas_from_sysfs,
    ibstat_problems,
    parse_ibstat,
    read_rdma_sysfs,
)


def last_line(text):
    lines = (text or "").strip().splitlines()
    return lines[-1].strip()[:300] if lines else "no output"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", default="Active"),
            min_rate_gbps=dict(type="float"),
            link_layer=dict(type="str", choices=["InfiniBand", "Ethernet"]),
            devices=dict(type="list", elements="str", default=[]),
            fail_on_problems=dict(type="bool", default=True),
            timeout_s=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    p = module.params
    exe = module.get_bin_path("ibstat")
    problems = []
    if not exe:
        # ibstat (infiniband-diags) reads sysfs through libibumad: without it, the same kernel view straight from sysfs.
        cas = cas_from_sysfs(read_rdma_sysfs("/sys"))
        if not cas:
            problems.append({"ca": None, "port": None, "reason": "ibstat not installed and no RDMA device in sysfs"})
        source, prefix, unnamed = "sysfs", "RDMA port check (sysfs, ibstat not installed) failed: ", "-"
    else:
        rc, out, err = module.run_command(bounded([exe], p["timeout_s"], module.get_bin_path("timeout")), check_rc=False)
        if rc == TIMEOUT_RC:
            err = "ibstat did not answer within %d s" % p["timeout_s"]
        cas, notes = parse_ibstat(out)
        if rc != 0:
            problems.append({"ca": None, "port": None,
                             "reason": "ibstat exited %d: %s" % (rc, last_line(err or out))})
        for line in notes + (err or "").strip().splitlines():
            if line.lower().startswith(("ibpanic", "ibwarn", "iberror", "ibstat:")) or "error" in line.lower():
                problems.append({"ca": None, "port": None, "reason": line.strip()[:300]})
        if rc == 0 and not cas and not problems:
            problems.append({"ca": None, "port": None, "reason": "ibstat listed no CA"})
        source, prefix, unnamed = "ibstat", "ibstat check failed: ", "ibstat"
    problems += ibstat_problems(cas, p["state"], p["min_rate_gbps"], p["link_layer"], p["devices"])
    result = dict(changed=False, cas=cas, problems=problems, tool_missing=not exe, source=source)
    if problems and p["fail_on_problems"]:
        msg = "; ".join("%s port %s: %s" % (x["ca"] or unnamed, x["port"] if x["port"] is not None else "-", x["reason"])
                        for x in problems)
        module.fail_json(msg=prefix + msg, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
