"""The drift bundle's wheels are pinned by hash: the lock covers every package and a swapped wheel fails pip."""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile

from sparkfleet_tools.bundle import LOCK, REQUIREMENTS


def entries() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=\S)", LOCK.read_text().strip()):
        if block.startswith("#"):
            continue
        head, *rest = block.split("\\\n")
        out[head.strip()] = [h.strip() for h in rest]
    return out


def test_lock_pins_every_requirement_and_each_entry_has_hashes():
    lock = entries()
    assert lock, LOCK
    for req in REQUIREMENTS:
        assert req in lock, f"{req} is not in {LOCK.name}: run scripts/lock_drift.py"
    for pin, hashes in lock.items():
        assert re.fullmatch(r"[a-z0-9.-]+==[\w.]+", pin), pin
        assert hashes and all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes), pin


def test_a_wheel_that_is_not_the_pinned_one_is_refused(tmp_path):
    pin = "netaddr==1.3.0"
    (tmp_path / "req.txt").write_text(pin + " \\\n    " + " \\\n    ".join(entries()[pin]) + "\n")
    links = tmp_path / "wheels"
    links.mkdir()
    # Same name and version, other bytes: what a tampered cache or mirror would hand out.
    with zipfile.ZipFile(links / "netaddr-1.3.0-py3-none-any.whl", "w") as z:
        z.writestr("netaddr/__init__.py", "raise SystemExit('not the real netaddr')\n")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-index", "--find-links", str(links),
                        "--require-hashes", "--no-deps", "-d", str(tmp_path / "out"), "-r", str(tmp_path / "req.txt")],
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null"})
    assert r.returncode != 0
    assert "DO NOT MATCH THE HASHES" in r.stdout + r.stderr
    assert not (tmp_path / "out" / "netaddr-1.3.0-py3-none-any.whl").exists()
