from __future__ import annotations

from ansible_collections.sparkfleet.cluster.plugins.module_utils import lifecycle

NAMES = ["10.77.0.14", "spark-04-fab", "spark-04-fab1", "10.78.0.14", "10.88.0.14"]


def c(check, target, status, detail=""):
    return {"check": check, "target": target, "status": status, "detail": detail}


def test_gate_counts_the_nodes_own_and_pairwise_failures_only():
    hosts = {
        "spark-01": [c("fabric_mtu", "spark-04-fab", "fail", "9000-byte ping to 10.78.0.14 failed"),
                     c("fabric_mtu", "spark-02-fab", "pass"),
                     c("ray_cluster", "cluster", "fail", "spark-04 (10.78.0.14) not alive"),
                     c("time_sync", "chrony", "fail", "offset 0.5 s")],
        "spark-02": [c("ssh_trust", "spark-04", "pass"), c("fabric_mtu", "spark-04-fab1", "pass")],
        "spark-04": [c("fleet_ray", "ray", "fail", "spark-04 has ray 2.59.0; the majority has 2.60.0"),
                     c("gpu_container", "docker", "not_checked", "no GPU")],
    }
    v = lifecycle.gate_verdict(hosts, "spark-04", NAMES)
    assert not v["passed"]
    assert v["failures"] == [
        "spark-01: fabric_mtu spark-04-fab: 9000-byte ping to 10.78.0.14 failed",
        "spark-01: ray_cluster cluster: spark-04 (10.78.0.14) not alive",
        "spark-04: fleet_ray ray: spark-04 has ray 2.59.0; the majority has 2.60.0"]
    assert v["failed_checks"] == ["fabric_mtu", "fleet_ray", "ray_cluster"]
    # A failure that was there before and does not name the node does not hold it back.
    assert v["other_failures"] == ["spark-01: time_sync chrony: offset 0.5 s"]
    assert v["checks_passed"] == 2 and v["not_checked"] == ["spark-04: gpu_container docker: no GPU"]


def test_gate_names_match_whole_words_only():
    hosts = {"spark-04": [c("x", "y", "pass")],
             "spark-01": [c("fabric_mtu", "spark-040-fab", "fail", "10.78.0.140 unreachable"),
                          c("names", "10.77.0.1", "fail", "10.77.0.1 missing")]}
    v = lifecycle.gate_verdict(hosts, "spark-04", NAMES)
    assert v["passed"] and len(v["other_failures"]) == 2


def test_gate_fails_a_node_without_results_and_honours_ignored_checks():
    assert lifecycle.gate_verdict({"spark-01": []}, "spark-04", NAMES)["failures"] == [
        "spark-04: no validation result (the node did not answer)"]
    hosts = {"spark-04": [c("slurm_node", "spark-04", "fail", "reserved")]}
    assert lifecycle.gate_verdict(hosts, "spark-04", NAMES, ("slurm_node",))["passed"]


def test_rolling_state_continues_the_same_change_only():
    state = {"change": "drv-2", "nodes": {"spark-01": {"status": "done"}, "spark-02": {"status": "failed", "detail": "chrony masked"}}}
    s = lifecycle.rolling_state(state, "drv-2", ["spark-01", "spark-02", "spark-03"])
    assert s == {"change": "drv-2", "done": ["spark-01"], "failed": {"spark-02": "chrony masked"}, "todo": ["spark-02", "spark-03"]}
    # Another change's state: everything is still to do.
    assert lifecycle.rolling_state(state, "drv-3", ["spark-01"])["todo"] == ["spark-01"]
    assert lifecycle.rolling_state(None, "x", ["a"]) == {"change": "x", "done": [], "failed": {}, "todo": ["a"]}
