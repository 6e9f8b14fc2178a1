"""node_exporter listens on the management address only and exports the textfile collector's folder."""
from __future__ import annotations

from labtools import INV, NODES, addr, ssh


def test_metrics_on_management_address_only():
    for n in NODES:
        out = ssh(n, f"curl -fsS http://{addr(n)}:9100/metrics").stdout
        assert "node_textfile_scrape_error" in out and "node_systemd_unit_state" in out
        fab = INV["hosts"][n]["sparkfleet_fabric_ips"][0]
        assert ssh(n, f"curl -sS --max-time 3 http://{fab}:9100/metrics", check=False).returncode != 0
