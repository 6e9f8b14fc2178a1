#!/usr/bin/python
# Slurm's part of validation, run on the slurmctld node: node states, a job on every node, an MPI job across
# them, and draining/resuming nodes on the result of the per-node checks. Parsers: module_utils/slurm.py.
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_check
short_description: Check that Slurm runs jobs on every node, and drain the nodes that fail validation
description:
  - Reads C(sinfo) for the expected nodes (a node that is down, drained or not responding fails, with Slurm's reason),
    runs C(hostname) on every usable node in one job and an MPI all-reduce (mpi4py) across them, as I(user).
  - Drains each node named in I(drain) with the reason prefixed by I(reason_prefix); resumes nodes that this module
    drained earlier (their reason starts with I(reason_prefix)) and that are not in I(drain) any more. Drains set by
    people (any other reason) are never touched.
  - Jobs are bounded (C(--immediate) and a time limit); busy nodes make the job checks C(not_checked), never a pass.
  - In check mode nothing is drained or resumed (the jobs still run: they change nothing).
version_added: "0.1.0"
author: sparkfleet developers
options:
  nodes:
    description: Slurm names of the nodes that must be in the cluster and take jobs.
    type: list
    elements: str
    required: true
  user:
    description: User the test jobs run as (the cluster user).
    type: str
    required: true
  timeout:
    description: Seconds each Slurm command may take.
    type: int
    default: 60
  mpi:
    description: Run the MPI all-reduce job (needs python3-mpi4py on the nodes).
    type: bool
    default: true
  drain:
    description: Nodes to drain, each with the reason (the first failed check of that node).
    type: dict
    default: {}
  reason_prefix:
    description: Marks the drains this module owns.
    type: str
    default: "sparkfleet validate:"
  nccl_all_reduce:
    description: Path of nccl-tests' C(all_reduce_perf) (built with MPI=1) on the nodes; empty to skip. Runs through
      Slurm on every usable node with I(nccl_gpus_per_node) ranks each, one GPU per rank.
    type: str
    default: ""
  nccl_gpus_per_node:
    description: GPUs per node for the NCCL test (0 skips it).
    type: int
    default: 0
  nccl_min_busbw_gbps:
    description: Pass threshold for the best out-of-place bus bandwidth (GB/s); 0 reports only.
    type: float
    default: 0.0
  nccl_target:
    description: Name of the threshold's platform, used as the check's target.
    type: str
    default: nccl
"""

EXAMPLES = r"""
- name: Slurm checks
  sparkfleet.cluster.slurm_check:
    nodes: [spark-02, spark-03]
    user: spark
    drain: {spark-03: "munge_key: differs from the control node's"}
"""

RETURN = r"""
checks:
  description: Cluster-wide checks (C(slurm_srun), C(slurm_mpi), and C(nccl_all_reduce) where it ran), each C({check, target, status, detail}).
  type: list
  returned: always
  elements: dict
node_checks:
  description: Per node, its C(slurm_node) check (state and reason).
  type: dict
  returned: always
drained:
  description: Nodes drained by this run.
  type: list
  returned: always
  elements: str
resumed:
  description: Nodes resumed by this run.
  type: list
  returned: always
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils import slurm

run = slurm.run

MPI_PROGRAM = ("from mpi4py import MPI; c = MPI.COMM_WORLD; "
               "print('mpi', c.Get_rank(), c.Get_size(), c.allreduce(c.Get_rank() + 1), MPI.Get_processor_name(), flush=True)")


def check(name, target, status, detail):
    return {"check": name, "target": target, "status": status, "detail": detail}


def job(user, nodes, timeout, command, per_node=1, extra=(), minutes=2):
    # --immediate: a busy cluster answers "not checked" at once instead of queueing the check for hours.
    argv = ["runuser", "-u", user, "--", "srun", f"--immediate={max(5, timeout // 2)}", f"--time={minutes}",
            f"--nodes={len(nodes)}", f"--ntasks-per-node={per_node}", f"--nodelist={','.join(nodes)}",
            "--job-name=sparkfleet-validate", *extra]
    return run(argv + command, timeout)


def nccl_check(module, usable):
    """nccl-tests all-reduce through Slurm: every rank must join one communicator (ranks == nodes x GPUs), no wrong
    values, and the best bus bandwidth at least the platform's threshold."""
    p = module.params
    gpus, target = p["nccl_gpus_per_node"], p["nccl_target"]
    want = len(usable) * gpus
    rc, so, se = job(p["user"], usable, p["timeout"] * 5, [p["nccl_all_reduce"], "-b", "8", "-e", "1G", "-f", "2", "-g", "1"],
                     per_node=gpus, extra=[f"--gres=gpu:{gpus}"], minutes=10)
    r = slurm.parse_nccl_tests(so)
    if busy(se):
        return check("nccl_all_reduce", target, "not_checked", "nodes busy: " + se.strip().splitlines()[-1])
    if not r["rows"] and ("No such file" in se or "execve" in se or rc == 127):
        return check("nccl_all_reduce", target, "not_checked", f"nccl-tests not installed on the nodes ({p['nccl_all_reduce']})")
    if rc != 0 or not r["rows"]:
        # NCCL's own words first (a wrong NCCL_SOCKET_IFNAME: "Bootstrap : no socket interface found").
        why = "; ".join(r["errors"]) or (se or so).strip()[-300:]
        return check("nccl_all_reduce", target, "fail", f"srun rc {rc}: {why}")
    if r["ranks"] != want:
        return check("nccl_all_reduce", target, "fail",
                     f"{r['ranks']} rank(s) in one communicator, expected {want}: built without MPI=1, or ranks did not join")
    if r["wrong"]:
        return check("nccl_all_reduce", target, "fail", f"{r['wrong']} wrong value(s) in the results")
    detail = f"peak busbw {r['peak_busbw']:.2f} GB/s over {want} rank(s) on {', '.join(usable)}"
    floor = p["nccl_min_busbw_gbps"]
    if floor and r["peak_busbw"] < floor:
        return check("nccl_all_reduce", target, "fail", f"{detail}, below {floor} GB/s (MTU 1500 or TCP fallback measures ~3 GB/s)")
    return check("nccl_all_reduce", target, "pass", detail + (f" (threshold {floor} GB/s)" if floor else ""))


def busy(err):
    return "Unable to allocate resources" in err or "Requested nodes are busy" in err or ("Job allocation" in err and "revoked" in err)


def job_checks(module, usable):
    p = module.params
    out = []
    target = f"{len(usable)} node(s)"
    if not usable:
        return [check("slurm_srun", "cluster", "not_checked", "no node can take jobs"),
                check("slurm_mpi", "cluster", "not_checked", "no node can take jobs")]
    rc, so, se = job(p["user"], usable, p["timeout"], ["hostname", "-s"])
    seen = sorted({ln.strip() for ln in so.splitlines() if ln.strip()})
    if rc == 0 and len(seen) == len(usable):
        out.append(check("slurm_srun", target, "pass", f"a job ran as {p['user']} on {', '.join(seen)}"))
    elif busy(se):
        out.append(check("slurm_srun", target, "not_checked", "nodes busy: " + se.strip().splitlines()[-1]))
    else:
        out.append(check("slurm_srun", target, "fail", f"srun rc {rc}, answered from {seen or 'no node'}: {se.strip()[-300:]}"))
    if p["nccl_all_reduce"] and p["nccl_gpus_per_node"] > 0:
        out.append(nccl_check(module, usable))
    if not p["mpi"]:
        out.append(check("slurm_mpi", target, "not_checked", "MPI check off (mpi: false)"))
        return out
    rc, so, se = job(p["user"], usable, p["timeout"], ["python3", "-c", MPI_PROGRAM])
    rows = [ln.split() for ln in so.splitlines() if ln.startswith("mpi ")]
    n = len(usable)
    want = n * (n + 1) // 2
    if rc == 0 and len(rows) == n and all(r[2] == str(n) and r[3] == str(want) for r in rows):
        out.append(check("slurm_mpi", target, "pass", f"MPI all-reduce over {n} rank(s) on {', '.join(sorted(r[4] for r in rows))}"))
    elif busy(se):
        out.append(check("slurm_mpi", target, "not_checked", "nodes busy: " + se.strip().splitlines()[-1]))
    elif "No module named 'mpi4py'" in se:
        out.append(check("slurm_mpi", target, "not_checked", "python3-mpi4py not installed on the nodes"))
    else:
        out.append(check("slurm_mpi", target, "fail", f"srun rc {rc}, {len(rows)} of {n} rank(s) answered: {se.strip()[-300:]}"))
    return out


def main():
    module = AnsibleModule(
        argument_spec={
            "nodes": {"type": "list", "elements": "str", "required": True},
            "user": {"type": "str", "required": True},
            "timeout": {"type": "int", "default": 60},
            "mpi": {"type": "bool", "default": True},
            "drain": {"type": "dict", "default": {}},
            "reason_prefix": {"type": "str", "default": "sparkfleet validate:"},
            "nccl_all_reduce": {"type": "str", "default": ""},
            "nccl_gpus_per_node": {"type": "int", "default": 0},
            "nccl_min_busbw_gbps": {"type": "float", "default": 0.0},
            "nccl_target": {"type": "str", "default": "nccl"},
        },
        supports_check_mode=True,
    )
    p = module.params
    prefix = p["reason_prefix"]
    rc, so, se = run(["sinfo", "-N", "-h", "-o", "%N|%T|%E"], p["timeout"])
    if rc != 0:
        detail = f"sinfo rc {rc}: {se.strip()[-300:]}"
        module.exit_json(changed=False, drained=[], resumed=[],
                         checks=[check("slurm_srun", "cluster", "fail", detail), check("slurm_mpi", "cluster", "not_checked", detail)],
                         node_checks={n: [check("slurm_node", n, "fail", detail)] for n in p["nodes"]})
    states = slurm.parse_sinfo_nodes(so)

    drained, resumed = [], []
    for name in p["nodes"]:
        entry = states.get(name)
        if entry is None:
            continue
        ours = entry["reason"].startswith(prefix)
        argv = None
        # A node somebody drained (another reason) stays theirs even when it fails a check: draining it again would
        # replace their reason with ours, and a later passing run would then resume it.
        if name in p["drain"] and entry["state"] not in ("drained", "draining", "drain"):
            argv = ["scontrol", "update", f"nodename={name}", "state=drain", f"reason={prefix} {p['drain'][name]}"[:250]]
            drained.append(name)
        elif name not in p["drain"] and ours:
            argv = ["scontrol", "update", f"nodename={name}", "state=resume"]
            resumed.append(name)
        if argv and not module.check_mode:
            rc, _, err = run(argv, p["timeout"])
            if rc != 0:
                module.fail_json(msg=f"{' '.join(argv[:3])} failed: {err.strip()}")
    if (drained or resumed) and not module.check_mode:
        # A resumed node reads "not responding" (idle*) until slurmctld's ping reaches it: wait for that, bounded.
        deadline = time.monotonic() + p["timeout"]
        while True:
            states = slurm.parse_sinfo_nodes(run(["sinfo", "-N", "-h", "-o", "%N|%T|%E"], p["timeout"])[1]) or states
            waiting = [n for n in resumed if n in states and "*" in states[n]["flags"]]
            if not waiting or time.monotonic() > deadline:
                break
            time.sleep(2)

    node_checks, usable = {}, []
    for name in p["nodes"]:
        entry = states.get(name)
        if entry is None:
            c = check("slurm_node", name, "fail", "not in sinfo (slurm.conf does not list it)")
        elif slurm.usable(entry):
            c = check("slurm_node", name, "pass", entry["state"])
            usable.append(name)
        else:
            why = f" ({entry['reason']})" if entry["reason"] else ""
            c = check("slurm_node", name, "fail", f"{entry['state']}{entry['flags']}{why}")
        node_checks[name] = [c]
    module.exit_json(changed=bool(drained or resumed), checks=job_checks(module, usable), node_checks=node_checks,
                     drained=drained, resumed=resumed)


if __name__ == "__main__":
    main()
