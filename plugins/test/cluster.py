"""Tests (for select/selectattr) over lists."""
from __future__ import annotations


def intersects(a, b):
    """True when the two lists share an element."""
    return bool(set(a or []) & set(b or []))


class TestModule:
    def tests(self):
        return {"intersects": intersects}
