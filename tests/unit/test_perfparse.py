"""The slow-cluster parsers on real outputs (../shared/fixtures and tests/fixtures): ib_write_bw in MB/s and in Gb/s and
its failures, ethtool whole, trimmed or grepped, lspci link status with a downgraded link, and NCCL's own log naming
its transport (RDMA on both CX-7 halves, or the socket fallback on some other NIC)."""
from __future__ import annotations

from ansible_collections.sparkfleet.cluster.plugins.module_utils import perfparse as pp


def test_ib_write_bw_in_mib_per_second_and_in_gbits(fixture_text):
    r = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw__dgx-spark-elizabetht-mtu4096.txt"))
    assert (r["device"], r["mtu"], r["link_type"], r["gid_index"]) == ("rocep1s0f0", 4096, "Ethernet", 3)
    assert r["avg_gbps"] == 97.97 and r["error"] is None and r["problems"] == []  # 11678.83 MiB/s
    r = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw__dgx-spark-playbooks-perfguide-client1-gbits.txt"))
    assert r["avg_gbps"] == 92.57 and len(r["rows"]) == 5
    r = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw__gb10-roce-handson-cpu-util-MASKED.txt"))
    assert r["avg_gbps"] == 92.57  # an extra CPU_Util column


def test_ib_write_bw_failures_are_errors_not_numbers(fixture_text):
    r = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw-error__perftest-pr228-couldnt-connect.txt"))
    assert r["avg_gbps"] is None and r["error"].startswith("Couldn't connect to 192.168.125.211:18515")
    r = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw-error__perftest-issue173-completion-error-syndrom.txt"))
    assert r["avg_gbps"] is None and "Completion with error" in r["error"]
    assert pp.parse_ib_write_bw("")["problems"] == ["no result row (truncated output, or not ib_write_bw's)"]


def test_ethtool_speed_lanes_and_fec(fixture_text):
    assert pp.parse_ethtool(fixture_text("ethtool/ethtool__chronara-gx10-trimmed-200G-lanes4.txt"))["speed_mbps"] == 200000
    assert pp.parse_ethtool(fixture_text("ethtool/ethtool__chronara-gx10-trimmed-200G-lanes4.txt"))["lanes"] == 4
    assert pp.parse_ethtool(fixture_text("ethtool/ethtool__dgx-spark-playbooks-switch-grep-speed-100G.txt"))["speed_mbps"] == 100000
    fec = pp.parse_ethtool(fixture_text("ethtool/ethtool-show-fec__koyoimai-dgx-spark-direct-None.txt"))
    assert fec["fec_active"] == "None" and fec["speed_mbps"] is None
    down = pp.parse_ethtool("Settings for enp1s0f1np1:\n\tSpeed: Unknown!\n\tLink detected: no\n")
    assert down["speed_mbps"] is None and down["link_detected"] is False and down["problems"] == []
    assert pp.parse_ethtool("garbage")["problems"] == ["no Speed, Link detected or FEC line"]


def test_lspci_link_at_capability_and_downgraded(fixture_text):
    [cx7] = pp.parse_lspci_links(fixture_text("lspci/lspci__stondo-hp-zgx-gb10-cx7-lnk-grep.txt"))
    assert (cx7["cap_speed_gts"], cx7["cap_width"], cx7["speed_gts"], cx7["width"], cx7["downgraded"]) == (32.0, 4, 32.0, 4, False)
    [bad] = pp.parse_lspci_links(fixture_text("lspci/lspci-vvv-egrep__rtx3080-mining-rig-DOWNGRADED.txt"))
    assert (bad["speed_gts"], bad["width"], bad["downgraded"]) == (2.5, 4, True)
    # The BIOS that wires the second CX-7 at Gen5 x2: narrower than capable, with no "(downgraded)" from this lspci.
    text = "0002:01:00.0 Ethernet controller: Mellanox\n\tLnkCap:\tPort #0, Speed 32GT/s, Width x4\n\tLnkSta:\tSpeed 32GT/s, Width x2\n"
    [half] = pp.parse_lspci_links(text)
    assert half["device"] == "0002:01:00.0" and half["downgraded"] is True
    assert pp.parse_lspci_links("\tLnkSta: Speed 8GT/s, Width x8\n")[0]["problems"] == ["LnkSta without LnkCap"]


def test_nccl_log_names_its_transport(fixture_text):
    ib = pp.nccl_transport(fixture_text("nccl-debug/nccl-debug__2x-dgx-spark-NET-IB-EXCERPT.txt"))
    assert ib["network"] == "IB" and ib["ib_devices"] == ["rocep1s0f0", "roceP2p1s0f0"]
    assert ib["transports"] == ["NET/IB/0", "NET/IB/1"] and ib["problems"] == []
    sock = pp.nccl_transport(fixture_text("nccl-tests/all_reduce_perf__nccl-tests-issue287-2xRTX5090-NCCL-WARN-debug.txt"))
    assert sock["network"] == "Socket" and sock["socket_ifaces"][0] == "enp227s0f0" and sock["ib_devices"] == []
    assert sock["warnings"] and "SHM/direct/direct" in sock["transports"]
    assert pp.nccl_transport("")["problems"]


FABRIC_IFS = ["enp1s0f0np0", "enP2p1s0f0np0"]
HCAS = ["rocep1s0f0", "roceP2p1s0f0"]


def test_checks_name_node_port_and_measured_against_expected(fixture_text):
    gb10 = pp.expectations("GB10")
    slow = pp.parse_ethtool(fixture_text("ethtool/ethtool__dgx-spark-playbooks-switch-grep-speed-100G.txt"))
    c = pp.judge_port_speed("spark-02", "enp1s0f1np1", slow, gb10["port_speed_mbps"])
    assert c == {"check": "fabric_speed", "target": "enp1s0f1np1", "status": "fail",
                 "detail": "spark-02 enp1s0f1np1: 100000 Mb/s, expected 200000"}
    assert pp.judge_port_speed("spark-02", "x", pp.parse_ethtool("Speed: Unknown!\nLink detected: no\n"), 200000)["detail"] == \
        "spark-02 x: no speed (link down), expected 200000 Mb/s"
    bw = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw__dgx-spark-playbooks-perfguide-client1-gbits.txt"))
    assert pp.judge_rdma_write("spark-01", "rocep1s0f0", bw, gb10["rdma_write_gbps"])["status"] == "pass"
    assert pp.judge_rdma_write("spark-01", "rocep1s0f0", bw, 150)["detail"] == "spark-01 rocep1s0f0: 92.57 Gb/s, expected >= 150"
    err = pp.parse_ib_write_bw(fixture_text("perftest/ib_write_bw-error__perftest-pr228-couldnt-connect.txt"))
    assert pp.judge_rdma_write("spark-01", "rocep1s0f0", err, 90)["status"] == "fail"
    [link] = pp.judge_pcie_links("spark-03", pp.parse_lspci_links(
        "0002:01:00.0 Ethernet controller: Mellanox\n\tLnkCap:\tPort #0, Speed 32GT/s, Width x4\n\tLnkSta:\tSpeed 32GT/s, Width x2\n"))
    assert link["status"] == "fail" and link["detail"] == "spark-03 0002:01:00.0: 32GT/s x2, capable of 32GT/s x4"
    assert pp.expectations("GB10", {"port_speed_mbps": 100000})["port_speed_mbps"] == 100000


def test_nccl_on_the_management_nic_is_named(fixture_text):
    ib = pp.nccl_transport(fixture_text("nccl-debug/nccl-debug__2x-dgx-spark-NET-IB-EXCERPT.txt"))
    assert pp.judge_nccl_transport("spark-fb97", ib, HCAS, FABRIC_IFS) == {
        "check": "nccl_transport", "target": "nccl", "status": "pass", "detail": "spark-fb97: NET/IB on rocep1s0f0, roceP2p1s0f0"}
    sock = pp.nccl_transport(fixture_text("nccl-tests/all_reduce_perf__nccl-tests-issue287-2xRTX5090-NCCL-WARN-debug.txt"))
    c = pp.judge_nccl_transport("spark-01", sock, HCAS, FABRIC_IFS)
    assert c["status"] == "fail" and c["detail"].startswith("spark-01: NCCL used NET/Socket on enp227s0f0")
    assert c["detail"].endswith("expected NET/IB on rocep1s0f0, roceP2p1s0f0")
    # No RDMA on the fabric (the lab): sockets are right, but only on fabric ports.
    assert pp.judge_nccl_transport("n", sock, [], ["enp227s0f0", "enxfe1dc2e063ea"], expect="Socket")["status"] == "pass"
    assert pp.judge_nccl_transport("n", sock, [], FABRIC_IFS, expect="Socket")["status"] == "fail"


def test_nccl_on_one_h100_names_its_socket_transport(fixture_text):
    """NCCL 2.28's own log from a real one-GPU run (no RDMA device there): the check names NET/Socket on eth0, not the
    fabric's devices - what a node whose NCCL_IB_HCA misses its CX-7 halves would show."""
    log = pp.nccl_transport(fixture_text("nccl-tests/all_reduce_perf__h100-1gpu-NCCL_DEBUG-INFO.txt"))
    assert (log["network"], log["socket_ifaces"], log["problems"]) == ("Socket", ["eth0"], [])
    assert pp.judge_nccl_transport("h100", log, ["rocep1s0f0"], ["enp1s0f0np0"]) == {
        "check": "nccl_transport", "target": "nccl", "status": "fail",
        "detail": "h100: NCCL used NET/Socket on eth0, expected NET/IB on rocep1s0f0"}
    # A run that stopped at init: the parser says what it could not read and keeps NCCL's warning.
    bad = pp.nccl_transport(fixture_text("nccl-tests/all_reduce_perf__h100-1gpu-bad-ifname.txt"))
    assert bad["warnings"] == ["Bootstrap : no socket interface found"] and bad["problems"]
