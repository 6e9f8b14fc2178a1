#!/usr/bin/python
# One round trip decides whether a role has anything to do on this node (the action plugin of the same name adds the
# controller-side digest of the role's inputs).
from __future__ import annotations

DOCUMENTATION = r"""
module: role_gate
short_description: Skip a role where nothing it reads or manages changed since it last converged
description:
  - Reads the role's footprint on the node (files, systemd units, packages, read-only probe commands), reduces it to
    one digest and compares it, with the digest of the role's inputs, to the stamp the role's last converge left.
  - With I(stamp=false) it answers I(run). With I(stamp=true) (after the role converged) it writes the stamp.
    The stamp is sparkfleet's own bookkeeping under I(stamp_dir); writing it never reports a change, and in check
    mode nothing is written.
  - With I(scan=true) it re-reads the footprint of every stamp on the node (with the spec each recorded) and
    answers, per role, whether it is still the same; preflight does this once per run, and each role's gate then
    decides on the controller, without another round trip.
  - Use it through the action plugin of the same name, which computes I(inputs_digest) on the controller.
version_added: "0.1.0"
author: sparkfleet developers
options:
  role:
    description: The role's name (the stamp's file name). Required unless I(scan).
    type: str
  inputs_digest:
    description: Digest of the role's inputs (set by the action plugin). Required unless I(scan).
    type: str
  scan:
    description: Answer, for every stamp on the node, whether its footprint still reads the same (I(roles)).
    type: bool
    default: false
  paths:
    description: Files and directories the role manages or that decide what it writes (directories by their tree).
    type: list
    elements: path
    default: []
  services:
    description: Systemd units the role keeps enabled and running (their load, active and enablement state).
    type: list
    elements: str
    default: []
  packages:
    description: Debian packages the role installs (their installed version and status).
    type: list
    elements: str
    default: []
  commands:
    description: Read-only probe commands (shell) whose exit code and output are part of the footprint.
    type: list
    elements: str
    default: []
  stamp:
    description: Write the stamp (after the role converged) instead of answering I(run).
    type: bool
    default: false
  stamp_dir:
    description: Where the stamps live (root only).
    type: path
    default: /var/lib/sparkfleet/gate
"""

EXAMPLES = r"""
- name: Gate
  sparkfleet.cluster.role_gate:
    role: chrony
    paths: [/etc/chrony/conf.d/sparkfleet.conf]
    services: [chrony]
    packages: [chrony]
  register: _chrony_gate
"""

RETURN = r"""
run:
  description: The role has to run here (I(stamp=false) only).
  returned: always
  type: bool
reason:
  description: Why it runs or is skipped.
  returned: always
  type: str
footprint_digest:
  description: Digest of the footprint as read now.
  returned: unless scan
  type: str
roles:
  description: With I(scan), per role, C(inputs) (the stamped inputs digest) and C(same) (footprint unchanged).
  returned: scan
  type: dict
"""

import glob
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils import footprint as fp

SPEC_KEYS = ("paths", "services", "packages", "commands")
PROBE_TIMEOUT_S = 60  # longest one probe command may take


def read_footprint(module, spec: dict) -> str:
    paths = {path: fp.path_state(path) for path in spec.get("paths") or []}
    services = {}
    units = list(spec.get("services") or [])
    if units:
        cmd = ["systemctl", "show", "-p", "Id,LoadState,ActiveState,UnitFileState", "--", *units]
        rc, out, err = module.run_command(cmd)
        if rc != 0:
            raise fp.FootprintError(f"systemctl show: rc {rc}: {err.strip()}")
        services = fp.parse_systemctl_show(out, units)
    packages = ""
    if spec.get("packages"):
        rc, out, _ = module.run_command(["dpkg-query", "-W", "-f", "${binary:Package}=${Version} ${db:Status-Abbrev}\n",
                                         *spec["packages"]])
        packages = f"{rc}\n{out}"  # a missing package: rc 1 and no line for it
    commands = {}
    timeout = module.get_bin_path("timeout")
    for c in spec.get("commands") or []:
        # Bounded, in the probe's own process group: a probe that hangs (nvidia-smi on a GPU wedged by an Xid) must not
        # hang the scan of every role, and with it every run. Past the bound it reads as changed (rc 124), so the role
        # runs and names what hangs.
        argv = [timeout, "-k", "5", str(PROBE_TIMEOUT_S), "sh", "-c", c] if timeout else c
        rc, out, _ = module.run_command(argv, use_unsafe_shell=not timeout)
        commands[c] = [rc, out]
    return fp.state_digest(paths, services, packages, commands)


def scan(module, stamp_dir: str) -> dict:
    """Every stamp on this node, its footprint read again with the spec it recorded: one round trip for all roles."""
    out = {}
    for path in sorted(glob.glob(os.path.join(stamp_dir, "*.json"))):
        stamp = fp.read_stamp(path)
        if not stamp:
            continue
        try:
            digest = read_footprint(module, stamp.get("spec") or {})
        except fp.FootprintError:
            digest = None  # unreadable now: the role runs and says why
        out[os.path.basename(path)[:-5]] = fp.scan_entry(stamp, digest)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str"),
            inputs_digest=dict(type="str"),
            paths=dict(type="list", elements="path", default=[]),
            services=dict(type="list", elements="str", default=[]),
            packages=dict(type="list", elements="str", default=[]),
            commands=dict(type="list", elements="str", default=[]),
            stamp=dict(type="bool", default=False),
            scan=dict(type="bool", default=False),
            stamp_dir=dict(type="path", default="/var/lib/sparkfleet/gate"),
        ),
        required_if=[("scan", False, ("role", "inputs_digest"))],
        supports_check_mode=True,
    )
    p = module.params
    if p["scan"]:
        module.exit_json(changed=False, roles=scan(module, p["stamp_dir"]))
    spec = {k: p[k] for k in SPEC_KEYS}
    stamp_path = os.path.join(p["stamp_dir"], f"{p['role']}.json")
    try:
        digest = read_footprint(module, spec)
    except fp.FootprintError as e:
        module.fail_json(msg=f"role gate {p['role']}: footprint unreadable: {e}")
    if p["stamp"]:
        if not module.check_mode:
            fp.write_stamp(stamp_path, p["inputs_digest"], digest, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), spec)
        module.exit_json(changed=False, run=False, reason="stamp written" if not module.check_mode else "check mode: no stamp",
                         footprint_digest=digest)
    stamp = fp.read_stamp(stamp_path)
    run, reason = fp.verdict(stamp, p["inputs_digest"], bool(stamp) and stamp.get("footprint") == digest)
    module.exit_json(changed=False, run=run, reason=reason, footprint_digest=digest)


if __name__ == "__main__":
    main()
