"""Files the lab cannot install for real (NVIDIA repository and pins) are rendered by Ansible for
each supported OS/architecture and checked."""
from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  vars:
    ansible_facts: {distribution: Ubuntu, distribution_version: "%(ver)s", architecture: "%(arch)s"}
  tasks:
    - ansible.builtin.include_vars: {file: "%(role)s/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(role)s/vars/main.yml"}
    - ansible.builtin.template: {src: "%(role)s/templates/cuda.sources.j2", dest: "%(out)s/cuda.sources", mode: "0644"}
    - ansible.builtin.template: {src: "%(role)s/templates/preferences.j2", dest: "%(out)s/preferences", mode: "0644"}
    - ansible.builtin.copy:
        dest: "%(out)s/vars.json"
        content: "{{ {'packages': _nvidia_driver_all_packages, 'keyring': nvidia_driver_keyring_url, 'supported': _nvidia_driver_supported} | to_json }}"
        mode: "0644"
"""


@pytest.mark.parametrize("ver,arch,folder", [("22.04", "x86_64", "ubuntu2204/x86_64"), ("24.04", "x86_64", "ubuntu2404/x86_64"),
                                             ("22.04", "aarch64", "ubuntu2204/sbsa"), ("24.04", "aarch64", "ubuntu2404/sbsa")])
def test_cuda_repository_and_pin(tmp_path, ver, arch, folder):
    pb = tmp_path / "render.yml"
    pb.write_text(PLAYBOOK % {"ver": ver, "arch": arch, "role": ROOT / "roles" / "nvidia_driver", "out": tmp_path})
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", str(pb), "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}",
                          "-e", json.dumps({"nvidia_driver_cuda_toolkit_version": "13-0"})],
                         cwd=ROOT, env=env, text=True, capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    src = (tmp_path / "cuda.sources").read_text()
    assert f"URIs: https://developer.download.nvidia.com/compute/cuda/repos/{folder}/\n" in src
    assert "Signed-By: /usr/share/keyrings/cuda-archive-keyring.gpg" in src and "Suites: /" in src
    pref = (tmp_path / "preferences").read_text()
    # The branch first at 1001, then every other version of the same packages at -1; globs, never a regex (apt
    # silently ignored the earlier look-ahead form, and a regex pin cost every apt call 10 s of CPU on the lab's
    # lists); the container toolkit is not among the pinned packages.
    assert "Pin: version 580.*\nPin-Priority: 1001" in pref and "Pin: version *\nPin-Priority: -1" in pref
    assert pref.index("Pin-Priority: 1001") < pref.index("Pin-Priority: -1") and "/" not in pref.split("Package:", 1)[1]
    globs = re.search(r"^Package: (.*)$", pref, re.M).group(1).split()
    def pinned(name):
        return any(fnmatch.fnmatchcase(name, g) for g in globs)
    assert pinned("nvidia-driver-580-open") and pinned("cuda-drivers") and pinned("libnvidia-compute-580")
    assert pinned("nvidia-open") and pinned("cuda-drivers-580")
    assert not pinned("nvidia-container-toolkit") and not pinned("libnvidia-container1") and not pinned("cuda-toolkit-13-0")
    v = json.loads((tmp_path / "vars.json").read_text())
    assert v["packages"] == ["nvidia-open", "cuda-toolkit-13-0"] and v["supported"] is True
    assert v["keyring"].endswith(f"{folder}/cuda-keyring_1.1-1_all.deb")


SLURM_PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_vars: {file: "%(role)s/defaults/main.yml"}
    - ansible.builtin.template: {src: "%(role)s/templates/gres.conf.j2", dest: "%(out)s/gres.conf", mode: "0644"}
    - ansible.builtin.template: {src: "%(role)s/templates/nodes.conf.j2", dest: "%(out)s/nodes.conf", mode: "0644"}
"""

GB10_SLURMD_C = "NodeName=spark-7a1f CPUs=20 Boards=1 SocketsPerBoard=1 CoresPerSocket=20 ThreadsPerCore=1 RealMemory=122505"
HGX_SLURMD_C = "NodeName=hgx01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063000"


@pytest.mark.parametrize("name,slurmd_c,gpus,nvml,gres", [
    # DGX Spark: one GB10; Debian/Ubuntu Slurm has no NVML plugin, so the device file is listed.
    ("localhost", GB10_SLURMD_C, 1, False, "Name=gpu File=/dev/nvidia0"),
    # HGX with 8 GPUs and a Slurm built with NVML.
    ("localhost", HGX_SLURMD_C, 8, True, "AutoDetect=nvml"),
])
def test_slurm_gpu_node_files(tmp_path, name, slurmd_c, gpus, nvml, gres):
    from ansible_collections.sparkfleet.cluster.plugins.module_utils import slurm
    probe = slurm.parse_probe(f"hostname={slurmd_c.split()[0][9:]}\ngpus={gpus}\nnvml={'x.so' if nvml else ''}\n{slurmd_c}\n")
    pb = tmp_path / "render.yml"
    pb.write_text(SLURM_PLAYBOOK % {"role": ROOT / "roles" / "slurm", "out": tmp_path})
    extra = {"_slurm_probes": {name: probe}, "_slurm_slurmd_hosts": [name],
             "_slurm_nodes": [{"name": name, "mgmt_ip": "10.0.0.12"}], "sparkfleet_slurm_partitions": []}
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", str(pb), "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}", "-e", json.dumps(extra)],
                         cwd=ROOT, env=env, text=True, capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert gres in (tmp_path / "gres.conf").read_text()
    nodes = (tmp_path / "nodes.conf").read_text()
    mem = int(slurmd_c.rsplit("=", 1)[1]) * 95 // 100
    line = next(ln for ln in nodes.splitlines() if ln.startswith("NodeName="))
    assert f"NodeHostname={probe['hostname']}" in line and f"RealMemory={mem}" in line and f"Gres=gpu:{gpus}" in line, line
    assert f"CPUs={probe['hw']['CPUs']}" in line
    assert f"PartitionName=batch Nodes={name} Default=YES State=UP" in nodes, nodes


PREFLIGHT_PLAYBOOK = """
- hosts: spark-01
  gather_facts: false
  vars:
    role_path: "%(role)s"
    ansible_facts: {architecture: "%(arch)s", distribution: Ubuntu, distribution_version: "24.04", distribution_major_version: "24",
                    memtotal_mb: 131072, mounts: [], interfaces: [], python: {version: {major: 3, minor: 12}}, user_uid: 0}
  tasks:
    - ansible.builtin.include_vars: {file: "%(role)s/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(role)s/vars/main.yml"}
    - ansible.builtin.copy:
        dest: "%(out)s/errors.json"
        mode: "0644"
        content: >-
          {{ ansible_facts | sparkfleet.cluster.host_errors(inventory_hostname, hostvars[inventory_hostname],
             {'supported_os': preflight_supported_os, 'architectures': preflight_architectures,
              'arch_artifacts': preflight_arch_artifacts | selectattr('hosts', 'contains', inventory_hostname) | list}) | to_json }}
"""


@pytest.mark.parametrize("arch,extra,expected", [
    ("x86_64", {}, []),
    ("aarch64", {}, []),  # linux-arm64 is pinned (DGX Spark)
    ("aarch64", {"object_store_binary_sha256": {"seaweedfs-x86_64": "a" * 64}},
                    ["spark-01: the object store's server binary (seaweedfs) has no pinned build for aarch64 "
                     "(pinned: x86_64): set object_store_binary_url (a linux-arm64 build or a mirror of it) and "
                     "object_store_binary_sha256: {seaweedfs-aarch64: <its sha256>}"]),
    ("aarch64", {"object_store_binary_sha256": {"seaweedfs-aarch64": "a" * 64}}, []),
])
def test_preflight_names_the_pin_an_architecture_lacks(tmp_path, arch, extra, expected):
    """DGX Spark is aarch64: an architecture without a pinned object store build stops in preflight, before any change."""
    pb = tmp_path / "preflight.yml"
    pb.write_text(PREFLIGHT_PLAYBOOK % {"role": ROOT / "roles" / "preflight", "out": tmp_path, "arch": arch})
    inv = tmp_path / "hosts.yml"
    inv.write_text(json.dumps({"all": {"children": {"control": {"hosts": {"spark-01": extra}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inv), str(pb), "-c", "local",
                          "-e", f"ansible_python_interpreter={sys.executable}"],
                         cwd=ROOT, env=env, text=True, capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert json.loads((tmp_path / "errors.json").read_text()) == expected
