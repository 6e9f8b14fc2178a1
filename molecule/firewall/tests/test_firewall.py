"""firewall on two nodes: NCCL's narrowed port range open from the other node on the management address and both
fabric halves, an undeclared port closed, RoCEv2 allowed; the ruleset is ours alone and survives a reload."""
from __future__ import annotations

import json
import time

from labtools import COMPUTE, CONTROL, INV, addr, host, ssh

LISTEN = ("import socket,time,sys\nss=[]\nfor p in map(int, sys.argv[1:]):\n s=socket.socket(); "
          "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', p)); s.listen(8); ss.append(s)\n"
          "time.sleep(20)\n")
PROBE = ("import socket,json,sys\nout={}\nfor ip,p in json.loads(sys.argv[1]):\n try:\n  "
         "socket.create_connection((ip,p),timeout=2).close(); out[f'{ip}:{p}']=True\n except OSError:\n  "
         "out[f'{ip}:{p}']=False\nprint(json.dumps(out))\n")


def test_nccl_range_open_between_nodes_on_every_network_and_undeclared_port_closed():
    peer = COMPUTE[0]
    busy = {int(a.rsplit(":", 1)[1]) for a in ssh(CONTROL, "ss -Htan | awk '{print $4}'").stdout.split()
            if a.rsplit(":", 1)[-1].isdigit()}
    nccl = next(p for p in range(50500, 51000) if p not in busy)
    ssh(CONTROL, f"cat > /tmp/fw-listen.py <<'EOF'\n{LISTEN}EOF\nnohup timeout 25 python3 /tmp/fw-listen.py {nccl} 12345 "
                 ">/dev/null 2>&1 &")
    time.sleep(1.5)
    ips = [addr(CONTROL), *INV["hosts"][CONTROL]["sparkfleet_fabric_ips"]]
    targets = [[ip, nccl] for ip in ips] + [[addr(CONTROL), 12345]]
    got = json.loads(ssh(peer, f"cat > /tmp/fw-probe.py <<'EOF'\n{PROBE}EOF\npython3 /tmp/fw-probe.py '{json.dumps(targets)}'")
                     .stdout)
    want = {f"{ip}:{nccl}": True for ip in ips} | {f"{addr(CONTROL)}:12345": False}
    assert got == want


def test_ephemeral_ports_pinned_rocev2_allowed_and_ruleset_reloads():
    for n in (CONTROL, *COMPUTE):
        h = host(n)
        assert h.run("cat /proc/sys/net/ipv4/ip_local_port_range").stdout.split() == ["50000", "51000"]
        assert h.file("/etc/sparkfleet/firewall.nft").mode == 0o600
        assert h.run("nft -c -f /etc/sparkfleet/firewall.nft").rc == 0
        chain = h.run("nft list chain inet sparkfleet input").stdout
        assert "policy drop" in chain and "4791" in chain
        assert h.run("systemctl restart sparkfleet-firewall").rc == 0
        assert "policy drop" in h.run("nft list chain inet sparkfleet input").stdout
