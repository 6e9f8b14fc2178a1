"""Build a fake /sys/class/infiniband tree from the shared DGX Spark fixtures
(ibdev2netdev and rdma link for state, show_gids for GIDs), as rdma_facts reads it."""
from __future__ import annotations

import re
from pathlib import Path

from conftest import fixture_path, read_fixture

STATE = {"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN", "Up": "4: ACTIVE", "Down": "1: DOWN"}
PHYS = {"LINK_UP": "5: LinkUp", "DISABLED": "3: Disabled"}


def spark_sysfs(tmp: Path, rdma_link="rdma/rdma-link__gb10-blog-2active-2down.txt",
                gids="rdma/show_gids__gb10-blog-rocev2-index3.txt", rate="200 Gb/sec (4X HDR)") -> Path:
    root = tmp / "sys"
    links = read_fixture(fixture_path(rdma_link))
    for m in re.finditer(r"link (\S+)/(\d+) state (\S+) physical_state (\S+) netdev (\S+)", links):
        dev, port, state, phys, netdev = m.groups()
        p = root / "class" / "infiniband" / dev / "ports" / port
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (p / sub).mkdir(parents=True, exist_ok=True)
        (p / "state").write_text(STATE[state] + "\n")
        (p / "phys_state").write_text(PHYS.get(phys, phys) + "\n")
        (p / "rate").write_text(rate + "\n")
        (p / "link_layer").write_text("Ethernet\n")
        (root / "class" / "infiniband" / dev / "device" / "net" / netdev).mkdir(parents=True)
        for i in range(8):  # unused GID slots read as zeros
            (p / "gids" / str(i)).write_text("0000:0000:0000:0000:0000:0000:0000:0000\n")
    for line in read_fixture(fixture_path(gids)).splitlines():
        f = line.split()
        if len(f) < 6 or not f[2].isdigit():
            continue
        dev, port, idx, gid = f[0], f[1], f[2], f[3]
        ver, ndev = f[-2], f[-1]
        p = root / "class" / "infiniband" / dev / "ports" / port
        gid = gid.replace("xxxx", "abcd")
        (p / "gids" / idx).write_text(gid + "\n")
        (p / "gid_attrs" / "types" / idx).write_text(("RoCE v2" if ver == "v2" else "IB/RoCE v1") + "\n")
        (p / "gid_attrs" / "ndevs" / idx).write_text(ndev + "\n")
    return root
