"""SSH trust: the cluster user reaches every node by name and address with no prompt (known hosts pinned), and sshd
is hardened although Ubuntu cloud-init's drop-in says PasswordAuthentication yes."""
from __future__ import annotations

from labtools import NODES, addr, host, ssh


def test_cluster_user_reaches_every_node_without_prompt():
    for src in NODES:
        targets = [t for dst in NODES for t in (dst, addr(dst))]
        script = "; ".join(f"echo {t}=$(sudo -u spark ssh -o BatchMode=yes -o ConnectTimeout=5 {t} hostname 2>&1)"
                           for t in targets)
        got = dict(line.split("=", 1) for line in ssh(src, script).stdout.strip().splitlines())
        assert got == {t: dst for dst in NODES for t in (dst, addr(dst))}, src


def test_sshd_hardened_over_cloud_init_drop_in():
    for n in NODES:
        h = host(n)
        assert "PasswordAuthentication yes" in h.file("/etc/ssh/sshd_config.d/50-cloud-init.conf").content_string
        conf = h.run("sshd -T").stdout
        assert "passwordauthentication no" in conf and "kbdinteractiveauthentication no" in conf
        assert h.user("spark").uid == 2000 and h.file("/home/spark/.ssh/id_ed25519").mode == 0o600
        # The lab image carries an earlier release's drop-in (PermitRootLogin yes): gone, and its setting with it.
        assert not h.file("/etc/ssh/sshd_config.d/50-sparkfleet.conf").exists and "permitrootlogin yes" not in conf
