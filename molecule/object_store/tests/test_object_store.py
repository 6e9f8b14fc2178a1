"""Object store on the control node: the pinned S3 server runs hardened, refuses anonymous requests and holds the
models bucket."""
from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from labtools import CONTROL, addr, ssh


def test_s3_server_runs_hardened_and_refuses_anonymous_requests():
    assert ssh(CONTROL, "systemctl is-active sparkfleet-s3").stdout.strip() == "active"
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://{addr(CONTROL)}:9000/models/", timeout=5)  # noqa: S310 (lab node)
    assert e.value.code == 403
    assert "models" in ssh(CONTROL, "echo s3.bucket.list | weed shell -master=127.0.0.1:9333 2>/dev/null").stdout
    unit = ssh(CONTROL, "systemctl show sparkfleet-s3 -p User -p ProtectSystem -p NoNewPrivileges").stdout
    assert "User=sparkfleet-s3" in unit and "ProtectSystem=strict" in unit and "NoNewPrivileges=yes" in unit
