"""Slurm on the converged lab: the cluster the inventory describes, jobs as the cluster user on every compute
node, batch jobs, MPI across nodes (a broken node named, drained, repaired and resumed: test_validate.py)."""
from __future__ import annotations

import re
import subprocess

from labtools import INV, NODES, PROJECT, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
COMPUTE = [h for h in NODES if INV["hosts"][h]["group"] == "compute"]
USER = "spark"
MPI = ("from mpi4py import MPI; c = MPI.COMM_WORLD; "
       "print(c.Get_rank(), c.Get_size(), c.allreduce(c.Get_rank() + 1), MPI.Get_processor_name())")


def as_user(cmd: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return ssh(CONTROL, f"runuser -u {USER} -- {cmd}", timeout=timeout)


def compact(names: list[str]) -> str:
    """spark-02, spark-03 -> spark-[02-03] (Slurm's host list form, for consecutive numbered names)."""
    nums = sorted(int(re.search(r"(\d+)$", n).group(1)) for n in names)
    prefix = re.sub(r"\d+$", "", names[0])
    width = len(re.search(r"(\d+)$", names[0]).group(1))
    if len(names) == 1:
        return names[0]
    return f"{prefix}[{nums[0]:0{width}d}-{nums[-1]:0{width}d}]"


def test_sinfo_is_what_the_inventory_says():
    # Exact output, as stackhpc's openhpc verify does: one default partition of every compute node, all idle.
    out = ssh(CONTROL, "sinfo -h -o '%P|%a|%D|%T|%N'").stdout.strip()
    assert out == f"batch*|up|{len(COMPUTE)}|idle|{compact(COMPUTE)}", out
    conf = ssh(CONTROL, "scontrol show config").stdout
    assert re.search(r"SrunPortRange\s*=\s*60001-60200", conf) and re.search(r"MpiDefault\s*=\s*pmix", conf), conf
    # One version everywhere; slurmctld only on the control node, slurmd only on compute nodes.
    versions = {n: ssh(n, "dpkg-query -W -f='${Version}' slurm-client").stdout for n in NODES}
    assert len(set(versions.values())) == 1, versions
    assert ssh(CONTROL, "systemctl is-active slurmctld").stdout.strip() == "active"
    assert ssh(CONTROL, "systemctl is-active slurmd", check=False).stdout.strip() != "active"
    for n in COMPUTE:
        assert ssh(n, "systemctl is-active slurmd munge").stdout.split() == ["active", "active"]
        # Node lines come from slurmd -C: the node registered with what it measured, not drained for it.
        line = ssh(CONTROL, f"scontrol show node {n}").stdout
        assert f"CPUTot={ssh(n, 'nproc').stdout.strip()}" in line, line
    # The key: one for the cluster, root-readable only, never in the repo's tracked files.
    keys = {n: ssh(n, "stat -c '%a %U' /etc/munge/munge.key; sha256sum < /etc/munge/munge.key").stdout for n in NODES}
    assert len(set(keys.values())) == 1 and next(iter(keys.values())).startswith("400 munge"), keys
    tracked = subprocess.run(["git", "ls-files", "--", "*munge*"], cwd=PROJECT, text=True, capture_output=True).stdout
    assert ".secrets" not in tracked


def test_a_job_runs_as_the_cluster_user_on_every_node_with_the_fabric_environment():
    out = as_user(f"srun -N{len(COMPUTE)} --ntasks-per-node=1 sh -c "
                  "'echo $(hostname -s) $(id -un) $(grep -c ^NCCL_SOCKET_IFNAME= /etc/nccl.conf)'").stdout
    rows = sorted(ln.split() for ln in out.splitlines())
    assert rows == [[n, USER, "1"] for n in COMPUTE], out


def test_a_batch_job_waits_and_writes_its_output():
    job = as_user(f"sbatch --parsable --wait -N{len(COMPUTE)} -o /tmp/sparkfleet-test-%j.out "
                  "--wrap 'srun --ntasks-per-node=1 hostname -s'", timeout=120).stdout.strip()
    assert job.isdigit(), job
    # The batch script runs on the first node of the allocation; its output file is there.
    out = ssh(COMPUTE[0], f"cat /tmp/sparkfleet-test-{job}.out").stdout
    assert sorted(out.split()) == COMPUTE, out


def test_the_readme_mpi_example_runs_as_shipped():
    script = (PROJECT / "examples" / "slurm" / "mpi_hello.sbatch").read_text()
    ssh(CONTROL, f"cat > /tmp/mpi_hello.sbatch <<'EOF'\n{script}EOF\nchmod 644 /tmp/mpi_hello.sbatch")
    job = as_user("sh -c 'cd /tmp && sbatch --parsable --wait /tmp/mpi_hello.sbatch'", timeout=120).stdout.strip()
    out = ssh(COMPUTE[0], f"cat /tmp/mpi-hello-{job}.out").stdout
    rows = sorted(ln.split() for ln in out.splitlines() if " of " in ln)
    assert [r[4] for r in rows] == COMPUTE and all(r[2] == "2" and r[6] == "3" for r in rows), out


def test_mpi_all_reduce_across_nodes():
    n = len(COMPUTE)
    out = as_user(f"srun -N{n} --ntasks-per-node=1 python3 -c \"{MPI}\"").stdout
    rows = [ln.split() for ln in out.splitlines()]
    assert sorted(r[3] for r in rows) == COMPUTE, out
    assert all(r[1] == str(n) and r[2] == str(n * (n + 1) // 2) for r in rows), out
