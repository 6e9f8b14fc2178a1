"""Day-2 filters (logic in module_utils/lifecycle.py)."""
from __future__ import annotations

from ansible_collections.sparkfleet.cluster.plugins.module_utils import lifecycle


def gate_verdict(report, node, names=None, ignore_checks=None):
    """A validation report (its JSON as a mapping) -> the add_node gate's verdict for node."""
    return lifecycle.gate_verdict((report or {}).get("hosts", {}), node, list(names or []), tuple(ignore_checks or ()))


def rolling_state(state, change, hosts):
    return lifecycle.rolling_state(state, change, list(hosts))


class FilterModule:
    def filters(self):
        return {"gate_verdict": gate_verdict, "rolling_state": rolling_state}
