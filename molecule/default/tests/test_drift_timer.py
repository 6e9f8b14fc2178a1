"""The nightly drift check installs on the control node, its timer really fires, and the run
there writes reports and the node_exporter metric."""
from __future__ import annotations

import json
import time

from labtools import INV, NODES, PROJECT, addr, playbook, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
EVERY_MINUTE = ["-e", "drift_timer_schedule=*:*:00", "-e", "drift_timer_randomized_delay=0"]


def drift_lines(node):
    keys = ssh(node, f"cat ~{INV['vars']['ansible_user']}/.ssh/authorized_keys").stdout
    return [ln for ln in keys.splitlines() if "sparkfleet-drift@" in ln]


def try_login(src, key_path, dst):
    """ssh as the Ansible user with the drift key, from src to dst: True when it gets in."""
    res = ssh(src, f"ssh -i {key_path} -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                   f"-o ConnectTimeout=5 {INV['vars']['ansible_user']}@{addr(dst)} true", check=False)
    return res.returncode == 0


def test_drift_key_is_restricted_and_rotation_removes_the_old_one():
    assert playbook("playbooks/drift_timer.yml").returncode == 0
    control_ips = [addr(CONTROL), *INV["hosts"][CONTROL]["sparkfleet_fabric_ips"]]
    for n in NODES:
        lines = drift_lines(n)
        assert len(lines) == 1, lines
        assert lines[0].startswith(f'from="{",".join(control_ips)}",no-agent-forwarding,no-port-forwarding,'
                                   'no-X11-forwarding,no-pty ssh-ed25519 ')
    old = drift_lines(NODES[1])[0].split()[2]
    other = NODES[1]
    # The same private key on another node does not get in: `from=` names the control node only.
    key = ssh(CONTROL, "cat /etc/sparkfleet/drift/id_ed25519").stdout
    ssh(other, f"umask 077; cat > /tmp/stolen <<'EOF'\n{key}EOF")
    try:
        assert try_login(CONTROL, "/etc/sparkfleet/drift/id_ed25519", NODES[2])
        assert not try_login(other, "/tmp/stolen", NODES[2])
    finally:
        ssh(other, "rm -f /tmp/stolen")
    ssh(CONTROL, "cp /etc/sparkfleet/drift/id_ed25519 /root/old-drift-key")
    try:
        assert playbook("playbooks/drift_timer.yml", "-e", "drift_timer_rotate_key=true").returncode == 0
        for n in NODES:
            lines = drift_lines(n)
            assert len(lines) == 1 and lines[0].split()[2] != old, lines
        assert not try_login(CONTROL, "/root/old-drift-key", NODES[2]), "the rotated-out key still works"
        assert try_login(CONTROL, "/etc/sparkfleet/drift/id_ed25519", NODES[2])
    finally:
        ssh(CONTROL, "rm -f /root/old-drift-key")


def test_drift_bundle_is_root_only():
    assert ssh(CONTROL, "stat -c %a /opt/sparkfleet/bundle.tar.gz").stdout.strip() == "600"
    bundle = next((PROJECT / ".cache").glob("drift-bundle-*.tar.gz"))
    assert oct(bundle.stat().st_mode & 0o777) == "0o600"
    assert ssh(CONTROL, "stat -c %a /var/lib/sparkfleet/drift").stdout.strip() == "700"


def test_timer_installs_idempotently_and_fires():
    since = ssh(CONTROL, "date -u +%Y-%m-%dT%H:%M:%S").stdout.strip()
    first = playbook("playbooks/drift_timer.yml", *EVERY_MINUTE)
    assert first.returncode == 0, first.stdout[-3000:]
    again = playbook("playbooks/drift_timer.yml", *EVERY_MINUTE)
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1], again.stdout[-2000:]
    assert "sparkfleet-drift.timer" in ssh(CONTROL, "systemctl list-timers --no-pager").stdout
    # Wait (bounded) for a report the timer's run wrote after the install. The timer fires within a minute; a
    # check-mode run of every layer can take longer than a minute on a loaded machine, so the service may be busy
    # again with the next run by the time we look: a new latest.json is the proof, not an idle service.
    deadline = time.time() + 540
    report = None
    while time.time() < deadline:
        out = ssh(CONTROL, "cat /var/lib/sparkfleet/drift/latest.json 2>/dev/null", check=False).stdout
        try:
            got = json.loads(out)
        except ValueError:
            got = None
        if got and str(got.get("generated_at", "")) >= since:
            report = got
            break
        time.sleep(5)
    assert report is not None, "the timer did not produce a report in time:\n" + ssh(
        CONTROL, "systemctl status sparkfleet-drift.timer sparkfleet-drift.service --no-pager; "
                 "journalctl -u sparkfleet-drift.service --no-pager -o cat | tail -20", check=False).stdout[-3000:]
    assert report["status"] == "ok" and set(report["hosts"]) == set(NODES), report.get("output_tail")
    journal = ssh(CONTROL, "journalctl -u sparkfleet-drift.service --no-pager -o cat | tail -40").stdout
    assert "drift: none on" in journal
    prom = ssh(CONTROL, "cat /var/lib/node_exporter/textfile_collector/sparkfleet_drift.prom").stdout
    assert "sparkfleet_drift_last_run_status 0" in prom
    assert all(f'sparkfleet_drift_tasks{{host="{n}"}} 0' in prom for n in NODES)
    # Back to the nightly schedule; a run the every-minute timer started is stopped (it would load later tests).
    assert playbook("playbooks/drift_timer.yml").returncode == 0
    ssh(CONTROL, "systemctl stop sparkfleet-drift.service", check=False)
