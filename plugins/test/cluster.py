"""Tests (for select/selectattr) over lists."""
from __future__ import annotations


def intersects(a, b):
    """True when the two lists share an element."""
    return bool(set(a or []) & set(b or []))


def service_enabled(entry):
    """A sparkfleet_services entry that is on: no `enabled` key, or a true one (it may be a template)."""
    value = (entry or {}).get("enabled", True)
    return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "yes", "1")


class TestModule:
    def tests(self):
        return {"intersects": intersects, "service_enabled": service_enabled}
