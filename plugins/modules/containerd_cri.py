#!/usr/bin/python
# One task for containerd's Kubernetes settings: the conf.d drop-in, the few lines config.toml needs, and a check of
# the merged and the running configuration.
from __future__ import annotations

DOCUMENTATION = r"""
module: containerd_cri
short_description: containerd's CRI plugin configured for Kubernetes through a conf.d drop-in
description:
  - Writes I(dropin) (sandbox image, systemd cgroups for runc, CNI folders) in the layout of the installed containerd
    (config version 2 on 1.x, 3 on 2.x). On 1.x, where an import replaces a plugin's whole table, the drop-in carries
    config.toml's own CRI table with these keys on top.
  - Edits config.toml only where containerd would otherwise ignore the drop-in or run without CRI (Docker's
    C(disabled_plugins = ["cri"]), no C(imports) of the drop-in folder, no C(version)); other lines are kept.
  - Checks C(containerd config dump) (the merged configuration) holds the settings; with I(verify_running), that the
    running daemon loaded its CRI plugin (C(ctr plugins ls)). A restart after a change is the caller's handler.
  - Supports check mode and diff mode.
version_added: "0.1.0"
author: sparkfleet developers
options:
  config:
    description: containerd's main configuration file.
    type: path
    default: /etc/containerd/config.toml
  dropin:
    description: The drop-in file; its folder's C(*.toml) glob is what config.toml imports.
    type: path
    default: /etc/containerd/conf.d/60-sparkfleet-kubernetes.toml
  sandbox_image:
    description: The pause image for pod sandboxes (the one the kubeadm version expects; mirrorable).
    type: str
    required: true
  systemd_cgroup:
    description: runc uses the systemd cgroup driver (the kubelet's cgroupDriver must match).
    type: bool
    default: true
  cni_bin_dir:
    description: Where CNI plugins are (kubernetes-cni and Flannel install into /opt/cni/bin).
    type: path
    default: /opt/cni/bin
  cni_conf_dir:
    description: Where CNI network configurations are.
    type: path
    default: /etc/cni/net.d
  nvidia_runtime:
    description: Path of nvidia-container-runtime to add as the C(nvidia) runtime (empty = none).
    type: str
    default: ""
  nvidia_default:
    description: Make C(nvidia) the default runtime (with I(nvidia_runtime)).
    type: bool
    default: false
  verify_running:
    description: Also check the running daemon's CRI plugin (skipped while a change waits for a restart).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: containerd for Kubernetes
  sparkfleet.cluster.containerd_cri:
    sandbox_image: registry.k8s.io/pause:3.10
  notify: Restart containerd
"""

RETURN = r"""
version:
  description: The containerd version found.
  returned: always
  type: str
notes:
  description: What changed in config.toml and why.
  returned: always
  type: list
cri_status:
  description: The running CRI plugin's status from ctr (ok, skip, error), when checked.
  returned: when verified
  type: str
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils import containerd as cd


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def write(path, content, mode):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".sparkfleet-")
    with os.fdopen(fd, "w") as f:
        f.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            config=dict(type="path", default="/etc/containerd/config.toml"),
            dropin=dict(type="path", default="/etc/containerd/conf.d/60-sparkfleet-kubernetes.toml"),
            sandbox_image=dict(type="str", required=True),
            systemd_cgroup=dict(type="bool", default=True),
            cni_bin_dir=dict(type="path", default="/opt/cni/bin"),
            cni_conf_dir=dict(type="path", default="/etc/cni/net.d"),
            nvidia_runtime=dict(type="str", default=""),
            nvidia_default=dict(type="bool", default=False),
            verify_running=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    settings = {k: p[k] for k in ("sandbox_image", "systemd_cgroup", "cni_bin_dir", "cni_conf_dir",
                                   "nvidia_runtime", "nvidia_default")}
    binary = module.get_bin_path("containerd")
    if not binary:
        if module.check_mode:
            module.exit_json(changed=True, version="", notes=["containerd is not installed yet (dry run)"])
        module.fail_json(msg="containerd is not installed: the runtime layer (container_runtime) installs it first")
    rc, out, err = module.run_command([binary, "--version"])
    ver = cd.parse_version(out)
    if rc != 0 or ver is None:
        module.fail_json(msg=f"cannot read containerd's version: {(out + err).strip()}")
    major, minor, _ = ver
    glob = os.path.join(os.path.dirname(p["dropin"]), "*.toml")
    main_old = read(p["config"])
    try:
        main_new, notes = cd.plan_main(main_old, glob, major)
        main_doc = cd.loads(main_new)
        drop_new = cd.dropin(major, minor, settings, main_doc)
    except cd.ConfigError as e:
        module.fail_json(msg=f"{p['config']}: {e}")
    drop_old = read(p["dropin"])
    diffs, changed = [], False
    for path, old, new, mode in ((p["config"], main_old, main_new, 0o644), (p["dropin"], drop_old, drop_new, 0o644)):
        if old != new:
            changed = True
            diffs.append({"before_header": path, "after_header": path, "before": old or "", "after": new})
            if not module.check_mode:
                write(path, new, mode)
    result = dict(changed=changed, version=".".join(map(str, ver)), notes=notes)
    if module._diff:
        result["diff"] = diffs
    if module.check_mode and changed:
        module.exit_json(**result)
    rc, out, err = module.run_command([binary, "--config", p["config"], "config", "dump"])
    if rc != 0:
        module.fail_json(msg=f"containerd config dump failed: {(out + err).strip()[-800:]}", **result)
    problems = cd.effective_problems(out, major, minor, settings)
    if problems:
        module.fail_json(msg="containerd's merged configuration lacks our settings: " + "; ".join(problems), **result)
    if p["verify_running"] and not changed:
        ctr = module.get_bin_path("ctr", required=True)
        rc, out, err = module.run_command([ctr, "plugins", "ls"])
        status = next((ln.split()[-1] for ln in out.splitlines()
                       if ln.split()[:2] == ["io.containerd.grpc.v1", "cri"]), "absent")
        result["cri_status"] = status
        if rc != 0 or status != "ok":
            module.fail_json(msg=f"the running containerd's CRI plugin is {status} (ctr plugins ls): "
                                 f"{(err or '').strip()[-300:]}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
