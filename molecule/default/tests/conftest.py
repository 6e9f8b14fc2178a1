"""The role-gate tests run first, on the lab as converge left it (they are the scenario's idempotence proof: the gated
no-op and the ungated run): later tests change nodes by hand and repair them, and a gated no-op after them would first
have to converge whatever they left (a whole extra site.yml run)."""
from __future__ import annotations


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name != "test_gate.py")  # stable: the order within each group is kept
