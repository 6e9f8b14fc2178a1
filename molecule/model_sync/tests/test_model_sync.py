"""model_sync: the compute node holds the published version, checksummed, with `current` pointing at it."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from labtools import COMPUTE, ssh

SRC = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "tiny-v1"


def test_compute_node_holds_the_published_version_byte_for_byte():
    want = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in SRC.iterdir()}
    for n in COMPUTE:
        out = ssh(n, "cd /models/tiny/current && sha256sum *").stdout
        assert {ln.split()[1]: ln.split()[0] for ln in out.splitlines()} == want
        assert ssh(n, "readlink /models/tiny/current").stdout.strip().endswith("v1")
