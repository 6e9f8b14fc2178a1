"""lab/lab.py lets labs start together (scripts/molecule_all.py runs two lanes of scenarios): apt, dockerd and each image
build are taken one at a time, through flock on files in .lab/; and what the inventory it writes sets for emulated nodes."""
from __future__ import annotations

import fcntl
import importlib.util
import json

import pytest
from conftest import ROOT


@pytest.fixture
def lab(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("sparkfleet_lab", ROOT / "lab" / "lab.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "STATE", tmp_path)
    return mod


def held(path) -> bool:
    """True when another open file description holds the flock (flock locks belong to one, so this process can test)."""
    with open(path, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def test_locked_holds_its_file_lock_only_inside(lab, tmp_path):
    with lab.locked("engine"):
        assert held(tmp_path / ".engine.lock")
        assert not held(tmp_path / ".apt.lock")
    assert not held(tmp_path / ".engine.lock")


def test_an_image_is_inspected_and_built_under_its_own_lock(lab, tmp_path, monkeypatch):
    seen = []

    def build(suite, arch, tag):
        name = tag.rsplit(":", 1)[1]
        seen.append((tag, held(tmp_path / f".image-{name}.lock")))
        return tag

    monkeypatch.setattr(lab, "build_image", build)
    tag = lab.ensure_image("bookworm", "amd64")
    assert seen == [(tag, True)] and tag == lab.image_tag("bookworm", "amd64")
    assert not held(tmp_path / f".image-{tag.rsplit(':', 1)[1]}.lock")


@pytest.mark.parametrize("arch,wait", [("mixed", 1200), ("amd64", None)])
def test_a_lab_with_an_emulated_node_waits_longer_for_ray(lab, tmp_path, monkeypatch, arch, wait):
    """An emulated raylet exits when its emulated dashboard agent is slow to start on a busy machine, and is started
    again: a lab with one waits 20 min for Ray's join, and its emulated node starts Ray without the log monitor; an
    all-amd64 lab keeps the role's defaults."""
    monkeypatch.setattr(lab, "ROOT", tmp_path)
    p = lab.plan("t", 2, False, arch=arch)
    (tmp_path / "t").mkdir()
    lab.write_inventory(p, tmp_path / "key")
    data = json.loads((tmp_path / "inventory" / "lab-t" / "hosts.yml").read_text().split("\n", 1)[1])
    assert data["all"]["vars"].get("ray_join_timeout_s") == wait
    hosts = {h: v for g in ("control", "compute") for h, v in data["all"]["children"]["cluster"]["children"][g]["hosts"].items()}
    emulated = {h for h, v in hosts.items() if v.get("ray_start_extra_args") == ["--include-log-monitor", "false"]}
    assert emulated == ({h["name"] for h in p["hosts"] if h["arch"] != "amd64"} if wait else set()), hosts
