"""A mixed cluster after site.yml: the arm64 node runs the arm64 builds, joins Ray over the fabric with the aarch64
wheels of the lock, runs Slurm jobs, and the validation report passes with it."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from labtools import CONTROL, INV, NODES, PROJECT, ssh

ARM = [n for n in NODES if ssh(n, "uname -m").stdout.strip() == "aarch64"]
VENV = "/opt/sparkfleet/inference"


def test_lab_is_mixed_and_the_arm64_node_runs_arm64_packages():
    assert ARM and CONTROL not in ARM, ARM
    for n in ARM:
        arches = ssh(n, "dpkg-query -W -f='${Architecture}\\n' slurmd munge prometheus-node-exporter docker.io python3"
                     ).stdout.split()
        assert set(arches) == {"arm64"}, arches


def test_python_environment_on_arm64_holds_the_lock_with_aarch64_wheels():
    lock = (PROJECT / "roles" / "python_env" / "files" / "python-env.lock").read_text()
    want_ray = re.search(r"^ray(?:\[[^\]]*\])?==(\S+)", lock, re.M).group(1)
    for n in ARM:
        out = ssh(n, f"{VENV}/bin/python -c 'import platform, ray; print(platform.machine(), ray.__version__)'",
                  timeout=300).stdout.split()
        assert out == ["aarch64", want_ray], out
        tags = ssh(n, f"cat {VENV}/lib/python3*/site-packages/ray-*.dist-info/WHEEL").stdout
        assert "aarch64" in tags, tags


def test_ray_cluster_includes_the_arm64_node_over_the_fabric():
    expect = " ".join(f"{n}={INV['hosts'][n]['sparkfleet_fabric_ips'][0]}" for n in NODES)
    res = ssh(CONTROL, f"{VENV}/bin/python /usr/local/lib/sparkfleet/ray_check.py --wait 180 {expect}", check=False,
              timeout=400)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]


def test_slurm_job_runs_on_the_arm64_node():
    out = ssh(CONTROL, f"runuser -u spark -- srun -w {','.join(ARM)} --time=2 uname -m", timeout=180).stdout.split()
    assert out == ["aarch64"] * len(ARM), out


def test_validation_passes_with_the_arm64_node():
    # site.yml's last play wrote this report during the converge (and fails the converge when a check fails): read it
    # rather than run the validation a second time on the emulated node (minutes under CI's load).
    reports = os.environ.get("MOLECULE_VALIDATE_REPORT_DIR", str(PROJECT / "reports" / "validate"))
    data = json.loads((Path(reports) / "latest.json").read_text())
    assert data["failed"] == 0 and set(data["hosts"]) == set(NODES), data["failed"]
    for n in ARM:
        status = {(c["check"], c["target"]): c["status"] for c in data["hosts"][n]}
        assert status[("fleet_version", "python")] == "pass" and status[("fleet_version", "ray")] == "pass", status
        assert status[("slurm_node", n)] == "pass" and status[("service", "sparkfleet-ray")] == "pass", status
        ray = {c["target"]: c["status"] for c in data["hosts"][CONTROL] if c["check"] == "ray_cluster"}
        assert [s for t, s in ray.items() if t.startswith(n + " ")] == ["pass"], ray
