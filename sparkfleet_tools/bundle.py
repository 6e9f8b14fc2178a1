"""Pack what a node needs to run the drift check itself: the project, the inventory (with its
git-ignored .secrets), the collections it uses and pinned wheels for the node's Python.
The tarball is deterministic (sorted, fixed times and owners), so an unchanged project copies as a no-op.

    python3 -m sparkfleet_tools.bundle --inventory DIR --out FILE --python 3.11 --arch x86_64
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ["ansible.cfg", "site.yml", "galaxy.yml", "meta", "playbooks", "roles", "plugins", "sparkfleet_tools",
           "collections", "artifacts/artifacts.json"]
REQUIREMENTS = ["ansible-core==2.19.14", "ansible-runner==2.4.3", "netaddr==1.3.0"]
COLLECTIONS = ["ansible/posix"]


# Every wheel (dependencies included) pinned by sha256; regenerate with scripts/lock_drift.py.
LOCK = ROOT / "sparkfleet_tools" / "drift-requirements.txt"


def pip_platform_args(python: str, arch: str) -> list[str]:
    return ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
            "--platform", f"manylinux_2_28_{arch}", "--platform", f"manylinux_2_17_{arch}",
            "--platform", f"manylinux2014_{arch}", "--platform", "any"]


def wheels(python: str, arch: str) -> Path:
    """The node's wheels, downloaded once per Python/CPU. pip checks each against the lock's hashes
    (--require-hashes), here and again on the node, so a cache or mirror cannot swap one."""
    out = ROOT / ".cache" / "wheels" / f"drift-cp{python.replace('.', '')}-{arch}"
    stamp = out / ".lock-sha256"
    want = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    if not stamp.is_file() or stamp.read_text() != want:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--require-hashes", "--no-deps",
                        *pip_platform_args(python, arch), "-d", str(out), "-r", str(LOCK)],
                       check=True, stderr=subprocess.DEVNULL)
        stamp.write_text(want)
    return out


def add(tar: tarfile.TarFile, path: Path, arcname: str) -> None:
    def norm(ti: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if "__pycache__" in ti.name or ti.name.endswith(".pyc"):
            return None
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "root", "root"
        # The inventory (its secrets folder included) is root's alone on the node, whatever its modes here: the drift
        # home beside it is open to other users (python_env's venv there runs Ray as its own user).
        if ti.name == "inventory" or ti.name.startswith("inventory/"):
            ti.mode = 0o700 if ti.isdir() else 0o600
        return ti
    if path.is_dir() and not path.is_symlink():
        ti = norm(tar.gettarinfo(str(path), arcname))
        if ti is None:
            return
        tar.addfile(ti)
        for child in sorted(path.iterdir()):
            add(tar, child, f"{arcname}/{child.name}")
    else:
        ti = norm(tar.gettarinfo(str(path), arcname))
        if ti is None:
            return
        if ti.isfile():
            with open(path, "rb") as f:
                tar.addfile(ti, f)
        else:
            tar.addfile(ti)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inventory", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default="3.11")
    ap.add_argument("--arch", default="x86_64")
    a = ap.parse_args(argv)
    site = next(Path(p) for p in sys.path if (Path(p) / "ansible_collections").is_dir())
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for rel in PROJECT:
            add(tar, ROOT / rel, f"project/{rel}")
        for c in COLLECTIONS:
            add(tar, site / "ansible_collections" / c, f"vendor_collections/ansible_collections/{c}")
        add(tar, Path(a.inventory).resolve(), "inventory")
        add(tar, wheels(a.python, a.arch), "wheels")
        add(tar, LOCK, "requirements.txt")
    data = buf.getvalue()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # It holds the inventory's secrets: owner-only from the first byte.
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.chmod(out, 0o600)
    with os.fdopen(fd, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
