"""Files the lab cannot install for real (NVIDIA repository and pins) are rendered by Ansible for
each supported OS/architecture and checked."""
from __future__ import annotations

import json
import os
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
    assert "Pin: version 580.*\nPin-Priority: 1001" in pref and "Pin: version /^(?!580\\.)/\nPin-Priority: -1" in pref
    v = json.loads((tmp_path / "vars.json").read_text())
    assert v["packages"] == ["nvidia-open", "cuda-toolkit-13-0"] and v["supported"] is True
    assert v["keyring"].endswith(f"{folder}/cuda-keyring_1.1-1_all.deb")
