"""python_env: the venv on the node holds exactly the lock's pinned versions (installed offline from wheels the
controller fetched once), and a changed package is put back."""
from __future__ import annotations

import re

from labtools import CONTROL, PROJECT, playbook, recap, role_run, ssh

VENV = "/opt/sparkfleet/inference"
LOCK = PROJECT / "roles" / "python_env" / "files" / "python-env.lock"


def pins() -> dict:
    return {m.group(1).lower().replace("_", "-"): m.group(2)
            for m in re.finditer(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==(\S+)", LOCK.read_text(), re.M)}


def installed() -> dict:
    out = ssh(CONTROL, f"{VENV}/bin/python -m pip list --format=freeze --disable-pip-version-check").stdout
    return {ln.split("==")[0].lower().replace("_", "-"): ln.split("==")[1] for ln in out.splitlines() if "==" in ln}


def test_venv_matches_the_lock_and_ray_imports():
    want, have = pins(), installed()
    assert {k: have.get(k) for k in want} == want
    assert ssh(CONTROL, f"{VENV}/bin/python -c 'import ray; print(ray.__version__)'").stdout.strip() == want["ray"]


def test_a_package_removed_by_hand_is_reinstalled():
    ssh(CONTROL, f"{VENV}/bin/python -m pip uninstall -y -q --disable-pip-version-check aiosignal")
    res = ssh(CONTROL, f"{VENV}/bin/python -c 'import aiosignal'", check=False)
    assert res.returncode != 0
    fix = playbook("playbooks/roles.yml")
    assert fix.returncode == 0 and recap(fix.stdout)[CONTROL]["changed"] >= 1, fix.stdout[-3000:]
    want, have = pins(), installed()
    assert {k: have.get(k) for k in want} == want
    role_run()
