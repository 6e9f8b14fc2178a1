"""/etc/hosts: each node resolves every node by management name and both fabric names (-fab, -fab1); Ubuntu's
`127.0.1.1 HOSTNAME` line is commented out with a note, not deleted."""
from __future__ import annotations

from labtools import INV, NODES, addr, host, ssh


def test_every_node_resolves_every_name_on_the_right_network():
    for src in NODES:
        for dst in NODES:
            fab = INV["hosts"][dst]["sparkfleet_fabric_ips"]
            out = ssh(src, f"getent ahostsv4 {dst} {dst}-fab {dst}-fab1 >/dev/null; for n in {dst} {dst}-fab {dst}-fab1; do "
                           "getent ahostsv4 $n | head -1 | cut -d' ' -f1; done").stdout.split()
            assert out == [addr(dst), fab[0], fab[1]], (src, dst, out)


def test_127_0_1_1_line_disabled_not_deleted():
    for n in NODES:
        text = host(n).file("/etc/hosts").content_string
        assert not [ln for ln in text.splitlines() if ln.startswith("127.0.1.1")], text
        assert "127.0.1.1" in text
