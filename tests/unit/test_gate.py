"""The role gate: footprint arithmetic (module_utils/footprint.py), the module and action plugin run through Ansible
on this machine, and static checks of how the roles use it (disjoint footprints, the stamp last, other roles'
variables declared as inputs)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from ansible_collections.sparkfleet.cluster.plugins.module_utils import footprint as fp

ANSIBLE = Path(sys.executable).parent / "ansible"
ROLES = ROOT / "roles"


def gated_roles() -> dict[str, dict]:
    """{role: the gate task's args} for every role whose main.yml starts with a role_gate task."""
    out = {}
    for main in sorted(ROLES.glob("*/tasks/main.yml")):
        tasks = yaml.safe_load(main.read_text()) or []
        if tasks and "sparkfleet.cluster.role_gate" in tasks[0]:
            out[main.parent.parent.name] = tasks[0]["sparkfleet.cluster.role_gate"] or {}
    return out


# -- footprint arithmetic -------------------------------------------------------------------------------------------

def test_path_state_sees_content_mode_and_tree(tmp_path):
    f = tmp_path / "a.conf"
    f.write_text("x=1\n")
    first = fp.path_state(str(f))
    assert first["type"] == "file" and first["sha256"]
    f.chmod(0o600)
    assert fp.path_state(str(f)) != first, "a mode change is a footprint change"
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "b").write_text("b")
    tree = fp.path_state(str(d))
    (d / "sub" / "b").write_text("c")
    assert fp.path_state(str(d)) != tree, "a file deep in a footprint folder counts"
    (d / "l").symlink_to("sub/b")
    assert fp.path_state(str(d))["tree"]["l"] == {"mode": oct(os.lstat(d / "l").st_mode & 0o7777), "uid": os.getuid(),
                                                   "gid": os.getgid(), "type": "link", "target": "sub/b"}
    assert fp.path_state(str(tmp_path / "none")) == {"absent": True}


def test_path_state_refuses_a_data_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(fp, "MAX_TREE_ENTRIES", 3)
    for i in range(5):
        (tmp_path / str(i)).write_text("")
    with pytest.raises(fp.FootprintError, match="more than 3 entries"):
        fp.path_state(str(tmp_path))


def test_systemctl_show_blocks_map_to_units_in_order():
    text = ("Id=chrony.service\nLoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\n"
            "Id=nope.service\nLoadState=not-found\nActiveState=inactive\nUnitFileState=\n")
    got = fp.parse_systemctl_show(text, ["chrony", "nope"])
    assert got == {"chrony": {"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled"},
                   "nope": {"LoadState": "not-found", "ActiveState": "inactive", "UnitFileState": ""}}
    with pytest.raises(fp.FootprintError, match="1 blocks for 2 units"):
        fp.parse_systemctl_show(text.split("\n\n")[0], ["chrony", "nope"])


def test_verdict_runs_unless_inputs_and_footprint_are_as_stamped():
    stamp = {"version": fp.STAMP_VERSION, "inputs": "i1", "footprint": "f1"}
    assert fp.verdict(stamp, "i1", True) == (False, "unchanged since the last converge")
    assert fp.verdict(stamp, "i2", True)[1].startswith("inputs changed")
    assert fp.verdict(stamp, "i1", False)[1].startswith("footprint changed")
    assert fp.verdict(None, "i1", True)[1].startswith("no stamp")
    assert fp.verdict(dict(stamp, version=0), "i1", True)[1].startswith("stamp of another")
    assert fp.verdict(stamp, "i1", True, force=True) == (True, fp.FORCED)


def test_stamp_is_root_only_and_round_trips(tmp_path):
    p = tmp_path / "gate" / "chrony.json"
    fp.write_stamp(str(p), "i", "f", "now", {"paths": ["/etc/x"]})
    assert oct(p.stat().st_mode & 0o777) == "0o600" and oct(p.parent.stat().st_mode & 0o777) == "0o700"
    stamp = fp.read_stamp(str(p))
    assert stamp["spec"] == {"paths": ["/etc/x"]} and fp.scan_entry(stamp, "f")["same"]
    assert not fp.scan_entry(stamp, "g")["same"] and not fp.scan_entry(stamp, None)["same"]
    p.write_text("{half")
    assert fp.read_stamp(str(p)) is None


# -- the module and action plugin, through Ansible --------------------------------------------------------------------

def gate(args: dict, **env) -> dict:
    e = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
             ANSIBLE_DEPRECATION_WARNINGS="0", **env)
    res = subprocess.run([str(ANSIBLE), "localhost", "-c", "local", "-i", "localhost,", "-o",
                          "-e", f"ansible_python_interpreter={sys.executable}", "-e", "sparkfleet_x=1",
                          "-m", "sparkfleet.cluster.role_gate", "-a", json.dumps(args)],
                         cwd=ROOT, env=e, text=True, capture_output=True, timeout=120)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("localhost |")), "")
    assert "=>" in line and "SUCCESS" in line, res.stdout + res.stderr
    return json.loads(line.partition(" => ")[2])


def test_gate_stamp_and_scan_on_this_machine(tmp_path):
    conf = tmp_path / "etc" / "x.conf"
    conf.parent.mkdir()
    conf.write_text("a\n")
    args = {"role": "demo", "paths": [str(conf.parent)], "commands": [f"cat {conf}"], "stamp_dir": str(tmp_path / "gate")}
    first = gate(args)
    assert first["run"] and first["reason"].startswith("no stamp") and first["changed"] is False
    assert gate({"stamp_from": first})["reason"] == "stamp written"
    again = gate(args)
    assert not again["run"] and again["reason"] == "unchanged since the last converge"
    assert again["inputs_digest"] == first["inputs_digest"], "same variables, same code: same inputs"
    assert gate(args, SPARKFLEET_GATE="off")["reason"] == fp.FORCED
    scan = gate({"scan": True, "stamp_dir": str(tmp_path / "gate")})
    assert scan["roles"]["demo"]["same"] and scan["roles"]["demo"]["inputs"] == first["inputs_digest"]
    conf.write_text("b\n")  # a planted change
    assert gate(args)["reason"].startswith("footprint changed")
    assert not gate({"scan": True, "stamp_dir": str(tmp_path / "gate")})["roles"]["demo"]["same"]
    # A different variable of the cluster is a different input.
    changed = subprocess.run([str(ANSIBLE), "localhost", "-c", "local", "-i", "localhost,", "-o", "-e",
                              f"ansible_python_interpreter={sys.executable}", "-e", "sparkfleet_x=2", "-m",
                              "sparkfleet.cluster.role_gate", "-a", json.dumps(args)], cwd=ROOT, text=True,
                             capture_output=True, env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
    assert json.loads(changed.stdout.partition(" => ")[2])["inputs_digest"] != first["inputs_digest"]


# -- how the roles use it ------------------------------------------------------------------------------------------

def test_every_gated_role_stamps_last_and_includes_its_tasks():
    roles = gated_roles()
    assert len(roles) >= 15, sorted(roles)
    for role in roles:
        main = yaml.safe_load((ROLES / role / "tasks" / "main.yml").read_text())
        assert main[0]["register"] == f"_{role}_gate", role
        assert main[1]["ansible.builtin.include_tasks"] == "converge.yml", role
        assert f"gate_open(hostvars, '_{role}_gate')" in main[1]["when"], role
        last = yaml.safe_load((ROLES / role / "tasks" / "converge.yml").read_text())[-1]
        assert last["sparkfleet.cluster.role_gate"] == {"stamp_from": "{{ _%s_gate }}" % role}, role
        # Never in check mode; slurm also waits while a node of its shared configuration dropped out of the run.
        assert last["when"] in ("not ansible_check_mode", "not ansible_check_mode and _slurm_dropped | length == 0"), role


def test_footprints_are_disjoint():
    """A path, unit or package belongs to one role: another role changing it would go unseen by its owner's gate."""
    owner: dict[str, str] = {}
    for role, args in gated_roles().items():
        items = [("path", p) for p in args.get("paths", [])] + [("unit", u) for u in args.get("services", [])
                                                                 if isinstance(args.get("services"), list)]
        for kind, item in items:
            key = f"{kind}:{item}"
            assert key not in owner, f"{key} is in the footprints of {owner.get(key)} and {role}"
            owner[key] = role


def test_other_roles_variables_a_gated_role_reads_are_inputs():
    """The gate digests the role's own (role_*) and the cluster's (sparkfleet_*) variables; any other role's variable
    the role reads must be listed in input_vars, or changing it would not rerun the role."""
    defined: dict[str, str] = {}
    for d in ROLES.iterdir():
        for f in ("defaults/main.yml", "vars/main.yml"):
            p = d / f
            if p.is_file():
                for k in yaml.safe_load(p.read_text()) or {}:
                    defined[k] = d.name
    for role, args in gated_roles().items():
        text = "".join(p.read_text(errors="ignore") for p in (ROLES / role).rglob("*")
                       if p.is_file() and "meta" not in p.parts and p.suffix in (".yml", ".j2", ""))
        text = re.sub(r"(?m)^\s*#.*$", "", text)  # comments read no variable
        used = {n for n in re.findall(r"\b([a-z][a-z0-9_]+)\b", text) if defined.get(n) not in (None, role)}
        missing = sorted(n for n in used if not n.startswith(role + "_") and n not in (args.get("input_vars") or []))
        assert not missing, f"{role} reads {missing}: add them to its gate's input_vars"
