"""Helpers for scenario verify tests: the lab's inventory, SSH to nodes, ansible-playbook runs.

Tests talk only to this scenario's lab nodes (addresses from its generated inventory)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import testinfra

PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
INVENTORY = Path(os.environ.get("MOLECULE_LAB_INVENTORY", PROJECT / "inventory" / "lab"))


def load_inventory(path: Path = INVENTORY) -> dict:
    data = json.loads((path / "hosts.yml").read_text().split("\n", 1)[1])["all"]
    hosts = {}
    for grp, body in data["children"]["cluster"]["children"].items():
        for name, hv in body["hosts"].items():
            hosts[name] = dict(hv, group=grp)
    for grp in ("outside", "spare"):
        for name, hv in data["children"].get(grp, {}).get("hosts", {}).items():
            hosts[name] = dict(hv, group=grp)
    return {"vars": data["vars"], "hosts": hosts}


INV = load_inventory()
KEY = INV["vars"]["ansible_ssh_private_key_file"]
NODES = sorted(h for h, v in INV["hosts"].items() if v["group"] not in ("outside", "spare"))
# Spare nodes (lab --spare N): set up like cluster nodes, outside the cluster until a day-2 test adds them.
SPARES = sorted(h for h, v in INV["hosts"].items() if v["group"] == "spare")
OUTSIDERS = sorted(h for h, v in INV["hosts"].items() if v["group"] == "outside")
SSH_OPTS = ["-i", KEY, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", "-o", "ControlMaster=auto",
            "-o", "ControlPath=/tmp/sparkfleet-test-%C", "-o", "ControlPersist=60"]


def addr(host: str) -> str:
    return INV["hosts"][host]["ansible_host"]


def ssh(host: str, cmd: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run cmd as root on a lab node (through sudo)."""
    res = subprocess.run(["ssh", *SSH_OPTS, f"sparkadmin@{addr(host)}", "sudo -n sh -c " + shlex.quote(cmd)],
                         text=True, capture_output=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{host}: {cmd!r} exited {res.returncode}: {res.stderr.strip() or res.stdout.strip()}")
    return res


def host(name: str):
    """A testinfra host for a lab node (SSH backend, sudo)."""
    return testinfra.get_host(
        f"ssh://sparkadmin@{addr(name)}?ssh_identity_file={KEY}&controlpersist=60&timeout=10", sudo=True,
        ssh_extra_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR")


def _ansible(tool: str, args: list[str], inventory: Path | str, env: dict | None, timeout: float) -> subprocess.CompletedProcess:
    venv_bin = PROJECT / ".venv" / "bin"
    # Role gates off unless a test asks (env={"SPARKFLEET_GATE": "on"}): a test that plants a change and converges
    # again checks the role's own tasks, whatever its footprint covers. test_gate and the drift tests run them on.
    e = dict(os.environ, ANSIBLE_CONFIG=str(PROJECT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
             PATH=f"{venv_bin}:{os.environ.get('PATH', '')}", **dict({"SPARKFLEET_GATE": "off"}, **(env or {})))
    return subprocess.run([str(venv_bin / tool), "-i", str(inventory), *args], cwd=PROJECT,
                          text=True, capture_output=True, timeout=timeout, env=e)


def playbook(*args: str, inventory: Path | str = INVENTORY, env: dict | None = None,
             timeout: float = 600) -> subprocess.CompletedProcess:
    return _ansible("ansible-playbook", list(args), inventory, env, timeout)


def module_call(node: str, module: str, args: dict, timeout: float = 120) -> dict:
    """One module on one lab node (ansible ad hoc, become), as a role would run it: its result, or an AssertionError."""
    res = _ansible("ansible", [node, "-b", "-o", "-m", module, "-a", json.dumps(args)], INVENTORY, None, timeout)
    assert "SUCCESS" in res.stdout, res.stdout + res.stderr
    return json.loads(res.stdout.split("=>", 1)[1])


def recap(output: str) -> dict:
    """PLAY RECAP -> {host: {ok, changed, unreachable, failed, ...}}."""
    out, on = {}, False
    for line in output.splitlines():
        if line.startswith("PLAY RECAP"):
            on = True
            continue
        if on and ":" in line:
            name, _, rest = line.partition(":")
            out[name.strip()] = {k: int(v) for k, v in (p.split("=") for p in rest.split())}
    return out


# A one-file image made on the node itself (no registry is reachable): busybox as sh and echo.
SMOKE_IMAGE = ("test -n \"$(docker images -q sparkfleet/smoke:1)\" || { d=$(mktemp -d); mkdir -p $d/bin; "
               "cp /bin/busybox $d/bin/; ln -s busybox $d/bin/sh; ln -s busybox $d/bin/echo; "
               "tar -C $d -c . | docker import - sparkfleet/smoke:1 >/dev/null; rm -rf $d; }")


def role_run(*args: str, timeout: float = 600) -> str:
    """Run this role scenario's roles again (playbooks/roles.yml, MOLECULE_ROLES/MOLECULE_ROLE_HOSTS of its
    molecule.yml) and return the output: it must pass and change nothing (the scenario converged already)."""
    res = playbook("playbooks/roles.yml", *args, timeout=timeout)
    assert res.returncode == 0, res.stdout[-3000:]
    assert all(v.get("changed", 0) == 0 for v in recap(res.stdout).values()), res.stdout[-3000:]
    return res.stdout


CONTROL = next((h for h in NODES if INV["hosts"][h]["group"] == "control"), None)
COMPUTE = [h for h in NODES if INV["hosts"][h]["group"] == "compute"]
