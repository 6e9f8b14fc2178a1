#!/usr/bin/python
"""Take one Slurm node out of service or put it back, for the day-2 playbooks (add, remove, rolling changes)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_node
short_description: Hold, drain or release one Slurm node; run a gate job across it and a peer
description:
  - Runs on the slurmctld node. C(held) puts the node in a maintenance reservation of its own (jobs that do not ask for
    it never land there, even after slurmd registers) and lifts this tool's earlier drain of it; C(drained) drains it with a reason and, with C(wait_s), waits
    until its jobs have finished; C(in_service) deletes the reservation and resumes the node when it was drained with
    C(reason_prefix) (drains by people are left alone).
  - With C(job_peer), a job runs across the node and the peer (inside the reservation when the node is held).
options:
  node: {description: The node (its inventory name, which Slurm uses)., type: str, required: true}
  state: {description: What the node must be., type: str, choices: [held, drained, in_service], required: true}
  reason: {description: Drain reason (C(reason_prefix) is put in front)., type: str, default: ''}
  reason_prefix: {description: Marks drains this tool made (and may undo)., type: str, default: 'sparkfleet lifecycle:'}
  reservation: {description: Name of the node's reservation (default sparkfleet_<node>)., type: str, default: ''}
  wait_s: {description: With C(drained), seconds to wait for the node's jobs to finish (0 = do not wait)., type: int, default: 0}
  force: {description: With C(wait_s), go on (rather than fail) when jobs are still running at the deadline., type: bool, default: false}
  job_peer: {description: Run a 2-node job across the node and this peer after the state change., type: str, default: ''}
  timeout: {description: Seconds for each Slurm command., type: int, default: 60}
  missing_ok: {description: A node Slurm does not know is no error (nothing to do)., type: bool, default: false}
"""

EXAMPLES = r"""
- name: Drain a node before a rolling change (waits up to 10 minutes for its jobs)
  sparkfleet.cluster.slurm_node:
    node: spark-03
    state: drained
    reason: sparkfleet rolling change
    wait_s: 600
"""

RETURN = r"""
slurm_state: {description: The node's state after the change (sinfo's words)., type: str, returned: always}
reason: {description: Its drain reason, if any., type: str, returned: always}
jobs: {description: Jobs still on the node (drained with wait_s)., type: list, returned: always}
job: {description: "The gate job: {status, detail}.", type: dict, returned: when job_peer is set}
"""

import shlex
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils import slurm

run = slurm.run


def node_state(module, node):
    rc, so, se = run(["sinfo", "-N", "-h", "-n", node, "-o", "%N|%T|%E"], module.params["timeout"])
    if rc != 0:
        module.fail_json(msg=f"sinfo for {node} failed (rc {rc}): {se.strip()[-300:]}")
    return slurm.parse_sinfo_nodes(so).get(node)


def must(module, argv):
    rc, so, se = run(argv, module.params["timeout"])
    if rc != 0:
        module.fail_json(msg=f"{shlex.join(argv)} failed (rc {rc}): {(se or so).strip()[-300:]}")
    return so


def reservation_exists(module, name):
    rc, so, _ = run(["scontrol", "show", "reservation", name, "-o"], module.params["timeout"])
    return rc == 0 and f"ReservationName={name} " in so + " "


def gate_job(module, node, peer, reservation):
    """hostname on both nodes, one task each: the node must answer, from inside its reservation when held (FLEX lets
    the job use the peer outside it)."""
    argv = ["srun", "--immediate=30", "--time=2", "--nodes=2", "--ntasks-per-node=1", f"--nodelist={node},{peer}",
            "--job-name=sparkfleet-gate"] + ([f"--reservation={reservation}"] if reservation else []) + ["hostname", "-s"]
    rc, so, se = run(argv, module.params["timeout"])
    answered = sorted(set(so.split()))
    if rc == 0 and len(answered) == 2:
        return {"status": "pass", "detail": f"a job ran across {node} and {peer} (answers: {', '.join(answered)})"}
    return {"status": "fail", "detail": f"srun across {node} and {peer}: rc {rc}, answers {answered}: {se.strip()[-300:]}"}


def main():
    module = AnsibleModule(
        argument_spec={
            "node": {"type": "str", "required": True},
            "state": {"type": "str", "required": True, "choices": ["held", "drained", "in_service"]},
            "reason": {"type": "str", "default": ""},
            "reason_prefix": {"type": "str", "default": "sparkfleet lifecycle:"},
            "reservation": {"type": "str", "default": ""},
            "wait_s": {"type": "int", "default": 0},
            "force": {"type": "bool", "default": False},
            "job_peer": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 60},
            "missing_ok": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    node, prefix = p["node"], p["reason_prefix"]
    resv = p["reservation"] or f"sparkfleet_{node}"
    entry = node_state(module, node)
    if entry is None and p["missing_ok"]:
        module.exit_json(changed=False, slurm_state="absent", reason="", jobs=[])
    if entry is None:
        module.fail_json(msg=f"Slurm does not know node {node} (sinfo lists no such node)")
    changed, jobs, result = False, [], {}
    drained = entry["state"] in ("drained", "draining", "drain")
    ours = entry["reason"].startswith(prefix)

    if p["state"] == "held":
        if not reservation_exists(module, resv):
            changed = True
            if not module.check_mode:
                must(module, ["scontrol", "create", "reservation", f"ReservationName={resv}", f"Nodes={node}", "StartTime=now",
                              "Duration=infinite", "Users=root", "Flags=MAINT,IGNORE_JOBS,FLEX"])
        # Drained by an earlier gate: the reservation keeps it out of service now, and its gate job must run there.
        if drained and ours:
            changed = True
            if not module.check_mode:
                must(module, ["scontrol", "update", f"nodename={node}", "state=resume"])
    elif p["state"] == "drained":
        reason = f"{prefix} {p['reason']}".strip()[:250]
        if not drained or (ours and entry["reason"] != reason):
            changed = True
            if not module.check_mode:
                must(module, ["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"])
        deadline = time.monotonic() + p["wait_s"]
        while not module.check_mode:
            jobs = must(module, ["squeue", "-h", "-w", node, "-o", "%i %u %j"]).strip().splitlines()
            if not jobs or time.monotonic() >= deadline:
                break
            time.sleep(2)
        if jobs and p["wait_s"] and not p["force"]:
            module.fail_json(msg=f"{node} is drained but {len(jobs)} job(s) still run there after {p['wait_s']} s: "
                                 f"{'; '.join(jobs[:5])}. Wait longer (-e lifecycle_drain_wait_s=...) or give -e force=true",
                             jobs=jobs, changed=changed)
    else:
        if reservation_exists(module, resv):
            changed = True
            if not module.check_mode:
                must(module, ["scontrol", "delete", f"ReservationName={resv}"])
        if drained and ours:
            changed = True
            if not module.check_mode:
                must(module, ["scontrol", "update", f"nodename={node}", "state=resume"])

    if p["job_peer"] and not module.check_mode:
        # After the held branch the reservation exists (made above or found there): no second lookup.
        held = p["state"] == "held"
        # Right after slurmd (re)starts the node reads "not responding" until slurmctld's ping: bounded wait.
        deadline = time.monotonic() + p["timeout"]
        while True:
            result = gate_job(module, node, p["job_peer"], resv if held else "")
            if result["status"] == "pass" or time.monotonic() >= deadline:
                break
            time.sleep(3)
    entry = node_state(module, node) or entry
    out = {"changed": changed, "slurm_state": entry["state"] + entry["flags"], "reason": entry["reason"], "jobs": jobs}
    if p["job_peer"]:
        out["job"] = result or {"status": "not_checked", "detail": "check mode"}
    module.exit_json(**out)


if __name__ == "__main__":
    main()
