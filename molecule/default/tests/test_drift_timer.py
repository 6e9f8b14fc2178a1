"""The nightly drift check on the whole converged lab: its timer really fires, and the run there writes reports and the
node_exporter metric (the role's key and bundle tests: molecule/drift_timer)."""
from __future__ import annotations

import json
import time

from labtools import INV, NODES, playbook, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
EVERY_MINUTE = ["-e", "drift_timer_schedule=*:*:00", "-e", "drift_timer_randomized_delay=0"]




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
