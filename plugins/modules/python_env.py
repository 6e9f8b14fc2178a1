#!/usr/bin/python
# Thin module: the lock parsing and comparison live in module_utils/inference.py.
from __future__ import annotations

DOCUMENTATION = r"""
module: python_env
short_description: A virtual environment that holds exactly what a hash-pinned lock says, installed without an index
description:
  - Compares the environment at I(path) with I(lock) (every distribution and its version, and the Python it runs on).
    Where anything differs, or the environment is missing, it rebuilds it from the wheels in I(wheels) (a tar of
    wheels) with C(pip install --no-index --require-hashes); no package index is reached.
  - Check mode reports what would change (the differences in the diff) and changes nothing.
  - Returns the environment's Python version and the installed distributions, for the fleet consistency check.
version_added: "0.1.0"
author: sparkfleet developers
options:
  path:
    description: The virtual environment's folder.
    type: path
    required: true
  lock:
    description: The lock file's text (C(name==version --hash=sha256:...) lines).
    type: str
    required: true
  wheels:
    description: A tar of the wheels the lock names for this node's Python and architecture.
    type: path
    required: true
  python:
    description: The interpreter the environment is made from.
    type: path
    default: /usr/bin/python3
"""

EXAMPLES = r"""
- name: The inference environment
  sparkfleet.cluster.python_env:
    path: /opt/sparkfleet/inference
    lock: "{{ lookup('ansible.builtin.file', 'python-env.lock') }}"
    wheels: /var/cache/sparkfleet/wheels.tar
"""

RETURN = r"""
python_version:
  description: The environment's Python version (C(3.12.3)); null where it does not exist (check mode).
  returned: always
  type: str
packages:
  description: Installed distributions and versions (canonical names), without pip/setuptools/wheel.
  returned: always
  type: dict
differences:
  description: What differed from the lock before this run (empty when nothing did).
  returned: always
  type: list
  elements: str
"""

import json
import os
import shutil
import tarfile
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.inference import VENV_BASE, canonical, env_diff, parse_lock

LOCK_NAME = "sparkfleet-python-env.lock"
_INSPECT = ("import importlib.metadata as m, json, platform; print(json.dumps({'python': platform.python_version(), "
            "'packages': {d.metadata['Name']: d.version for d in m.distributions()}}))")


def inspect(module, path):
    py = os.path.join(path, "bin", "python")
    if not os.access(py, os.X_OK):
        return None
    rc, out, err = module.run_command([py, "-c", _INSPECT])
    if rc != 0:
        return None  # a broken environment (its base Python removed): rebuilt
    data = json.loads(out)
    data["packages"] = {canonical(k): v for k, v in data["packages"].items() if canonical(k) not in VENV_BASE}
    return data


def build(module, path, lock_text, wheels, python):
    with tempfile.TemporaryDirectory(prefix="sparkfleet-wheels-") as tmp:
        with tarfile.open(wheels) as tf:
            for member in tf.getmembers():
                if not member.isfile() or "/" in member.name or not member.name.endswith(".whl"):
                    module.fail_json(msg="%s: unexpected member %r (only wheels at the top level)" % (wheels, member.name))
            # Members checked above: plain files, no paths (the data filter too, where this Python has it).
            tf.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        lock_file = os.path.join(tmp, LOCK_NAME)
        with open(lock_file, "w") as f:
            f.write(lock_text)
        # In place: a virtual environment's scripts carry its absolute path, so it cannot be built elsewhere and moved.
        if os.path.isdir(path):
            shutil.rmtree(path)
        rc, out, err = module.run_command([python, "-m", "venv", path])
        if rc != 0:
            module.fail_json(msg="python -m venv %s failed (python3-venv installed?): %s" % (path, (err or out).strip()[-500:]))
        rc, out, err = module.run_command([os.path.join(path, "bin", "python"), "-m", "pip", "install", "--no-index",
                                           "--disable-pip-version-check", "--no-cache-dir", "--require-hashes",
                                           "--find-links", tmp, "-r", lock_file])
        if rc != 0:
            module.fail_json(msg="pip install from %s failed: %s" % (wheels, (err or out).strip()[-1500:]))
        shutil.copy(lock_file, os.path.join(path, LOCK_NAME))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            lock=dict(type="str", required=True),
            wheels=dict(type="path", required=True),
            python=dict(type="path", default="/usr/bin/python3"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    locked, errors = parse_lock(p["lock"])
    if errors or not locked:
        module.fail_json(msg="python_env: the lock is not usable: %s" % ("; ".join(errors) or "no requirements"))
    rc, base_version, _ = module.run_command([p["python"], "-c", "import platform; print(platform.python_version())"])
    if rc != 0:
        module.fail_json(msg="python_env: %s does not run" % p["python"])
    base_version = base_version.strip()
    before = inspect(module, p["path"])
    if before is None:
        differences = ["%s: no environment" % p["path"]]
    else:
        differences = env_diff(locked, before["packages"])
        if before["python"] != base_version:
            differences.insert(0, "python: environment on %s, %s is %s" % (before["python"], p["python"], base_version))
    if not differences:
        module.exit_json(changed=False, python_version=before["python"], packages=before["packages"], differences=[])
    diff = {"before": "\n".join(differences) + "\n", "after": "every distribution as %s says\n" % LOCK_NAME,
            "before_header": p["path"], "after_header": p["path"]}
    if module.check_mode:
        module.exit_json(changed=True, diff=diff, differences=differences,
                         python_version=before["python"] if before else None, packages=before["packages"] if before else {})
    if not os.path.isfile(p["wheels"]):
        module.fail_json(msg="python_env: wheels %s not found" % p["wheels"])
    build(module, p["path"], p["lock"], p["wheels"], p["python"])
    after = inspect(module, p["path"])
    left = env_diff(locked, after["packages"]) if after else ["the environment does not run"]
    if left:
        module.fail_json(msg="python_env: after the build the environment still differs: %s" % "; ".join(left))
    module.exit_json(changed=True, diff=diff, differences=differences, python_version=after["python"],
                     packages=after["packages"])


if __name__ == "__main__":
    main()
