"""Slurm: the controller on the control node, slurmd on the compute node, registered idle with what it measured; a
job runs there as the cluster user."""
from __future__ import annotations

from labtools import COMPUTE, CONTROL, ssh


def test_compute_node_idle_and_a_job_runs_as_the_cluster_user():
    assert ssh(CONTROL, "systemctl is-active slurmctld").stdout.strip() == "active"
    out = ssh(CONTROL, "sinfo -N -h -o '%N|%T'").stdout.split()
    assert out == [f"{n}|idle" for n in COMPUTE], out
    for n in COMPUTE:
        line = ssh(CONTROL, f"scontrol show node {n}").stdout
        assert f"CPUTot={ssh(n, 'nproc').stdout.strip()}" in line, line
    got = ssh(CONTROL, f"runuser -u spark -- srun -N{len(COMPUTE)} --time=1 sh -c 'echo $(hostname -s) $(id -un)'",
              timeout=120).stdout.split("\n")
    assert sorted(ln for ln in got if ln) == [f"{n} spark" for n in COMPUTE]
