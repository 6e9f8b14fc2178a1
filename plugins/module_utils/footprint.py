# The role gate's arithmetic (plain Python, unit-tested): what a role manages on a node (its footprint) reduced to
# one digest, and the verdict "run the role or skip it" from the stamp its last converge left.
#
# A footprint is files (content, mode, owner; directories by their whole tree), systemd units (loaded, active,
# enabled), packages (installed version) and read-only probe commands (their exit code and output). The stamp holds
# the digest of the role's inputs (variables, code; computed on the controller) and of its footprint, taken right
# after the role converged. Same inputs and same footprint: nothing the role would change can have changed.
from __future__ import annotations

import hashlib
import json
import os
import stat

MAX_TREE_ENTRIES = 5000  # a footprint directory is a config folder, never a data folder
STAMP_VERSION = 2


class FootprintError(Exception):
    pass


def digest(obj) -> str:
    """sha256 of a canonical JSON form (sorted keys, no whitespace variance)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _entry(path: str, st: os.stat_result) -> dict:
    e = {"mode": oct(stat.S_IMODE(st.st_mode)), "uid": st.st_uid, "gid": st.st_gid}
    if stat.S_ISLNK(st.st_mode):
        e.update(type="link", target=os.readlink(path))
    elif stat.S_ISDIR(st.st_mode):
        e["type"] = "dir"
    elif stat.S_ISREG(st.st_mode):
        # /proc and /sys files report size 0: read them all the same.
        e.update(type="file", sha256=_sha256_file(path))
    else:
        e["type"] = "other"
    return e


def path_state(path: str) -> dict:
    """State of one footprint path: absent, a file, a link, or a directory with every entry below it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"absent": True}
    except PermissionError as e:
        raise FootprintError(f"{path}: {e}") from e
    top = _entry(path, st)
    if top["type"] != "dir":
        return top
    tree = {}
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(root, name)
            tree[os.path.relpath(p, path)] = _entry(p, os.lstat(p))
            if len(tree) > MAX_TREE_ENTRIES:
                raise FootprintError(f"{path}: more than {MAX_TREE_ENTRIES} entries (a footprint names config, not data)")
    top["tree"] = tree
    return top


def parse_systemctl_show(text: str, units: list[str]) -> dict:
    """`systemctl show -p Id,LoadState,ActiveState,UnitFileState U1 U2 ...` -> {unit: {prop: value}}, in the
    order the units were asked for (systemd answers one block per unit, blank-line separated, in that order)."""
    blocks = [b for b in text.strip("\n").split("\n\n")] if text.strip() else []
    if len(blocks) != len(units):
        raise FootprintError(f"systemctl show answered {len(blocks)} blocks for {len(units)} units")
    out = {}
    for unit, block in zip(units, blocks, strict=True):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        out[unit] = {k: props.get(k, "") for k in ("LoadState", "ActiveState", "UnitFileState")}
    return out


def state_digest(paths: dict, services: dict, packages: str, commands: dict) -> str:
    return digest({"paths": paths, "services": services, "packages": packages, "commands": commands})


FORCED = "gate off (sparkfleet_gate false or SPARKFLEET_GATE=off)"


def verdict(stamp: dict | None, inputs_digest: str, footprint_same: bool, force: bool = False) -> tuple[bool, str]:
    """(run, reason). Run unless a stamp of this stamp version says the same inputs, and the footprint read now is
    the one that stamp recorded (footprint_same)."""
    if force:
        return True, FORCED
    if not stamp:
        return True, "no stamp (the role never converged here)"
    if stamp.get("version") != STAMP_VERSION:
        return True, "stamp of another sparkfleet version"
    if stamp.get("inputs") != inputs_digest:
        return True, "inputs changed (variables, inventory or role code)"
    if not footprint_same:
        return True, "footprint changed (a managed file, unit, package or probe differs from the last converge)"
    return False, "unchanged since the last converge"


def scan_entry(stamp: dict, footprint_digest: str | None) -> dict:
    """What the run-wide scan keeps of one stamp: its inputs and whether the footprint still reads the same."""
    return {"version": stamp.get("version"), "inputs": stamp.get("inputs"),
            "same": footprint_digest is not None and footprint_digest == stamp.get("footprint")}


def read_stamp(path: str) -> dict | None:
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (FileNotFoundError, ValueError):
        return None


def write_stamp(path: str, inputs_digest: str, footprint_digest: str, when: str, spec: dict) -> None:
    """Atomic, root-only: a half-written stamp must never read as valid. The spec (what the footprint is made of)
    lets one scan at the start of a run re-read every role's footprint in a single round trip."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"version": STAMP_VERSION, "inputs": inputs_digest, "footprint": footprint_digest, "at": when,
                   "spec": spec}, f)
        f.write("\n")
    os.replace(tmp, path)
