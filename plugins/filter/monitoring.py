"""Filters for the monitoring layer and the report."""
from __future__ import annotations

import base64
import json


def drift_summary(content_b64):
    """A drift report (base64 JSON, as slurp gives it) -> {generated_at, status, hosts: {host: {status, drift: [task
    names]}}}: what the validation page shows, small enough to pass on a command line. None when it does not parse."""
    try:
        data = json.loads(base64.b64decode(content_b64 or b""))
    except (ValueError, TypeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("hosts"), dict):
        return None
    hosts = {}
    for h, rec in data["hosts"].items():
        tasks = [str(t.get("task", "?")) if isinstance(t, dict) else str(t) for t in (rec or {}).get("drift", [])]
        hosts[h] = {"status": (rec or {}).get("status", "?"), "drift": tasks[:50]}
    return {"generated_at": data.get("generated_at"), "status": data.get("status"), "hosts": hosts}


class FilterModule:
    def filters(self):
        return {"drift_summary": drift_summary}
