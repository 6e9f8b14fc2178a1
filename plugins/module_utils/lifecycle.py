"""Day-2 logic (plain Python; unit-tested in tests/unit/test_lifecycle.py): which validation results concern a node
joining the cluster (the add_node gate), and the state of a rolling change (which nodes are done, failed, untouched)."""
from __future__ import annotations

import re


def _mentions(text: str, names: list[str]) -> bool:
    """A name or address as a whole word (spark-04 must not match spark-040, 10.77.0.1 not 10.77.0.14)."""
    return any(re.search(r"(?<![\w.-])" + re.escape(n) + r"(?![\w-]|\.\d)", text or "") for n in names if n)


def gate_verdict(report_hosts: dict, node: str, names: list[str], ignore_checks: tuple = ()) -> dict:
    """The validation report's {host: [{check, target, status, detail}]} -> what the gate for `node` decides on.

    The node's own failed checks (hardware, services, fleet versions ...) and every other node's failed checks whose
    target or detail names the node by any of its names or addresses (pairwise: names, SSH trust, fabric MTU, the Ray
    cluster seen from the head) count against it; other failures were there before and are listed apart, as are the
    checks that could not run. A node missing from the report fails (it gave no result)."""
    names = [node] + [n for n in names if n and n != node]
    against, elsewhere, passed, not_checked, kinds = [], [], 0, [], set()
    if node not in report_hosts:
        against.append(f"{node}: no validation result (the node did not answer)")
    for host, checks in sorted(report_hosts.items()):
        for c in checks:
            if c.get("check") in ignore_checks:
                continue
            line = f"{host}: {c.get('check')} {c.get('target')}: {c.get('detail')}"
            ours = host == node or _mentions(str(c.get("target", "")), names) or _mentions(str(c.get("detail", "")), names)
            if c.get("status") == "fail":
                (against if ours else elsewhere).append(line)
                if ours:
                    kinds.add(str(c.get("check")))
            elif ours and c.get("status") == "pass":
                passed += 1
            elif ours:
                not_checked.append(line)
    if node not in report_hosts:
        kinds.add("reachable")
    return {"passed": not against, "failures": against, "failed_checks": sorted(kinds), "checks_passed": passed, "not_checked": not_checked,
            "other_failures": elsewhere}


def rolling_state(state: dict | None, change: str, hosts: list[str]) -> dict:
    """The rolling change's state file (None: a new change) -> {'change', 'done', 'failed', 'todo'} for these hosts.
    A state file of another change starts over: its done nodes have not had this change."""
    state = state if isinstance(state, dict) and state.get("change") == change else {}
    done = [h for h in hosts if (state.get("nodes", {}).get(h) or {}).get("status") == "done"]
    failed = {h: v.get("detail", "") for h, v in (state.get("nodes") or {}).items() if h in hosts and (v or {}).get("status") == "failed"}
    return {"change": change, "done": done, "failed": failed, "todo": [h for h in hosts if h not in done]}
