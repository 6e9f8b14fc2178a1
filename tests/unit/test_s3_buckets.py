"""roles/object_store/files/sparkfleet-s3-buckets against a stand-in `weed` on PATH: it keeps asking a store that has
just started (its master refuses commands for a while) until --wait runs out, and names the master when it gives up."""
from __future__ import annotations

import os
import subprocess

from conftest import ROOT

TOOL = ROOT / "roles" / "object_store" / "files" / "sparkfleet-s3-buckets"


def run(tmp_path, fail_first: int, *args):
    """The tool with a `weed` that fails its first FAIL_FIRST calls, then lists bucket 'models'; the calls it got."""
    log = tmp_path / "calls"
    weed = tmp_path / "weed"
    weed.write_text(f"""#!/bin/sh
cmd=$(cat); echo "$cmd" >> {log}
n=$(wc -l < {log})
[ "$n" -le {fail_first} ] && exit 1
case "$cmd" in s3.bucket.list) echo "  models	size:0";; esac
""")
    weed.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    res = subprocess.run(["sh", str(TOOL), *args], capture_output=True, text=True, env=env, timeout=60, check=False)
    return res, log.read_text().splitlines() if log.exists() else []


def test_waits_for_a_master_that_is_starting_then_creates_only_the_missing(tmp_path):
    res, calls = run(tmp_path, 2, "--wait", "30", "models", "extra")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[0] == "created extra"
    assert calls == ["s3.bucket.list"] * 3 + ["s3.bucket.create -name extra"]


def test_check_mode_says_what_it_would_create(tmp_path):
    res, calls = run(tmp_path, 0, "--wait", "5", "--check", "models", "extra")
    assert (res.returncode, res.stdout) == (0, "would create extra\n")
    assert calls == ["s3.bucket.list"]


def test_gives_up_after_the_wait_naming_the_master(tmp_path):
    res, calls = run(tmp_path, 100, "--wait", "3", "models")
    assert res.returncode == 3
    assert "127.0.0.1:9333" in res.stderr and "within 3 s" in res.stderr
    assert 1 <= len(calls) <= 3
