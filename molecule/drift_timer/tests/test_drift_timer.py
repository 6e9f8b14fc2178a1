"""drift_timer on the control node: a restricted key that only the control node can use, rotation, a root-only bundle
(the timer firing a real drift run is tested on the whole site in molecule/default)."""
from __future__ import annotations

from labtools import CONTROL, INV, NODES, PROJECT, addr, playbook, ssh


def drift_lines(node):
    keys = ssh(node, f"cat ~{INV['vars']['ansible_user']}/.ssh/authorized_keys").stdout
    return [ln for ln in keys.splitlines() if "sparkfleet-drift@" in ln]


def try_login(src, key_path, dst):
    """ssh as the Ansible user with the drift key, from src to dst: True when it gets in."""
    res = ssh(src, f"ssh -i {key_path} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                   f"-o ConnectTimeout=5 {INV['vars']['ansible_user']}@{addr(dst)} true", check=False)
    return res.returncode == 0


def test_drift_key_is_restricted_and_rotation_removes_the_old_one():
    control_ips = [addr(CONTROL), *INV["hosts"][CONTROL]["sparkfleet_fabric_ips"]]
    for n in NODES:
        lines = drift_lines(n)
        assert len(lines) == 1, lines
        assert lines[0].startswith(f'from="{",".join(control_ips)}",restrict ssh-ed25519 ')
    old = drift_lines(NODES[1])[0].split()[2]
    other = NODES[1]
    # The same private key on another node does not get in: `from=` names the control node only.
    key = ssh(CONTROL, "cat /etc/sparkfleet/drift/id_ed25519").stdout
    ssh(other, f"umask 077; cat > /tmp/stolen <<'EOF'\n{key}EOF")
    try:
        assert try_login(CONTROL, "/etc/sparkfleet/drift/id_ed25519", other)
        assert not try_login(other, "/tmp/stolen", CONTROL)
    finally:
        ssh(other, "rm -f /tmp/stolen")
    ssh(CONTROL, "cp /etc/sparkfleet/drift/id_ed25519 /root/old-drift-key")
    try:
        assert playbook("playbooks/roles.yml", "-e", "drift_timer_rotate_key=true").returncode == 0
        for n in NODES:
            lines = drift_lines(n)
            assert len(lines) == 1 and lines[0].split()[2] != old, lines
        assert not try_login(CONTROL, "/root/old-drift-key", other), "the rotated-out key still works"
        assert try_login(CONTROL, "/etc/sparkfleet/drift/id_ed25519", other)
    finally:
        ssh(CONTROL, "rm -f /root/old-drift-key")


def test_drift_bundle_is_root_only():
    assert ssh(CONTROL, "stat -c %a /opt/sparkfleet/bundle.tar.gz").stdout.strip() == "600"
    bundle = next((PROJECT / ".cache").glob("drift-bundle-*.tar.gz"))
    assert oct(bundle.stat().st_mode & 0o777) == "0o600"
    assert ssh(CONTROL, "stat -c %a /var/lib/sparkfleet/drift").stdout.strip() == "700"
    # Its home is traversable (python_env's venv there runs Ray as its own user) but its inventory, with the
    # secrets folder, is root's alone, whatever its modes on the controller.
    modes = ssh(CONTROL, "stat -c '%a' /opt/sparkfleet /opt/sparkfleet/inventory /opt/sparkfleet/inventory/hosts.yml").stdout.split()
    assert modes == ["711", "700", "600"], modes
    assert ssh(CONTROL, "runuser -u nobody -- cat /opt/sparkfleet/inventory/hosts.yml", check=False).returncode != 0
