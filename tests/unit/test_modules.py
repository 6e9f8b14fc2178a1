"""Each module run through Ansible, with a replay script on PATH standing in for the tool.

The replay prints a recorded real output (tests/fixtures, ../shared/fixtures) and exits with the
recorded exit code, so the module's whole path (argument spec, tool lookup, parsing, result) runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, fixture_path, read_fixture

ANSIBLE = Path(sys.executable).parent / "ansible"


def fixture(rel):
    return read_fixture(fixture_path(rel))


def make_tool(bindir: Path, name: str, cases: dict[str, tuple[str, int]]):
    """A shell script answering `name ARGS` with (output, exit code) from cases[ARGS] ('*' = any)."""
    bindir.mkdir(exist_ok=True)
    lines = ["#!/bin/sh", 'case "$*" in']
    for i, (args, (out, rc)) in enumerate(cases.items()):
        f = bindir / f"{name}.{i}.out"
        f.write_text(out)
        pattern = "*" if args == "*" else '"' + args + '"'
        lines.append(f'  {pattern}) cat "{f}"; exit {rc};;')
    lines += ['  *) echo "replay: unexpected arguments: $*" >&2; exit 99;;', "esac"]
    tool = bindir / name
    tool.write_text("\n".join(lines) + "\n")
    tool.chmod(0o755)


def run_module(module: str, args: dict, bindir: Path | None) -> tuple[bool, dict]:
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_DEPRECATION_WARNINGS="0",
               PATH=(f"{bindir}:" if bindir else "") + "/usr/bin:/bin")
    res = subprocess.run([str(ANSIBLE), "localhost", "-c", "local", "-i", "localhost,", "-o",
                          "-e", f"ansible_python_interpreter={sys.executable}",
                          "-m", f"sparkfleet.cluster.{module}", *(["-a", json.dumps(args)] if args else [])],
                         cwd=ROOT, env=env, text=True, capture_output=True, timeout=120)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("localhost |")), "")
    assert "=>" in line, res.stdout + res.stderr
    status, _, payload = line.partition(" => ")
    return "SUCCESS" in status, json.loads(payload)


def test_ibstat_check_reports_down_ports(tmp_path):
    make_tool(tmp_path, "ibstat", {"": (fixture("ibstat/ibstat__gpud-h100-ethernet-some-down.txt"), 0)})
    ok, r = run_module("ibstat_check", {"link_layer": "Ethernet"}, tmp_path)
    assert not ok and r["changed"] is False
    assert {(p["ca"], p["port"]) for p in r["problems"]} == {("mlx5_5", 1), ("mlx5_11", 1)}
    assert "mlx5_5 port 1: state Down, expected Active" in r["msg"]
    assert len(r["cas"]) == 12
    ok, r = run_module("ibstat_check", {"devices": ["mlx5_0", "mlx5_3"], "min_rate_gbps": 400}, tmp_path)
    assert ok and r["problems"] == []


def test_ibstat_check_tool_missing_is_not_no_ports(tmp_path):
    ok, r = run_module("ibstat_check", {}, tmp_path)  # empty bin dir: no ibstat
    assert not ok and r["tool_missing"] is True and "ibstat not installed" in r["msg"]
    make_tool(tmp_path, "ibstat", {"": ("", 0)})
    ok, r = run_module("ibstat_check", {}, tmp_path)
    assert not ok and r["tool_missing"] is False and "ibstat listed no CA" in r["msg"]


def test_ibstat_check_nonzero_exit_is_a_problem(tmp_path):
    make_tool(tmp_path, "ibstat", {"": ("ibpanic: [2214] main: stat of IB device 'mlx5_0' failed: No such file\n", 255)})
    ok, r = run_module("ibstat_check", {"fail_on_problems": False}, tmp_path)
    assert ok and r["cas"] == []
    assert any("exited 255" in p["reason"] for p in r["problems"])


def test_nvlink_check_a100(tmp_path):
    make_tool(tmp_path, "nvidia-smi", {"nvlink --status": (fixture("nvidia-smi/nvidia-smi-nvlink-status__gpud-a100-sxm4.txt"), 0)})
    ok, r = run_module("nvlink_check", {"min_active_links": 12, "min_speed_gbps": 25}, tmp_path)
    assert ok and len(r["gpus"]) == 8 and r["error"] is None
    assert all(len(g["links"]) == 12 for g in r["gpus"])
    ok, r = run_module("nvlink_check", {"min_active_links": 18}, tmp_path)
    assert not ok and "GPU 0 link -: 12 active links, expected >= 18" in r["msg"]


def test_nvlink_check_empty_output_h200(tmp_path):
    make_tool(tmp_path, "nvidia-smi", {"nvlink --status": (fixture("nvidia-smi/h200-device/nvlink-status.txt"), 0)})
    ok, r = run_module("nvlink_check", {}, tmp_path)
    assert ok and r["gpus"] == [] and r["problems"] == []
    ok, r = run_module("nvlink_check", {"min_active_links": 1}, tmp_path)
    assert not ok and "no NVLink information" in r["msg"]


def test_nvlink_check_driver_mismatch(tmp_path):
    make_tool(tmp_path, "nvidia-smi", {"*": (fixture("nvidia-smi/nvidia-smi__tinygrad-ogkm-47-version-mismatch.txt"), 18)})
    ok, r = run_module("nvlink_check", {"fail_on_problems": False}, tmp_path)
    assert ok and r["error"]["kind"] == "driver_library_mismatch"


QUERY = "--query-gpu=index,name,uuid,pci.bus_id,memory.total,driver_version,fabric.state,fabric.status --format=csv,noheader,nounits"


def test_gpu_facts_real_h200(tmp_path):
    make_tool(tmp_path, "nvidia-smi", {QUERY: (fixture("nvidia-smi/h200-device/query-gpu-csv-noheader.txt"), 0),
                                       "--version": (fixture("nvidia-smi/h200-device/version.txt"), 0)})
    ok, r = run_module("gpu_facts", {}, tmp_path)
    nv = r["ansible_facts"]["nvidia"]
    assert ok and r["changed"] is False
    assert nv == {"driver_version": "580.159.04", "cuda_version": "13.0", "error": None,
                  "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-48bd4383-4bb8-eed2-190d-057a4b212c62",
                            "pci_bus_id": "00000000:00:06.0", "memory_total_mib": 143771,
                            "fabric_state": None, "fabric_status": None}]}


def test_gpu_facts_gb10_not_supported_and_old_driver_fallback(tmp_path):
    gb10 = "0, NVIDIA GB10, GPU-aaaa, 0000000F:01:00.0, [N/A], 580.126.09\n"
    old = QUERY.replace(",fabric.state,fabric.status", "")
    make_tool(tmp_path, "nvidia-smi", {
        QUERY: ('Field "fabric.state" is not a valid field to query.\n\n', 2),
        QUERY.replace(",fabric.status", ""): ('Field "fabric.state" is not a valid field to query.\n', 2),
        QUERY.replace("fabric.state,", ""): ('Field "fabric.status" is not a valid field to query.\n', 2),
        old: (gb10, 0),
        "--version": ("", 4),
        "": (fixture("nvidia-smi/nvidia-smi__arctictraining-345-gb10-memory-not-supported.txt"), 0)})
    ok, r = run_module("gpu_facts", {}, tmp_path)
    nv = r["ansible_facts"]["nvidia"]
    assert ok and nv["error"] is None and nv["cuda_version"] == "13.0"
    assert nv["gpus"][0]["memory_total_mib"] is None and nv["gpus"][0]["name"] == "NVIDIA GB10"


@pytest.mark.parametrize("out,rc,kind", [
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n", 18, "driver_library_mismatch"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 9, "no_driver"),
    ("No devices were found\n", 6, "no_devices"),
    ("Segmentation fault\n", 139, "other"),
])
def test_gpu_facts_errors_do_not_fail(tmp_path, out, rc, kind):
    make_tool(tmp_path, "nvidia-smi", {"*": (out, rc)})
    ok, r = run_module("gpu_facts", {}, tmp_path)
    assert ok and r["ansible_facts"]["nvidia"]["error"]["kind"] == kind


def test_gpu_facts_without_nvidia_smi(tmp_path):
    ok, r = run_module("gpu_facts", {}, tmp_path)
    assert ok and r["ansible_facts"]["nvidia"]["error"]["kind"] == "no_driver"
    ok, r = run_module("gpu_facts", {"nvidia_smi": "nvidia-smi; rm -rf /"}, tmp_path)
    assert not ok and "unusable value" in r["msg"]


def test_rdma_facts_from_fake_sysfs(tmp_path):
    from sysfs_fixture import spark_sysfs
    root = spark_sysfs(tmp_path)
    ok, r = run_module("rdma_facts", {"sysfs_root": str(root)}, None)
    rd = r["ansible_facts"]["rdma"]
    assert ok and rd["present"] is True
    assert [d["name"] for d in rd["devices"]] == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    ok, r = run_module("rdma_facts", {"sysfs_root": str(tmp_path / "empty")}, None)
    assert ok and r["ansible_facts"]["rdma"] == {"present": False, "devices": []}


def test_ansible_doc_shows_every_module():
    doc = Path(sys.executable).parent / "ansible-doc"
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    for m in ("ibstat_check", "nvlink_check", "gpu_facts", "rdma_facts", "nft_ruleset", "slurm_node"):
        res = subprocess.run([str(doc), f"sparkfleet.cluster.{m}"], cwd=ROOT, env=env, text=True, capture_output=True)
        assert res.returncode == 0 and "OPTIONS" in res.stdout and "RETURN VALUES" in res.stdout, (m, res.stderr)


def slurm_tools(bindir: Path, sinfo: str, srun: str):
    """sinfo answers from a state file that scontrol updates (so a drain shows on the next read); srun runs the
    given shell body; runuser drops to the command after '--'; every scontrol call is logged."""
    bindir.mkdir(exist_ok=True)
    (bindir / "state").write_text(sinfo)
    scripts = {
        "sinfo": f'cat "{bindir}/state"',
        "scontrol": f'echo "$*" >> "{bindir}/scontrol.log"\n'
                    'node=$(echo "$2" | cut -d= -f2); st=$(echo "$3" | cut -d= -f2)\n'
                    f'if [ "$st" = resume ]; then sed -i "s#^$node|[^|]*|.*#$node|idle|none#" "{bindir}/state";\n'
                    f'else sed -i "s#^$node|[^|]*|.*#$node|drained|$(echo "$4" | cut -d= -f2-)#" "{bindir}/state"; fi',
        "runuser": 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"',
        "srun": srun,
    }
    for name, body in scripts.items():
        (bindir / name).write_text("#!/bin/sh\n" + body + "\n")
        (bindir / name).chmod(0o755)


def test_slurm_check_drains_resumes_and_leaves_peoples_drains(tmp_path):
    sinfo = ("n1|idle|none\nn2|idle|none\nn3|drained|sparkfleet validate: service docker: inactive\n"
             "n4|drained|disk swap\n")
    srun = ('case "$*" in *hostname*) echo n1;; *mpi4py*) echo "mpi 0 1 1 n1";; esac')
    slurm_tools(tmp_path, sinfo, srun)
    ok, r = run_module("slurm_check", {"nodes": ["n1", "n2", "n3", "n4"], "user": "spark", "timeout": 10,
                                       "drain": {"n2": "munge_key /etc/munge/munge.key: differs",
                                                 # fails a check too, but somebody drained it: their reason stays
                                                 "n4": "service docker: inactive"}}, tmp_path)
    assert not r.get("failed") and r["changed"] and r["drained"] == ["n2"] and r["resumed"] == ["n3"], r
    log = (tmp_path / "scontrol.log").read_text()
    assert "nodename=n2 state=drain reason=sparkfleet validate: munge_key /etc/munge/munge.key: differs" in log
    assert "n4" not in log  # somebody's drain: theirs, failing or not
    nodes = {k: v[0] for k, v in r["node_checks"].items()}
    assert nodes["n1"]["status"] == "pass" and nodes["n3"]["status"] == "pass"
    assert nodes["n2"]["status"] == "fail" and "sparkfleet validate: munge_key" in nodes["n2"]["detail"]
    assert nodes["n4"]["detail"] == "drained (disk swap)"
    # The jobs ran on the usable nodes (n1, n3); srun answered from n1 only: a failure, never a pass.
    jobs = {c["check"]: c for c in r["checks"]}
    assert jobs["slurm_srun"]["status"] == "fail" and "['n1']" in jobs["slurm_srun"]["detail"]
    assert jobs["slurm_mpi"]["status"] == "fail"


def test_slurm_check_busy_cluster_is_not_checked_and_missing_node_fails(tmp_path):
    srun = 'echo "srun: error: Unable to allocate resources: Requested nodes are busy" >&2; exit 1'
    slurm_tools(tmp_path, "n1|allocated|none\nn2|idle*|none\n", srun)
    ok, r = run_module("slurm_check", {"nodes": ["n1", "n2", "n9"], "user": "spark", "timeout": 10}, tmp_path)
    assert ok and not r["changed"]
    assert r["node_checks"]["n2"][0] == {"check": "slurm_node", "target": "n2", "status": "fail", "detail": "idle*"}
    assert r["node_checks"]["n9"][0]["status"] == "fail" and "not in sinfo" in r["node_checks"]["n9"][0]["detail"]
    assert all(c["status"] == "not_checked" and "busy" in c["detail"] for c in r["checks"]), r["checks"]


@pytest.mark.parametrize("gpus,floor,status,words", [
    (1, 2.0, "pass", "peak busbw 2.30 GB/s over 2 rank(s)"),
    (1, 21.875, "fail", "below 21.875 GB/s"),
    (2, 0.0, "fail", "2 rank(s) in one communicator, expected 4"),
])
def test_slurm_check_nccl_all_reduce_through_slurm(tmp_path, gpus, floor, status, words):
    out = tmp_path / "nccl.out"
    out.write_text(fixture("nccl-tests/all_reduce_perf_mpi_2ranks_tagged.txt"))
    srun = (f'case "$*" in *all_reduce_perf*) cat "{out}";; *hostname*) echo n1; echo n2;; '
            '*mpi4py*) echo "mpi 0 2 3 n1"; echo "mpi 1 2 3 n2";; esac')
    slurm_tools(tmp_path, "n1|idle|none\nn2|idle|none\n", srun)
    ok, r = run_module("slurm_check", {"nodes": ["n1", "n2"], "user": "spark", "timeout": 10, "nccl_target": "gb10_switch",
                                       "nccl_all_reduce": "/usr/local/bin/all_reduce_perf", "nccl_gpus_per_node": gpus,
                                       "nccl_min_busbw_gbps": floor}, tmp_path)
    checks = {c["check"]: c for c in r["checks"]}
    assert checks["slurm_srun"]["status"] == "pass" and checks["slurm_mpi"]["status"] == "pass", r
    assert checks["nccl_all_reduce"]["status"] == status and words in checks["nccl_all_reduce"]["detail"], checks
    assert checks["nccl_all_reduce"]["target"] == "gb10_switch"


def slurm_node_tools(bindir: Path, sinfo: str, squeue: str = ""):
    """sinfo/scontrol/squeue/srun stand-ins over files: the node state (drain/resume update it), a reservation file
    (create/delete), the jobs squeue lists; every scontrol and srun call is logged."""
    bindir.mkdir(exist_ok=True)
    (bindir / "state").write_text(sinfo)
    (bindir / "jobs").write_text(squeue)
    log = bindir / "calls.log"
    scripts = {
        "sinfo": 'while [ "$1" != "-n" ]; do shift; done; grep "^$2|" ' + f'"{bindir}/state"; true',
        "squeue": f'cat "{bindir}/jobs"',
        "srun": f'echo "srun $*" >> "{log}"; for n in $(echo "$*" | sed -n "s/.*--nodelist=\\([^ ]*\\).*/\\1/p" | tr , " "); '
                'do echo $n; done',
        "scontrol": f'echo "scontrol $*" >> "{log}"\n'
                    'case "$1 $2" in\n'
                    f'  "show reservation") [ -f "{bindir}/resv" ] && echo "ReservationName=$3 Nodes=x" || exit 1;;\n'
                    f'  "create reservation") touch "{bindir}/resv";;\n'
                    f'  "delete ReservationName="*) rm -f "{bindir}/resv";;\n'
                    '  "update nodename="*) node=${2#nodename=}; st=${3#state=}\n'
                    f'    if [ "$st" = resume ]; then sed -i "s#^$node|[^|]*|.*#$node|idle|none#" "{bindir}/state";\n'
                    f'    else sed -i "s#^$node|[^|]*|.*#$node|drained|${{4#reason=}}#" "{bindir}/state"; fi;;\n'
                    'esac',
    }
    for name, body in scripts.items():
        (bindir / name).write_text("#!/bin/bash\n" + body + "\n")
        (bindir / name).chmod(0o755)
    return log


def test_slurm_node_hold_job_and_release(tmp_path):
    log = slurm_node_tools(tmp_path, "n4|idle|none\nn2|idle|none\n")
    ok, r = run_module("slurm_node", {"node": "n4", "state": "held", "job_peer": "n2", "timeout": 10}, tmp_path)
    assert not r.get("failed") and r["changed"] and r["job"]["status"] == "pass", r
    calls = log.read_text()
    assert "create reservation ReservationName=sparkfleet_n4 Nodes=n4 StartTime=now Duration=infinite Users=root " \
           "Flags=MAINT,IGNORE_JOBS,FLEX" in calls
    # The gate job runs inside the node's reservation, across it and the peer.
    assert "--nodelist=n4,n2" in calls and "--reservation=sparkfleet_n4" in calls
    ok, r = run_module("slurm_node", {"node": "n4", "state": "held", "timeout": 10}, tmp_path)
    assert ok and not r["changed"]
    ok, r = run_module("slurm_node", {"node": "n4", "state": "in_service", "timeout": 10}, tmp_path)
    assert not r.get("failed") and r["changed"] and not (tmp_path / "resv").exists()


def test_slurm_node_drain_waits_for_jobs_and_resumes_only_its_own_drains(tmp_path):
    slurm_node_tools(tmp_path, "n1|idle|none\nn2|drained|disk swap\n", squeue="17 alice train\n")
    ok, r = run_module("slurm_node", {"node": "n1", "state": "drained", "reason": "remove_node", "wait_s": 3, "timeout": 10}, tmp_path)
    assert not ok and "1 job(s) still run there after 3 s: 17 alice train" in r["msg"] and "force=true" in r["msg"], r
    assert "n1|drained|sparkfleet lifecycle: remove_node" in (tmp_path / "state").read_text()
    ok, r = run_module("slurm_node", {"node": "n1", "state": "drained", "reason": "remove_node", "wait_s": 1, "force": True,
                                      "timeout": 10}, tmp_path)
    assert ok and not r["changed"] and r["jobs"] == ["17 alice train"]
    ok, r = run_module("slurm_node", {"node": "n1", "state": "in_service", "timeout": 10}, tmp_path)
    assert not r.get("failed") and r["changed"] and r["slurm_state"] == "idle"
    # Somebody's drain is theirs to undo; an unknown node is an error unless missing_ok.
    ok, r = run_module("slurm_node", {"node": "n2", "state": "in_service", "timeout": 10}, tmp_path)
    assert ok and not r["changed"] and r["reason"] == "disk swap"
    ok, r = run_module("slurm_node", {"node": "n9", "state": "drained", "timeout": 10}, tmp_path)
    assert not ok and "does not know node n9" in r["msg"]
    ok, r = run_module("slurm_node", {"node": "n9", "state": "drained", "missing_ok": True, "timeout": 10}, tmp_path)
    assert ok and r["slurm_state"] == "absent"


def test_node_checks_service_never_reads_a_failed_systemctl_as_not_installed():
    """A systemctl that timed out (an emulated or overloaded node) is a failed check naming the error, not an
    optional unit "not installed" silently left unchecked."""
    from ansible_collections.sparkfleet.cluster.plugins.modules.node_checks import Checker

    class Fake:
        def __init__(self, rc, out, err="", first=None):
            self.replies = ([first] if first else []) + [(rc, out, err)]

        def run_command(self, argv):
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    timed_out = Checker(Fake(124, "")).service("slurmd", optional=True)
    assert timed_out["status"] == "fail" and "systemctl show failed (rc 124)" in timed_out["detail"]
    absent = Checker(Fake(0, "LoadState=not-found\nActiveState=inactive\n")).service("slurmd", optional=True)
    assert absent == {"check": "service", "target": "slurmd", "status": "not_checked", "detail": "unit not installed"}
    up = Checker(Fake(0, "LoadState=loaded\nActiveState=active\nSubState=running\n")).service("slurmd")
    assert up["status"] == "pass" and up["detail"] == "running"
    # One empty answer, then the real one: asked again, judged on the real one.
    flaky = Checker(Fake(0, "LoadState=loaded\nActiveState=active\nSubState=running\n", first=(0, "", ""))).service("docker")
    assert flaky["status"] == "pass"


def test_node_checks_ray_cluster_counts_only_strangers_as_unexpected(tmp_path):
    """A cluster node outside the run (--limit, or dropped out: unreachable) is alive in Ray all the same: not an
    unexpected node. Any other alive node is; a versions probe that fails is named, never "not installed"."""
    import json as _json

    from ansible_collections.sparkfleet.cluster.plugins.modules.node_checks import Checker

    py = tmp_path / "python"
    py.write_text("#!/bin/sh\n")
    py.chmod(0o755)
    out = _json.dumps({"ok": True, "ray_version": "2.60.0", "unexpected": ["10.0.0.13", "10.0.0.99"],
                       "nodes": {"a": {"alive": True, "hostname": "a", "ip": "10.0.0.11"}}})

    class Fake:
        def __init__(self, rc, text):
            self.rc, self.text = rc, text

        def run_command(self, argv):
            return self.rc, self.text, ""

    checks = Checker(Fake(0, out)).ray_cluster(str(py), "check.py", ["a=10.0.0.11"], ["a=10.0.0.11", "c=10.0.0.13"])
    assert [c["status"] for c in checks] == ["pass", "fail"] and checks[1]["detail"] == "10.0.0.99", checks
    # No cluster at all (Ray's head down): named, never a KeyError (seen in CI: "Module failed: 'nodes'").
    down = _json.dumps({"ok": False, "error": "no Ray cluster at 10.0.0.11:6379: timed out"})
    assert Checker(Fake(1, down)).ray_cluster(str(py), "check.py", ["a=10.0.0.11"]) == [
        {"check": "ray_cluster", "target": "-", "status": "fail", "detail": "ray_check: no Ray cluster at 10.0.0.11:6379: timed out"}]
    versions = Checker(Fake(124, "")).versions(str(py))
    assert versions["python"] == "unreadable (the probe exited 124)" and versions["ray"].startswith("unreadable"), versions

    # Asked twice: a probe that fails once is read on its second try; one that fails twice says its last words.
    class Seq:
        def __init__(self, answers):
            self.answers = list(answers)

        def run_command(self, argv):
            return self.answers.pop(0) if argv[1:3] == ["120", str(py)] else (1, "", "")

    good = _json.dumps({"python": "3.11.2", "ray": "2.60.0", "vllm": None, "torch": None, "nccl": None})
    versions = Checker(Seq([(1, "", "Traceback ...\nAttributeError: x"), (0, good, "")])).versions(str(py))
    assert versions["ray"] == "2.60.0" and versions["python"] == "3.11.2", versions
    versions = Checker(Seq([(1, "", "x"), (1, "", "Traceback ...\nAttributeError: 'NoneType' object")])).versions(str(py))
    assert versions["ray"] == "unreadable (the probe exited 1: AttributeError: 'NoneType' object)", versions


def test_node_checks_nft_asks_again_after_an_empty_or_timed_out_answer():
    """The firewall check under load or emulation: a timed-out or empty `nft list table` is asked again before judging;
    a table really missing or without a default drop fails naming that."""
    from ansible_collections.sparkfleet.cluster.plugins.modules.node_checks import Checker

    table = "table inet sparkfleet {\n chain input {\n  type filter hook input priority 0; policy drop;\n  accept\n }\n}\n"

    class Fake:
        def __init__(self, *replies):
            self.replies, self.calls = list(replies), 0

        def get_bin_path(self, name):
            return "/usr/sbin/" + name

        def run_command(self, argv):
            self.calls += 1
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    flaky = Fake((124, "", ""), (0, "", ""), (0, table, ""))
    assert Checker(flaky).nft("inet sparkfleet") == {"check": "firewall", "target": "inet sparkfleet", "status": "pass",
                                                      "detail": "1 rules"}
    assert flaky.calls == 3
    missing = Fake((1, "", "Error: No such file or directory"))
    res = Checker(missing).nft("inet sparkfleet")
    assert res["status"] == "fail" and res["detail"] == "table not loaded: Error: No such file or directory"
    slow = Checker(Fake((124, "", ""))).nft("inet sparkfleet")
    assert slow["status"] == "fail" and "timed out 3 times" in slow["detail"]
    open_table = Checker(Fake((0, table.replace("policy drop", "policy accept"), ""))).nft("inet sparkfleet")
    assert open_table["detail"] == "no default-drop input chain"


def test_node_checks_http_presents_the_bearer_key_only_where_asked():
    """The gateway check sends a team key (the gateway answers 401 without one); other URLs get no header."""
    import http.server
    import threading

    from ansible_collections.sparkfleet.cluster.plugins.modules.node_checks import Checker

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append(self.headers.get("Authorization"))
            ok = self.headers.get("Authorization") == "Bearer k"
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # loopback only
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/v1/models" % server.server_address[1]

    class Fake:
        params = {"http_bearer": "k"}

    try:
        assert Checker(Fake()).http({"name": "gw", "url": url, "bearer": True})["status"] == "pass"
        plain = Checker(Fake()).http({"name": "gw", "url": url})
        assert plain["status"] == "fail" and "answered 401" in plain["detail"] and "(want 200)" in plain["detail"]
    finally:
        server.shutdown()
    assert seen == ["Bearer k", None]


TRACKING = "Reference ID    : {ref}\nStratum         : 11\nSystem time     : 0.000001 seconds fast of NTP time\nLeap status     : {leap}\n"


def test_node_checks_time_sync_waits_for_a_node_out_of_sync_then_names_its_sources():
    """A node out of sync gets chronyc waitsync (bounded) first: synced by then, a pass; still out, a failure naming
    chrony's sources (what a person needs first). Without a wait, judged at once."""
    from ansible_collections.sparkfleet.cluster.plugins.modules.node_checks import Checker

    class Fake:
        def __init__(self, leaps):
            self.leaps, self.calls = list(leaps), []

        def get_bin_path(self, name):
            return "/usr/bin/" + name

        def run_command(self, argv):
            argv = argv[2:]  # past "timeout N"
            self.calls.append(argv)
            if argv[:2] == ["systemctl", "is-active"]:
                return 0, "active\n", ""
            if argv[-1] == "tracking":
                leap = self.leaps.pop(0) if len(self.leaps) > 1 else self.leaps[0]
                return 0, TRACKING.format(ref="0A4F000B (10.79.0.11)" if leap == "Normal" else "00000000 ()", leap=leap), ""
            if argv[-1] == "sources":
                return 0, "MS Name/IP address Stratum Poll Reach LastRx Last sample\n" + "=" * 20 + \
                    "\n^? 10.79.0.11    10   6     0   70m  +1ns[+1ns] +/- 1us\n", ""
            return (0, "", "") if argv[:2] == ["chronyc", "waitsync"] else (1, "", "unexpected")

    back = Fake(["Not synchronised", "Normal"])
    r = Checker(back).time_sync(0.1, 75)
    assert r["status"] == "pass" and "10.79.0.11" in r["detail"] and "in sync after" in r["detail"], r
    assert ["chronyc", "waitsync", "37", "0", "0", "2"] in back.calls
    still = Checker(Fake(["Not synchronised"])).time_sync(0.1, 75)
    assert still["status"] == "fail", still
    assert still["detail"].startswith("not synchronised (leap status Not synchronised, after 75 s); sources: ^? 10.79.0.11 10 6 0 70m")
    at_once = Fake(["Not synchronised"])
    assert Checker(at_once).time_sync(0.1)["status"] == "fail"
    assert not any(c[:2] == ["chronyc", "waitsync"] for c in at_once.calls)
    synced = Fake(["Normal"])
    ok = Checker(synced).time_sync(0.1, 75)
    assert ok["status"] == "pass" and "waiting" not in ok["detail"], ok
    assert not any(c[:2] == ["chronyc", "waitsync"] for c in synced.calls), "a synced node is never made to wait"


def test_node_checks_ssh_asks_again_after_a_dropped_login_never_after_a_refused_key(monkeypatch):
    """Every node logs in to every peer by every name at once: on 8 nodes logins timed out or sshd (MaxStartups) dropped
    them. Such a login is tried again; a refused key is a trust failure at once."""
    from ansible_collections.sparkfleet.cluster.plugins.modules import node_checks

    monkeypatch.setattr(node_checks.time, "sleep", lambda s: None)

    class Fake:
        def __init__(self, *replies):
            self.replies, self.calls = list(replies), 0

        def run_command(self, argv):
            self.calls += 1
            return self.replies.pop(0)

    killed = Fake((124, "", "Session terminated, killing shell... ...killed."), (0, "spark-02\n", ""))
    assert node_checks.Checker(killed).ssh("spark", "spark-02-fab")["status"] == "pass" and killed.calls == 2
    dropped = Fake(*[(255, "", "kex_exchange_identification: Connection closed by remote host")] * 3)
    r = node_checks.Checker(dropped).ssh("spark", "spark-02")
    assert r["status"] == "fail" and dropped.calls == 3 and "kex_exchange_identification" in r["detail"]
    refused = Fake((255, "", "spark@spark-02: Permission denied (publickey)."))
    r = node_checks.Checker(refused).ssh("spark", "spark-02")
    assert r["status"] == "fail" and refused.calls == 1 and "Permission denied" in r["detail"]


def test_a_hung_nvidia_smi_is_a_named_timeout_not_a_hang(tmp_path):
    """A GPU wedged by an Xid makes nvidia-smi hang: gpu_facts and nvlink_check end by name within their limit."""
    tool = tmp_path / "nvidia-smi"
    tool.parent.mkdir(exist_ok=True)
    tool.write_text("#!/bin/sh\nexec sleep 30\n")
    tool.chmod(0o755)
    ok, r = run_module("gpu_facts", {"timeout_s": 1}, tmp_path)
    assert ok and r["ansible_facts"]["nvidia"]["error"]["kind"] == "timeout", r
    assert "did not answer within 1 s" in r["ansible_facts"]["nvidia"]["error"]["message"]
    ok, r = run_module("nvlink_check", {"timeout_s": 1, "fail_on_problems": False}, tmp_path)
    assert ok and r["error"]["kind"] == "timeout", r
