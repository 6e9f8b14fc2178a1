"""Drift check on the converged lab: zero drift, planted drift named exactly, unreachable != drift,
and the drift run itself changes nothing."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

from test_gate import ran_tasks

from labtools import INV, INVENTORY, NODES, PROJECT, playbook, recap, ssh

PY = str(PROJECT / ".venv" / "bin" / "python")
LAB = INV["vars"]["sparkfleet_cluster_name"]
DIGEST = ("sha256sum /etc/docker/daemon.json /etc/hosts /etc/ssh/ssh_known_hosts /etc/ssh/sshd_config.d/01-sparkfleet.conf "
          "/etc/chrony/conf.d/sparkfleet.conf /etc/sparkfleet/firewall.nft /etc/sysctl.d/60-sparkfleet-nccl.conf "
          "/home/spark/.ssh/authorized_keys; nft -s list table inet sparkfleet | sha256sum; "
          "cat /proc/sys/net/ipv4/ip_local_port_range; systemctl is-active sparkfleet-firewall ssh; "
          "systemctl is-enabled sparkfleet-firewall chrony")


# The roles whose footprints the planted drift leaves changed, and roles whose footprints it leaves as they were (the
# control node's services are started again right after the drift run: chrony, Prometheus and Alertmanager are back
# as stamped, and their gates must stay shut).
PLANTED_ROLES = {"hosts_file", "ssh_trust", "object_store", "firewall", "container_runtime", "slurm", "munge"}
UNTOUCHED_ROLES = {"python_env", "ray", "gateway", "node_exporter", "fabric", "chrony", "prometheus", "alertmanager"}

HAND_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKsJ8m7yLrYhCqv3xQ1lS0bG7s2nM6t1oTt3r0i8b1Xc hand-added@laptop"


def drift(tmp_path, *extra, gate="on"):
    res = subprocess.run([PY, "-m", "sparkfleet_tools.drift", "--inventory", str(INVENTORY), "--out", str(tmp_path), *extra],
                         cwd=PROJECT, text=True, capture_output=True, timeout=600,
                         # With the role gates on, as the nightly run has them: planted drift must still be named.
                         env=dict(os.environ, PATH=f"{PROJECT}/.venv/bin:{os.environ['PATH']}", SPARKFLEET_GATE=gate))
    report = json.loads((tmp_path / "latest.json").read_text())
    return res, report


def drifted(report):
    return {h: sorted(d["task"] for d in r["drift"]) for h, r in report["hosts"].items() if r["drift"]}


def digests():
    return {n: ssh(n, DIGEST, check=False).stdout for n in NODES}


CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
COMPUTE = [h for h in NODES if INV["hosts"][h]["group"] == "compute"]
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
# Handlers a drifted task would notify: the drift report lists them too (a restart the repair would make).
HANDLERS = {"Restart docker", "Reconfigure slurm", "Restart slurmd", "Restart slurmctld", "Restart munge",
            "Restart object storage", "Reload sshd"}


def test_planted_drift_is_named_exactly_secrets_stay_hidden_and_a_converge_repairs_it(tmp_path):
    """One drift run over every kind of planted change at once (each full check-mode run costs minutes on the CI
    machine): edited files, a deleted firewall rule, a kernel setting, stopped services (every one on the control
    node: the run must still end within its deadline and name each), Slurm's config and munge key, and files that hold
    secrets. Every change is named on its host, nothing else is (handlers aside), no report shows a secret, the drift
    run changes nothing, and a gated converge repairs all of it, rerunning exactly the roles whose footprints changed
    (the gates' proof): the next drift run is clean, exit 0, with its metric."""
    a, (b, c) = CONTROL, COMPUTE[:2]
    secret = INVENTORY / ".secrets" / f"{LAB}_s3_root_secret"
    root = secret.read_text().strip()
    munge = secrets.token_hex(32)
    key_line = ssh(b, "cat /home/spark/.ssh/id_ed25519").stdout.strip().splitlines()[1]
    ssh(a, f"sed -i 's/^\\(\\S*\\) {c}-fab$/10.80.0.250 {c}-fab/' /etc/hosts && grep -q '10.80.0.250 {c}-fab' /etc/hosts")
    ssh(a, f"echo '{HAND_KEY}' >> /home/spark/.ssh/authorized_keys")
    ssh(a, "sed -i 's/\"Read\"/\"Write\"/' /etc/sparkfleet-s3/s3.json")
    ssh(b, "h=$(nft -a list chain inet sparkfleet input | awk '/dport 50000-51000/ {print $NF; exit}'); "
           "nft delete rule inet sparkfleet input handle $h")
    ssh(b, "sysctl -qw net.ipv4.ip_local_port_range='32768 60999'")
    ssh(b, "sed -i 's/^SlurmdTimeout=300$/SlurmdTimeout=301/' /etc/slurm/slurm.conf && grep -q SlurmdTimeout=301 /etc/slurm/slurm.conf")
    ssh(b, "echo '# edited' >> /home/spark/.ssh/id_ed25519")
    ssh(c, "systemctl stop sparkfleet-firewall slurmd")
    ssh(c, "python3 -c \"import json; p='/etc/docker/daemon.json'; d=json.load(open(p)); "
           "d['log-opts']['max-size']='1m'; json.dump(d, open(p, 'w'))\"")
    ssh(c, f"printf %s {munge} > /etc/munge/munge.key")
    units = sorted(SERVICES)
    try:
        before = digests()
        ssh(a, f"systemctl stop {' '.join(units)} docker.socket")
        started = time.monotonic()
        res, report = drift(tmp_path / "planted", "--deadline", "480")
        took = time.monotonic() - started
        ssh(a, f"systemctl start {' '.join(units)}")
        assert digests() == before, "the drift run changed a node"
        assert took < 480 and not report["timed_out"], res.stdout[-2000:]
        assert res.returncode == 2, res.stdout[-2000:] + res.stderr
        assert report["status"] == "drift"
        want = {
            # The edited block line is both a block difference and a line that gives a cluster name another address.
            a: {"Authorize the cluster key (and people's keys) for the cluster user",  # the key added by hand
                "Disable other lines that give a cluster name another address", "Write the cluster block in /etc/hosts",
                "Credentials (S3 identities; never logged)", *SERVICES.values()},
            b: {"Load the cluster ruleset (checked with nft -c first; live drift repaired)",
                "Pin the ephemeral port range to the NCCL range", "Slurm configuration",
                "Cluster key pair of the cluster user"},
            c: {"Firewall unit enabled and active", "Load the cluster ruleset (checked with nft -c first; live drift repaired)",
                "Merge our keys into daemon.json (other keys are kept)", "Slurm daemons enabled and running",
                "The cluster's munge key (identical on every node; never logged)",
                "Munge enabled and running (restarted when the key changed)"},
        }
        got = {h: set(t) for h, t in drifted(report).items()}
        assert set(got) == set(want), got
        assert all(want[h] <= got[h] for h in want), {h: want[h] - got[h] for h in want}
        # Nothing else drifted on the compute nodes; the control node's stopped services may take others with them.
        assert all(got[h] - want[h] <= HANDLERS for h in (b, c)), {h: got[h] - want[h] for h in (b, c)}
        md = (tmp_path / "planted" / "latest.md").read_text()
        assert f"## {a}: Write the cluster block in /etc/hosts" in md and "10.80.0.250" in md
        for f in (tmp_path / "planted").rglob("*"):
            if f.is_file():
                text = f.read_text()
                assert root not in text and key_line not in text and munge not in text, f
                assert oct(f.stat().st_mode & 0o777) == "0o600", f
        assert oct((tmp_path / "planted").stat().st_mode & 0o777) == "0o700"
        out = res.stdout + res.stderr
        assert root not in out and key_line not in out and munge not in out
    finally:
        ssh(a, f"systemctl start {' '.join(units)}", check=False)
        # Gated, as users converge: the gated drift run named every planted change, so the gates rerun exactly those
        # roles (test_gate proves the ungated run).
        fix = playbook("site.yml", env={"SPARKFLEET_GATE": "on"})
        assert fix.returncode == 0, fix.stdout[-2000:]
    # The gates reran the roles whose footprints changed, and only those.
    ran = ran_tasks(fix.stdout)
    assert ran >= PLANTED_ROLES and not ran & UNTOUCHED_ROLES, sorted(ran)
    assert all(recap(fix.stdout)[n]["changed"] >= 1 for n in NODES)
    # The next drift run, gated as the nightly one, is clean with its metric (the ungated --check of every role on a
    # converged lab adds nothing to test_gate's ungated converge with changed=0, for minutes of CI).
    prom = tmp_path / "m" / "sparkfleet_drift.prom"
    res, report = drift(tmp_path / "clean", "--textfile", str(prom))
    assert res.returncode == 0 and report["status"] == "ok" and drifted(report) == {}, res.stdout[-2000:]
    assert set(report["hosts"]) == set(NODES)
    assert "hand-added" not in ssh(a, "cat /home/spark/.ssh/authorized_keys").stdout, "converge removes a key nobody declared"
    for name in ("latest.md", "latest.xml"):
        assert (tmp_path / "clean" / name).stat().st_size > 100
    assert 'failures="0"' in (tmp_path / "clean" / "latest.xml").read_text()
    text = prom.read_text()
    assert "sparkfleet_drift_last_run_status 0" in text
    assert all(f'sparkfleet_drift_tasks{{host="{n}"}} 0' in text for n in NODES)


def test_a_node_down_is_named_and_the_others_are_still_checked_and_converged(tmp_path):
    """One node's sshd down: the drift check goes on with the others, names the node as unreachable (never as drift)
    and a drift planted on another node, exit 3; strict mode stops at preflight instead (exit 1); site.yml converges
    the reachable nodes, repairs the drift, validates them and exits 4 (ansible-playbook's "unreachable")."""
    victim, other = NODES[-1], NODES[-2]
    container = f"sparkfleet-{INV['vars']['sparkfleet_cluster_name']}-{victim}"
    ssh(other, "sysctl -qw net.ipv4.ip_local_port_range='32768 60999'")
    # Stop sshd and end its sessions (Ansible's persistent connections with them): new ones are refused.
    subprocess.run(["docker", "exec", container, "sh", "-c", "systemctl stop ssh.socket ssh.service; pkill -x sshd; true"],
                   check=False)
    try:
        res, report = drift(tmp_path / "down")
        assert res.returncode == 3, res.stdout + res.stderr
        assert report["status"] == "partial" and report["unreachable"] == [victim]
        assert report["hosts"][victim]["status"] == "unreachable" and report["hosts"][victim]["drift"] == []
        assert [d["task"] for d in report["hosts"][other]["drift"]] == ["Pin the ephemeral port range to the NCCL range"]
        assert f"unreachable: {victim}" in res.stdout
        strict, report = drift(tmp_path / "strict", "--strict")
        assert strict.returncode == 1 and report["status"] == "error", strict.stdout
        site = playbook("site.yml", env={"SPARKFLEET_GATE": "on"})
        assert site.returncode == 4, site.stdout[-3000:]
        assert f"Left out of this run, unreachable: {victim}" in site.stdout
        rc = recap(site.stdout)
        assert rc[victim]["unreachable"] == 1 and rc[other]["changed"] >= 1 and all(
            r["failed"] == 0 for r in rc.values()), site.stdout[-3000:]
        assert "validation: " in site.stdout and "0 failed" in site.stdout, site.stdout[-3000:]
        data = json.loads((PROJECT / "reports" / "validate" / "latest.json").read_text())
        assert [c["status"] for c in data["hosts"][victim]] == ["not_checked"], data["hosts"][victim]
        peer = [c for c in data["hosts"][other] if c["check"] == "peer"]
        assert [(c["target"], c["status"]) for c in peer] == [(victim, "not_checked")], peer
    finally:
        subprocess.run(["docker", "exec", container, "systemctl", "start", "ssh.service"], check=True)
    # Repaired by that converge: the same range as a node nobody touched.
    ranges = {n: ssh(n, "cat /proc/sys/net/ipv4/ip_local_port_range").stdout.split() for n in (NODES[0], other)}
    assert ranges[other] == ranges[NODES[0]] != ["32768", "60999"], ranges


def test_no_python_traceback_on_missing_inventory(tmp_path):
    res = subprocess.run([sys.executable, "-m", "sparkfleet_tools.drift", "--inventory", str(tmp_path / "nope")],
                         cwd=PROJECT, text=True, capture_output=True)
    assert res.returncode == 1 and "not found" in res.stderr


def test_deadline_stops_the_run_and_names_what_was_running(tmp_path):
    res, report = drift(tmp_path, "--deadline", "8")
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr
    assert report["status"] == "error" and report["timed_out"] and report["deadline_s"] == 8
    assert report["runner_status"] == "timeout"
    # "host: task" for each host still busy when the deadline passed.
    assert report["still_running"] and all(r.split(":")[0] in NODES for r in report["still_running"]), report
    assert "deadline" in (res.stdout + res.stderr).lower()
    assert (tmp_path / "latest.md").is_file() and (tmp_path / "latest.xml").is_file()
