"""The nightly drift check installs on the control node, its timer really fires, and the run
there writes reports and the node_exporter metric."""
from __future__ import annotations

import json
import time

from labtools import INV, NODES, playbook, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
EVERY_MINUTE = ["-e", "drift_timer_schedule=*:*:00", "-e", "drift_timer_randomized_delay=0"]


def test_timer_installs_idempotently_and_fires():
    first = playbook("playbooks/drift_timer.yml", *EVERY_MINUTE)
    assert first.returncode == 0, first.stdout[-3000:]
    again = playbook("playbooks/drift_timer.yml", *EVERY_MINUTE)
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1], again.stdout[-2000:]
    assert "sparkfleet-drift.timer" in ssh(CONTROL, "systemctl list-timers --no-pager").stdout
    # Wait (bounded) for the timer to start the check and for the check to finish.
    deadline = time.time() + 200
    report = None
    while time.time() < deadline:
        out = ssh(CONTROL, "cat /var/lib/sparkfleet/drift/latest.json 2>/dev/null; "
                           "systemctl show sparkfleet-drift.service -p ActiveState", check=False).stdout
        if "ActiveState=inactive" in out and out.lstrip().startswith("{"):
            report = json.loads(out[: out.rindex("}") + 1])
            break
        time.sleep(5)
    assert report is not None, "the timer did not produce a report in time"
    assert report["status"] == "ok" and set(report["hosts"]) == set(NODES), report.get("output_tail")
    journal = ssh(CONTROL, "journalctl -u sparkfleet-drift.service --no-pager -o cat | tail -5").stdout
    assert "drift: none on" in journal
    prom = ssh(CONTROL, "cat /var/lib/node_exporter/textfile_collector/sparkfleet_drift.prom").stdout
    assert "sparkfleet_drift_last_run_status 0" in prom
    assert all(f'sparkfleet_drift_tasks{{host="{n}"}} 0' in prom for n in NODES)
    # Back to the nightly schedule.
    assert playbook("playbooks/drift_timer.yml").returncode == 0
