"""Write the Grafana dashboards (roles/grafana/files/dashboards/*.json) from the short specs below.

    python scripts/dashboards.py          # rewrite the files
    python scripts/dashboards.py --check  # exit 1 when a file differs (the unit tests run this)

Every query is plain PromQL over metrics we export or scrape (tests/unit/test_monitoring.py parses each with promtool
and checks every metric name against the exporters' lists), so no Grafana template variables inside queries.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "roles" / "grafana" / "files" / "dashboards"
DS = {"type": "prometheus", "uid": "sparkfleet-prometheus"}
FABRIC = 'device!~"lo|docker.*|veth.*|br-.*"'

# (title, type, unit, [(expr, legend)])
DASHBOARDS = {
    "sparkfleet-fleet": ("sparkfleet - fleet overview", [
        ("Nodes up", "stat", "none", [('sum(up{job="node"})', "up"), ('count(up{job="node"})', "nodes")]),
        ("Failed validation checks", "stat", "none", [("sum(sparkfleet_validate_failed)", "failed")]),
        ("Tasks drifted (last drift check)", "stat", "none", [("sum(sparkfleet_drift_tasks)", "tasks")]),
        ("Hours since the last drift check", "stat", "h",
         [("(time() - max(sparkfleet_drift_last_run_timestamp_seconds)) / 3600", "hours")]),
        ("Validation: nodes x checks (failed targets)", "table", "none",
         [('sum by (host, check) (sparkfleet_validate_check{status="fail"})', "{{host}} {{check}}")]),
        ("Drift per node", "bargauge", "none", [("sparkfleet_drift_tasks", "{{host}}")]),
        ("Exporters up", "state-timeline", "none", [("up", "{{host}} {{job}}")]),
        ("Firing alerts", "table", "none", [('ALERTS{alertstate="firing"}', "{{alertname}} {{host}}")]),
    ]),
    "sparkfleet-gpu": ("sparkfleet - GPUs", [
        ("GPU temperature", "timeseries", "celsius", [("DCGM_FI_DEV_GPU_TEMP", "{{host}} GPU {{gpu}}")]),
        ("GPU power", "timeseries", "watt", [("DCGM_FI_DEV_POWER_USAGE", "{{host}} GPU {{gpu}}")]),
        ("GPU utilization", "timeseries", "percent", [("DCGM_FI_DEV_GPU_UTIL", "{{host}} GPU {{gpu}}")]),
        # GB10 has unified memory: DCGM reports framebuffer use as not supported there, so these stay empty on Sparks.
        ("GPU memory used (not on GB10)", "timeseries", "decmbytes", [("DCGM_FI_DEV_FB_USED", "{{host}} GPU {{gpu}}")]),
        ("XID errors (last value)", "timeseries", "none", [("DCGM_FI_DEV_XID_ERRORS", "{{host}} GPU {{gpu}}")]),
        ("Board sensors (hwmon)", "timeseries", "celsius", [("node_hwmon_temp_celsius", "{{host}} {{chip}} {{sensor}}")]),
    ]),
    "sparkfleet-fabric": ("sparkfleet - fabric", [
        ("Receive throughput per port", "timeseries", "bps",
         [(f"rate(node_network_receive_bytes_total{{{FABRIC}}}[5m]) * 8", "{{host}} {{device}}")]),
        ("Transmit throughput per port", "timeseries", "bps",
         [(f"rate(node_network_transmit_bytes_total{{{FABRIC}}}[5m]) * 8", "{{host}} {{device}}")]),
        ("RDMA throughput per port (RoCE / InfiniBand)", "timeseries", "bps",
         [("rate(node_infiniband_port_data_received_bytes_total[5m]) * 8", "{{host}} {{device}} rx"),
          ("rate(node_infiniband_port_data_transmitted_bytes_total[5m]) * 8", "{{host}} {{device}} tx")]),
        ("Drops per port", "timeseries", "pps",
         [(f"rate(node_network_receive_drop_total{{{FABRIC}}}[5m])", "{{host}} {{device}} rx"),
          (f"rate(node_network_transmit_drop_total{{{FABRIC}}}[5m])", "{{host}} {{device}} tx")]),
        ("Errors per port", "timeseries", "pps",
         [(f"rate(node_network_receive_errs_total{{{FABRIC}}}[5m])", "{{host}} {{device}} rx"),
          ("rate(node_infiniband_port_errors_received_total[5m])", "{{host}} {{device}} rdma rx")]),
        ("Port state (1 = up)", "state-timeline", "none", [(f"node_network_up{{{FABRIC}}}", "{{host}} {{device}}")]),
    ]),
    "sparkfleet-inference": ("sparkfleet - inference", [
        ("Success rate", "timeseries", "percentunit",
         [('sum(rate(http_requests_total{job="vllm", status=~"2.."}[5m])) / sum(rate(http_requests_total{job="vllm"}[5m]))',
           "success")]),
        ("Latency P50 / P95", "timeseries", "s",
         [("histogram_quantile(0.5, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))", "P50"),
          ("histogram_quantile(0.95, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))", "P95")]),
        ("Requests running / waiting", "timeseries", "none",
         [("sum(vllm:num_requests_running)", "running"), ("sum(vllm:num_requests_waiting)", "waiting")]),
        ("Generated tokens per second", "timeseries", "none", [("sum(rate(vllm:generation_tokens_total[5m]))", "tokens/s")]),
    ]),
}


def dashboard(uid: str, title: str, panels: list) -> dict:
    out = []
    for i, (ptitle, kind, unit, queries) in enumerate(panels):
        out.append({
            "id": i + 1, "title": ptitle, "type": kind, "datasource": DS,
            "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"refId": chr(65 + j), "datasource": DS, "expr": e, "legendFormat": leg}
                        for j, (e, leg) in enumerate(queries)],
        })
    return {"uid": uid, "title": title, "tags": ["sparkfleet"], "schemaVersion": 39, "version": 1,
            "editable": False, "time": {"from": "now-6h", "to": "now"}, "refresh": "30s", "panels": out}


def render() -> dict[str, str]:
    return {f"{uid}.json": json.dumps(dashboard(uid, t, p), indent=2) + "\n" for uid, (t, p) in DASHBOARDS.items()}


def main() -> int:
    files = render()
    if "--check" in sys.argv:
        stale = [n for n, text in files.items() if not (OUT / n).is_file() or (OUT / n).read_text() != text]
        extra = sorted(p.name for p in OUT.glob("*.json") if p.name not in files)
        if stale or extra:
            print("dashboards out of date: %s (run python scripts/dashboards.py)" % ", ".join(stale + extra))
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        (OUT / n).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
