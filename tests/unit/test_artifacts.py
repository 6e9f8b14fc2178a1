"""The pinned binaries (artifacts/artifacts.json) are what they claim: checksummed, of the architecture in their name,
and they run there. DGX Spark is aarch64: its build runs here through qemu-user (scripts/bootstrap.sh installs it)."""
from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINS = {k: v for k, v in json.loads((ROOT / "artifacts" / "artifacts.json").read_text()).items() if not k.startswith("_")}
# ELF e_machine of each architecture name used in the pins.
ELF_MACHINE = {"amd64": 0x3E, "arm64": 0xB7}
QEMU = {"arm64": "qemu-aarch64-static", "amd64": "qemu-x86_64-static"}


@pytest.mark.parametrize("name", sorted(PINS))
def test_pinned_binary_matches_its_checksum_architecture_and_version(name):
    spec = PINS[name]
    path = ROOT / ".cache" / "artifacts" / spec["file"]
    assert path.exists(), f"{path} missing: run `make deps` (scripts/artifacts.py fetch {name})"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == spec["sha256"], name
    arch = name.rsplit("-", 1)[1]
    head = path.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == ELF_MACHINE[arch], f"{name}: not {arch}"
    native = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine())
    cmd = [str(path), "version"]
    if arch != native:
        assert shutil.which(QEMU[arch]), f"{QEMU[arch]} missing: run `make deps` (installs qemu-user-static)"
        cmd.insert(0, QEMU[arch])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and f" {spec['version']} " in out.stdout and f"linux {arch}" in out.stdout, out.stdout
