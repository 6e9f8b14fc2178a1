from __future__ import annotations

from conftest import fixture_path, read_fixture

from ansible_collections.sparkfleet.cluster.plugins.module_utils import slurm

SLURMD_C = """NodeName=spark-02 CPUs=20 Boards=1 SocketsPerBoard=1 CoresPerSocket=20 ThreadsPerCore=1 RealMemory=122505
UpTime=0-01:02:03
"""


def test_slurmd_c_to_node_line():
    hw = slurm.parse_slurmd_c(SLURMD_C)
    assert hw["CPUs"] == 20 and hw["RealMemory"] == 122505 and hw["NodeName"] == "spark-02"
    assert slurm.node_line("spark-02", "10.0.0.12", hw, gpus=1) == (
        "NodeName=spark-02 NodeAddr=10.0.0.12 CPUs=20 Boards=1 SocketsPerBoard=1 CoresPerSocket=20 ThreadsPerCore=1 "
        "RealMemory=116379 Gres=gpu:1 State=UNKNOWN")


def test_node_line_without_slurmd_output_still_valid():
    assert slurm.node_line("n1", "10.0.0.1", {}) == "NodeName=n1 NodeAddr=10.0.0.1 State=UNKNOWN"
    assert "Gres" not in slurm.node_line("n1", "10.0.0.1", {"CPUs": 2}, gpus=0)


def test_sinfo_states_flags_and_reasons():
    text = "spark-01|idle|none\nspark-02|drained|sparkfleet validate: service docker inactive\nspark-03|idle*|none\n" \
           "spark-04|mixed|none\nspark-04|mixed|none\n"
    nodes = slurm.parse_sinfo_nodes(text)
    assert nodes["spark-02"] == {"state": "drained", "flags": "", "reason": "sparkfleet validate: service docker inactive"}
    assert nodes["spark-03"]["flags"] == "*" and not slurm.usable(nodes["spark-03"])
    assert slurm.usable(nodes["spark-01"]) and slurm.usable(nodes["spark-04"]) and not slurm.usable(nodes["spark-02"])
    assert len(nodes) == 4


PROBE = """version=22.05.8-4+deb12u1
hostname=spark-02
gpus=1
mpi=cray_shasta none pmi2 pmix pmix_v4
pmixlib=1
nvml=/usr/lib/aarch64-linux-gnu/slurm-wlm/gpu_nvml.so
""" + SLURMD_C


def test_probe_parsed_and_mpi_default():
    p = slurm.parse_probe(PROBE)
    assert p["version"] == "22.05.8-4+deb12u1" and p["gpus"] == 1 and p["nvml"] and p["hw"]["CPUs"] == 20
    assert "pmix" in p["mpi"] and slurm.mpi_default([p, p]) == "pmix"
    # The plugin without libpmix.so cannot load (Debian ships the unversioned library in -dev only): pmi2.
    q = slurm.parse_probe(PROBE.replace("pmixlib=1", "pmixlib=0").replace("gpus=1", "gpus="))
    assert "pmix" not in q["mpi"] and q["gpus"] == 0 and slurm.mpi_default([p, q]) == "pmi2"
    assert slurm.mpi_default([]) == "pmi2" and slurm.parse_probe("")["hw"] == {}


def test_node_hostname_when_the_machine_calls_itself_otherwise():
    line = slurm.node_line("gpu-a", "10.0.0.5", {"CPUs": 4}, hostname="dgx-0042")
    assert line.startswith("NodeName=gpu-a NodeHostname=dgx-0042 NodeAddr=10.0.0.5 CPUs=4")
    assert "NodeHostname" not in slurm.node_line("n1", "10.0.0.1", {}, hostname="n1")


def test_nccl_tests_tagged_mpi_output():
    r = slurm.parse_nccl_tests(read_fixture(fixture_path("nccl-tests/all_reduce_perf_mpi_2ranks_tagged.txt")))
    assert r["ranks"] == 2 and r["hosts"] == ["lab"] and len(r["rows"]) == 8
    assert r["peak_busbw"] == 2.30 and r["avg_busbw"] == 1.57614 and r["wrong"] == 0
    assert r["rows"][0] == {"size": 1048576, "busbw": 0.24, "wrong": 0}


def test_nccl_tests_one_half_and_wrong_values():
    text = read_fixture(fixture_path("nccl-tests/all_reduce_perf_8gpu_single_column.txt"))
    r = slurm.parse_nccl_tests(text)
    assert r["ranks"] == 8 and r["peak_busbw"] == 68.66 and r["avg_busbw"] == 68.6248
    bad = slurm.parse_nccl_tests(text.replace("68.66       0", "68.66       3"))
    assert bad["wrong"] == 3
    assert slurm.parse_nccl_tests("srun: error: execve(): all_reduce_perf: No such file or directory")["rows"] == []


def test_munge_check_of_a_limited_run_compares_with_the_control_key_read_apart():
    """`site.yml --limit spark-03`: the control node is outside the play; its key's digest, read apart, is the
    reference (it failed 'no key on the control node' before)."""
    from ansible_collections.sparkfleet.cluster.plugins.filter.slurm import munge_checks
    key = "/etc/munge/munge.key"
    hv = {"spark-03": {"_validate_node": {"checksums": {key: "a" * 64}}}, "spark-01": {}}
    assert munge_checks(["spark-03"], hv, "spark-01")["spark-03"][0]["status"] == "fail"  # nothing to compare with
    ok = munge_checks(["spark-03"], hv, "spark-01", "a" * 64)["spark-03"][0]
    assert ok["status"] == "pass", ok
    bad = munge_checks(["spark-03"], hv, "spark-01", "b" * 64)["spark-03"][0]
    assert bad["status"] == "fail" and "differs" in bad["detail"]
    hv["spark-01"] = {"_validate_node": {"checksums": {key: "a" * 64}}}  # in the play: its own reading wins
    assert munge_checks(["spark-01", "spark-03"], hv, "spark-01", "b" * 64)["spark-03"][0]["status"] == "pass"


def test_nccl_tests_recorded_on_one_h100_and_the_ways_a_run_stops():
    """Real nccl-tests 2.19.6 / NCCL 2.28 runs on one H100 (scripts/device/nccl-tests.sh): a whole table with one rank
    (bus bandwidth is 0 with one rank by definition), and two runs that stop, named in NCCL's and the tool's words."""
    ok = slurm.parse_nccl_tests(read_fixture(fixture_path("nccl-tests/all_reduce_perf__h100-1gpu-NCCL_DEBUG-INFO.txt")))
    assert (ok["ranks"], ok["hosts"], len(ok["rows"]), ok["wrong"], ok["errors"]) == (1, ["vm"], 14, 0, [])
    assert ok["rows"][-1] == {"size": 536870912, "busbw": 0.0, "wrong": 0} and ok["avg_busbw"] == 0.0
    gather = slurm.parse_nccl_tests(read_fixture(fixture_path("nccl-tests/all_gather_perf__h100-1gpu.txt")))
    assert len(gather["rows"]) == 6 and gather["errors"] == []
    # NCCL_SOCKET_IFNAME naming an interface the node lacks (the seed's "wrong NIC" at its worst): NCCL stops at init.
    bad = slurm.parse_nccl_tests(read_fixture(fixture_path("nccl-tests/all_reduce_perf__h100-1gpu-bad-ifname.txt")))
    assert bad["rows"] == [] and bad["errors"][0] == "Bootstrap : no socket interface found"
    assert any(e.startswith("Test NCCL failure common.cu:1550 'invalid usage") for e in bad["errors"])
    more = slurm.parse_nccl_tests(read_fixture(fixture_path("nccl-tests/all_reduce_perf__h100-1gpu-asks-2-gpus.txt")))
    assert more["ranks"] == 0 and more["errors"][0] == "Invalid number of GPUs: 2 requested but only 1 were found."
