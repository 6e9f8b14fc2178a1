"""The role gate's decision across the play: a role runs on every node of the play when any node needs it (the
files it writes often hold every node's data: names, keys, scrape targets)."""
from __future__ import annotations


def gate_open(play_hosts, hostvars, var):
    """ansible_play_hosts | gate_open(hostvars, '_chrony_gate') -> True when a host's gate answered run."""
    for h in play_hosts:
        res = hostvars[h].get(var) if h in hostvars else None
        if isinstance(res, dict) and res.get("run"):
            return True
    return False


class FilterModule:
    def filters(self):
        return {"gate_open": gate_open}
