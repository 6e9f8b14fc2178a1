"""The nightly drift check on the whole converged lab: its timer really fires, the run there names a changed scrape
config on the control node only, writes reports and the node_exporter metric, and Prometheus raises the drift alert
naming the node (the role's key and bundle tests: molecule/drift_timer). One timer-driven run: each costs a full
check-mode run of every layer (minutes on the CI machine); a clean run, its metric and its report are test_drift's."""
from __future__ import annotations

import json
import time

from test_monitoring import alerts, wait

from labtools import INV, NODES, playbook, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
EVERY_MINUTE = ["-e", "drift_timer_schedule=*:*:00", "-e", "drift_timer_randomized_delay=0"]
CFG = "/etc/sparkfleet/prometheus/prometheus.yml"
SCRAPE_TASK = "Scrape config from the inventory (checked with promtool check config)"


def now() -> str:
    return ssh(CONTROL, "date -u +%Y-%m-%dT%H:%M:%S").stdout.strip()


def timer_report(since: str, status: str) -> dict:
    """The first report the timer's runs wrote after `since` with this status (bounded wait). The timer fires every
    minute; a check-mode run of every layer can take longer than that on a loaded machine, so the service may be busy
    with the next run by the time we look: a new latest.json is the proof, not an idle service."""
    deadline, got = time.time() + 600, None
    while time.time() < deadline:
        out = ssh(CONTROL, "cat /var/lib/sparkfleet/drift/latest.json 2>/dev/null", check=False).stdout
        try:
            got = json.loads(out)
        except ValueError:
            got = None
        if got and str(got.get("generated_at", "")) >= since and got.get("status") == status:
            return got
        time.sleep(5)
    raise AssertionError(f"no {status} report from the timer since {since} (last: {got and got.get('status')}):\n" + ssh(
        CONTROL, "systemctl status sparkfleet-drift.timer sparkfleet-drift.service --no-pager; "
                 "journalctl -u sparkfleet-drift.service --no-pager -o cat | tail -20", check=False).stdout[-3000:])


def test_timer_installs_idempotently_fires_names_scrape_config_drift_and_raises_the_alert():
    first = playbook("playbooks/drift_timer.yml", *EVERY_MINUTE)
    assert first.returncode == 0, first.stdout[-3000:]
    again = playbook("playbooks/drift_timer.yml", *EVERY_MINUTE)
    assert "changed=0" in again.stdout.split("PLAY RECAP")[-1], again.stdout[-2000:]
    assert "sparkfleet-drift.timer" in ssh(CONTROL, "systemctl list-timers --no-pager").stdout
    original = ssh(CONTROL, f"cat {CFG}").stdout
    since = now()
    ssh(CONTROL, f"cp -p {CFG} /root/prometheus.yml.orig && sed -i 's/scrape_interval: 15s/scrape_interval: 60s/' {CFG}")
    try:
        report = timer_report(since, "drift")
        tasks = sorted(d["task"] for d in report["hosts"][CONTROL]["drift"])
        assert SCRAPE_TASK in tasks, tasks
        assert set(report["hosts"]) == set(NODES) and not any(report["hosts"][n]["drift"] for n in NODES if n != CONTROL)
        # The metric node_exporter serves (every run while the change stands finds the same drift).
        prom = ssh(CONTROL, "cat /var/lib/node_exporter/textfile_collector/sparkfleet_drift.prom").stdout
        assert "sparkfleet_drift_last_run_status 2" in prom, prom
        assert f'sparkfleet_drift_tasks{{host="{CONTROL}"}} 0' not in prom, prom
        assert all(f'sparkfleet_drift_tasks{{host="{n}"}} 0' in prom for n in NODES if n != CONTROL), prom
        hit = wait("SparkfleetDriftDetected", lambda: [a for a in alerts("SparkfleetDriftDetected")
                                                       if a["labels"].get("host") == CONTROL], timeout=150)
        assert hit[0]["state"] in ("pending", "firing")
    finally:
        ssh(CONTROL, f"cp -p /root/prometheus.yml.orig {CFG} && rm -f /root/prometheus.yml.orig")
        # Back to the nightly schedule; a run the every-minute timer started is stopped (it would load later tests).
        assert playbook("playbooks/drift_timer.yml").returncode == 0
        ssh(CONTROL, "systemctl stop sparkfleet-drift.service", check=False)
    assert ssh(CONTROL, f"cat {CFG}").stdout == original
