from __future__ import annotations

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


def test_mpi_list_22_and_23():
    assert slurm.parse_srun_mpi_list("MPI plugin types are...\n\tnone\n\tcray_shasta\n\tpmi2\n") == ["none", "cray_shasta", "pmi2"]
    out = slurm.parse_srun_mpi_list("MPI plugin types are...\n\tpmix\n\tnone\n\tpmi2\nspecific pmix plugin versions available: pmix_v4\n")
    assert "pmix" in out and "pmi2" in out
