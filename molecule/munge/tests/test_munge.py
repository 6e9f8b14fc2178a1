"""munge: the same key on every node (root-only), and a credential made on one node decodes on the other."""
from __future__ import annotations

from labtools import NODES, host, ssh


def test_one_key_everywhere_and_root_only():
    sums = {ssh(n, "sha256sum /etc/munge/munge.key").stdout.split()[0] for n in NODES}
    assert len(sums) == 1
    for n in NODES:
        f = host(n).file("/etc/munge/munge.key")
        assert f.user == "munge" and f.mode == 0o400
        assert host(n).service("munge").is_running


def test_credential_crosses_nodes():
    cred = ssh(NODES[-1], "munge -n").stdout.strip()
    out = ssh(NODES[0], f"echo '{cred}' | unmunge").stdout
    assert "STATUS:          Success (0)" in out, out
