"""Ray: the head on the control node and a worker on the other join over the fabric; a task placed on each node
runs there; the units are systemd's."""
from __future__ import annotations

import json

from labtools import CONTROL, INV, NODES, ssh

VENV = "/opt/sparkfleet/inference"


def test_every_node_joins_over_the_fabric():
    expect = " ".join(f"{n}={INV['hosts'][n]['sparkfleet_fabric_ips'][0]}" for n in NODES)
    res = ssh(CONTROL, f"{VENV}/bin/python /usr/local/lib/sparkfleet/ray_check.py --wait 90 {expect}", check=False,
              timeout=240)
    data = json.loads(res.stdout.strip().splitlines()[-1])
    assert res.returncode == 0, data
    for n in NODES:
        assert ssh(n, "systemctl is-active sparkfleet-ray").stdout.strip() == "active"
    assert "--head" in ssh(CONTROL, "systemctl cat sparkfleet-ray").stdout
    assert all("--head" not in ssh(n, "systemctl cat sparkfleet-ray").stdout for n in NODES[1:])
