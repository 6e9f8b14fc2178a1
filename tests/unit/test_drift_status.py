"""The drift check's verdict from ansible-playbook's exit code and the per-host records (sparkfleet_tools.drift)."""
from __future__ import annotations

import pytest

from sparkfleet_tools.drift import run_status


def rec(status="ok", drift=0):
    return {"status": status, "drift": [{"task": f"t{i}"} for i in range(drift)], "errors": []}


@pytest.mark.parametrize(("rc", "hosts", "timed_out", "want"), [
    (0, {"a": rec(), "b": rec()}, False, "ok"),
    (0, {"a": rec(drift=1), "b": rec()}, False, "drift"),
    # One node down, the run went on: partial (exit 3), whether or not the others drifted.
    (4, {"a": rec("unreachable"), "b": rec(drift=2)}, False, "partial"),
    (4, {"a": rec("unreachable"), "b": rec()}, False, "partial"),
    # Every node down, a task error, a deadline, or strict mode's stop (rc 2): the run failed.
    (4, {"a": rec("unreachable"), "b": rec("unreachable")}, False, "error"),
    (2, {"a": rec("error"), "b": rec()}, False, "error"),
    (2, {"a": rec("unreachable"), "b": rec()}, False, "error"),
    (4, {"a": rec("unreachable"), "b": rec()}, True, "error"),
    (0, {}, False, "ok"),
])
def test_run_status(rc, hosts, timed_out, want):
    assert run_status(rc, hosts, timed_out) == want
