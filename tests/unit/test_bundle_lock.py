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


def test_every_module_the_roles_call_is_in_the_bundle():
    """The node-side drift check loads every task file, skipped tasks included: a module from a collection
    the bundle does not vendor fails its whole run ("couldn't resolve module/action")."""
    import yaml

    from sparkfleet_tools.bundle import COLLECTIONS, ROOT

    shipped = {"ansible.builtin", "sparkfleet.cluster"} | {c.replace("/", ".") for c in COLLECTIONS}
    keys = {"name", "when", "loop", "register", "tags", "vars", "block", "rescue", "always", "notify", "listen",
            "become", "delegate_to", "run_once", "changed_when", "failed_when", "check_mode", "no_log", "until",
            "retries", "delay", "environment", "loop_control", "ignore_errors", "args", "diff", "throttle",
            "any_errors_fatal", "delegate_facts", "become_user", "timeout", "ignore_unreachable", "module_defaults"}
    found: dict[str, str] = {}

    def walk(tasks, where):
        for t in tasks or []:
            if not isinstance(t, dict):
                continue
            for part in ("block", "rescue", "always"):
                walk(t.get(part), where)
            for k in set(t) - keys:
                if k.count(".") == 2:
                    found.setdefault(k, where)
    files = [*ROOT.glob("roles/*/tasks/*.yml"), *ROOT.glob("roles/*/handlers/*.yml")]
    for f in files:
        walk(yaml.safe_load(f.read_text()), str(f.relative_to(ROOT)))
    for f in [ROOT / "site.yml", *ROOT.glob("playbooks/*.yml")]:
        for play in yaml.safe_load(f.read_text()) or []:
            for part in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                walk(play.get(part), str(f.relative_to(ROOT)))
    assert len(found) > 20, found
    missing = {m: w for m, w in found.items() if m.rsplit(".", 1)[0] not in shipped}
    assert not missing, f"modules from collections the drift bundle lacks ({sorted(shipped)}): {missing}"
