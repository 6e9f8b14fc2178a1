"""The role gates on the converged lab: a gated no-op runs no role's tasks and changes nothing, and the same run with
every gate off (every task of every role) still changes nothing, so idempotence is proven for the roles themselves,
not only for the gates. Changes planted in roles' footprints make exactly those roles run and repair them: test_drift's
planted drift, repaired by a gated converge."""
from __future__ import annotations

import re

from labtools import playbook, recap

GATED = ("hosts_file", "ssh_trust", "chrony", "firewall", "fabric", "container_runtime", "object_store", "munge",
         "slurm", "prometheus", "alertmanager", "node_exporter", "python_env", "ray", "gateway")


def ran_tasks(out: str) -> set[str]:
    """Roles whose converge.yml ran in this output: its last task, the stamp, shows only when it was included."""
    return {role for role in re.findall(r"^TASK \[sparkfleet\.cluster\.(\w+) : Stamp - converged as of now\]", out, re.M)
            if role in GATED}


def gate_reasons(out: str) -> dict[str, set[str]]:
    """{role: the reasons its gate gave} from a -v run, for a readable failure."""
    reasons: dict[str, set[str]] = {}
    role = None
    for line in out.splitlines():
        m = re.match(r"^TASK \[sparkfleet\.cluster\.(\w+) : Gate - ", line)
        if m:
            role = m.group(1)
        elif role and '"reason": "' in line:
            reasons.setdefault(role, set()).add(line.split('"reason": "')[1].split('"')[0])
        elif line.startswith("TASK ["):
            role = None
    return reasons


def test_gated_noop_runs_no_role_and_changes_nothing():
    # First in the verify (conftest.py): right after the converge, a run that must run no role (the idempotence).
    res = playbook("site.yml", "-v", env={"SPARKFLEET_GATE": "on"})
    assert res.returncode == 0, res.stdout[-3000:]
    assert all(r["changed"] == 0 for r in recap(res.stdout).values()), res.stdout[-3000:]
    ran = ran_tasks(res.stdout)
    assert ran == set(), {r: v for r, v in gate_reasons(res.stdout).items() if r in ran}
    assert res.stdout.count("unchanged since the last converge (preflight's scan)") >= len(GATED)


def test_ungated_run_changes_nothing():
    res = playbook("site.yml", env={"SPARKFLEET_GATE": "off"})
    assert res.returncode == 0, res.stdout[-3000:]
    assert all(r["changed"] == 0 for r in recap(res.stdout).values()), res.stdout[-3000:]
    assert ran_tasks(res.stdout) == set(GATED), "with the gates off every role runs"
