"""Drift check on the converged lab: zero drift, planted drift named exactly, unreachable != drift,
and the drift run itself changes nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from labtools import INV, INVENTORY, NODES, PROJECT, playbook, ssh

PY = str(PROJECT / ".venv" / "bin" / "python")
LAB = INV["vars"]["sparkfleet_cluster_name"]
DIGEST = ("sha256sum /etc/docker/daemon.json /etc/hosts /etc/ssh/ssh_known_hosts /etc/ssh/sshd_config.d/01-sparkfleet.conf "
          "/etc/chrony/conf.d/sparkfleet.conf /etc/sparkfleet/firewall.nft /etc/sysctl.d/60-sparkfleet-nccl.conf "
          "/home/spark/.ssh/authorized_keys; nft -s list table inet sparkfleet | sha256sum; "
          "cat /proc/sys/net/ipv4/ip_local_port_range; systemctl is-active sparkfleet-firewall ssh; "
          "systemctl is-enabled sparkfleet-firewall chrony")


HAND_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKsJ8m7yLrYhCqv3xQ1lS0bG7s2nM6t1oTt3r0i8b1Xc hand-added@laptop"


def drift(tmp_path, *extra):
    res = subprocess.run([PY, "-m", "sparkfleet_tools.drift", "--inventory", str(INVENTORY), "--out", str(tmp_path), *extra],
                         cwd=PROJECT, text=True, capture_output=True, timeout=600,
                         # With the role gates on, as the nightly run has them: planted drift must still be named.
                         env=dict(os.environ, PATH=f"{PROJECT}/.venv/bin:{os.environ['PATH']}", SPARKFLEET_GATE="on"))
    report = json.loads((tmp_path / "latest.json").read_text())
    return res, report


def drifted(report):
    return {h: sorted(d["task"] for d in r["drift"]) for h, r in report["hosts"].items() if r["drift"]}


def digests():
    return {n: ssh(n, DIGEST, check=False).stdout for n in NODES}


def test_converged_lab_has_no_drift_and_the_textfile_metric_says_so(tmp_path):
    prom = tmp_path / "m" / "sparkfleet_drift.prom"
    res, report = drift(tmp_path, "--textfile", str(prom))
    assert res.returncode == 0, res.stdout + res.stderr
    assert report["status"] == "ok" and drifted(report) == {}
    assert set(report["hosts"]) == set(NODES)
    for name in ("latest.md", "latest.xml"):
        assert (tmp_path / name).stat().st_size > 100
    assert 'failures="0"' in (tmp_path / "latest.xml").read_text()
    text = prom.read_text()
    assert "sparkfleet_drift_last_run_status 0" in text
    for n in NODES:
        assert f'sparkfleet_drift_tasks{{host="{n}"}} 0' in text


def test_planted_drift_is_named_exactly(tmp_path):
    a, b, c = NODES[0], NODES[1], NODES[2]
    ssh(a, f"sed -i 's/^\\(\\S*\\) {c}-fab$/10.80.0.250 {c}-fab/' /etc/hosts && grep -q '10.80.0.250 {c}-fab' /etc/hosts")
    ssh(b, "h=$(nft -a list chain inet sparkfleet input | awk '/dport 50000-51000/ {print $NF; exit}'); "
           "nft delete rule inet sparkfleet input handle $h")
    ssh(b, "sysctl -qw net.ipv4.ip_local_port_range='32768 60999'")
    ssh(c, "systemctl stop sparkfleet-firewall")
    ssh(a, f"echo '{HAND_KEY}' >> /home/spark/.ssh/authorized_keys")
    ssh(c, "python3 -c \"import json; p='/etc/docker/daemon.json'; d=json.load(open(p)); "
           "d['log-opts']['max-size']='1m'; json.dump(d, open(p, 'w'))\"")
    try:
        before = digests()
        res, report = drift(tmp_path)
        assert digests() == before, "the drift run changed a node"
        assert res.returncode == 2, res.stdout + res.stderr
        assert report["status"] == "drift"
        assert drifted(report) == {
            # The edited block line is both a block difference and a line that gives a cluster name another address.
            a: ["Authorize the cluster key (and people's keys) for the cluster user",  # the key added by hand
                "Disable other lines that give a cluster name another address", "Write the cluster block in /etc/hosts"],
            b: ["Load the cluster ruleset (checked with nft -c first; live drift repaired)",
                "Pin the ephemeral port range to the NCCL range"],
            c: ["Firewall unit enabled and active",
                "Load the cluster ruleset (checked with nft -c first; live drift repaired)",
                "Merge our keys into daemon.json (other keys are kept)", "Restart docker"],  # the handler would run too
        }
        md = (tmp_path / "latest.md").read_text()
        assert f"## {a}: Write the cluster block in /etc/hosts" in md and "10.80.0.250" in md
        assert 'failures="3"' in (tmp_path / "latest.xml").read_text()
    finally:
        # Gated, as users converge: the gated drift run above named every planted change, so the gates rerun exactly
        # those roles (a minute less than an ungated run; test_gate proves the ungated one).
        fix = playbook("site.yml", env={"SPARKFLEET_GATE": "on"})
        assert fix.returncode == 0, fix.stdout[-2000:]
    res, report = drift(tmp_path)
    assert res.returncode == 0 and drifted(report) == {}
    assert "hand-added" not in ssh(a, "cat /home/spark/.ssh/authorized_keys").stdout, "converge removes a key nobody declared"


def test_unreachable_host_is_a_failed_run_not_drift(tmp_path):
    victim = NODES[-1]
    container = f"sparkfleet-{INV['vars']['sparkfleet_cluster_name']}-{victim}"
    # Stop sshd and end its sessions (Ansible's persistent connections with them): new ones are refused.
    subprocess.run(["docker", "exec", container, "sh", "-c", "systemctl stop ssh.socket ssh.service; pkill -x sshd; true"],
                   check=False)
    try:
        res, report = drift(tmp_path)
    finally:
        subprocess.run(["docker", "exec", container, "systemctl", "start", "ssh.service"], check=True)
    assert res.returncode == 1, res.stdout + res.stderr
    assert report["status"] == "error" and report["unreachable"] == [victim]
    assert report["hosts"][victim]["status"] == "unreachable" and report["hosts"][victim]["drift"] == []
    assert victim in res.stdout and "unreachable" in res.stdout


def test_no_python_traceback_on_missing_inventory(tmp_path):
    res = subprocess.run([sys.executable, "-m", "sparkfleet_tools.drift", "--inventory", str(tmp_path / "nope")],
                         cwd=PROJECT, text=True, capture_output=True)
    assert res.returncode == 1 and "not found" in res.stderr


def test_secrets_never_in_drift_reports(tmp_path):
    """Files that hold secrets drifted on nodes: the drift check names the tasks, the reports show no secret."""
    control, compute = NODES[0], NODES[1]
    secrets = INVENTORY / ".secrets"
    root = (secrets / f"{LAB}_s3_root_secret").read_text().strip()
    priv = ssh(compute, "cat /home/spark/.ssh/id_ed25519").stdout
    key_line = priv.strip().splitlines()[1]
    ssh(control, "cp -p /etc/sparkfleet-s3/s3.json /root/s3.json.bak && sed -i 's/\"Read\"/\"Write\"/' /etc/sparkfleet-s3/s3.json")
    ssh(compute, "cp -p /home/spark/.ssh/id_ed25519 /root/id.bak && echo '# edited' >> /home/spark/.ssh/id_ed25519")
    try:
        res, report = drift(tmp_path)
        assert res.returncode == 2, res.stdout + res.stderr
        tasks = drifted(report)
        assert "Credentials (S3 identities; never logged)" in tasks[control]
        assert "Cluster key pair of the cluster user" in tasks[compute]
        for f in tmp_path.rglob("*"):
            if f.is_file():
                text = f.read_text()
                assert root not in text and key_line not in text, f
                assert oct(f.stat().st_mode & 0o777) == "0o600", f
        assert oct(tmp_path.stat().st_mode & 0o777) == "0o700"
        assert root not in res.stdout + res.stderr and key_line not in res.stdout + res.stderr
    finally:
        ssh(control, "mv /root/s3.json.bak /etc/sparkfleet-s3/s3.json")  # cp -p kept owner and mode
        ssh(compute, "mv /root/id.bak /home/spark/.ssh/id_ed25519")


CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
# Every long-running service sparkfleet manages on the control node, with the task that declares it running.
SERVICES = {
    "sparkfleet-s3": "Object storage enabled and running",
    "sparkfleet-firewall": "Firewall unit enabled and active",
    "docker": "Docker enabled and running",
    "chrony": "Chrony enabled and running",
    "slurmctld": "Slurm daemons enabled and running",
    "prometheus": "Prometheus enabled and running",
    "prometheus-alertmanager": "Alertmanager enabled and running",
}


def test_stopped_services_are_named_within_the_deadline(tmp_path):
    """Check-mode steps that talk to stopped services must not hang the nightly run: it ends and names each one.
    All of them stopped at once: one drift run instead of one per service (each costs a full check-mode run)."""
    units = sorted(SERVICES)
    ssh(CONTROL, f"systemctl stop {' '.join(units)} docker.socket")
    try:
        started = time.monotonic()
        res, report = drift(tmp_path, "--deadline", "300")
        took = time.monotonic() - started
    finally:
        ssh(CONTROL, f"systemctl start {' '.join(units)}")
    assert took < 300 and not report["timed_out"], res.stdout[-2000:]
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr
    missing = [u for u in units if SERVICES[u] not in drifted(report)[CONTROL]]
    assert not missing, (missing, drifted(report))
    assert set(drifted(report)) == {CONTROL}, drifted(report)


def test_deadline_stops_the_run_and_names_what_was_running(tmp_path):
    res, report = drift(tmp_path, "--deadline", "8")
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr
    assert report["status"] == "error" and report["timed_out"] and report["deadline_s"] == 8
    assert report["runner_status"] == "timeout"
    # "host: task" for each host still busy when the deadline passed.
    assert report["still_running"] and all(r.split(":")[0] in NODES for r in report["still_running"]), report
    assert "deadline" in (res.stdout + res.stderr).lower()
    assert (tmp_path / "latest.md").is_file() and (tmp_path / "latest.xml").is_file()
