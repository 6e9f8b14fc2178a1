"""Parsers against real tool outputs, field by field, plus the formats the tools can print."""
from __future__ import annotations

import random

import pytest

from ansible_collections.sparkfleet.cluster.plugins.module_utils import hwparse as hw


# ------------------------------------------------------------------ ibstat
def test_ibstat_h100_ethernet_some_down(fixture_text):
    cas, notes = hw.parse_ibstat(fixture_text("ibstat/ibstat__gpud-h100-ethernet-some-down.txt"))
    assert notes == []
    assert [c["name"] for c in cas] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2", "mlx5_3",
                                        "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    c0 = cas[0]
    assert c0["ca_type"] == "MT4129" and c0["firmware_version"] == "28.39.1002"
    assert c0["ports"] == [{"port": 1, "state": "Active", "physical_state": "LinkUp", "rate_gbps": 400.0,
                            "link_layer": "Ethernet"}]
    c11 = next(c for c in cas if c["name"] == "mlx5_11")
    assert c11["ports"][0] == {"port": 1, "state": "Down", "physical_state": "Disabled", "rate_gbps": 40.0,
                               "link_layer": "Ethernet"}
    assert next(c for c in cas if c["name"] == "mlx5_1")["ca_type"] == "MT4125"
    problems = hw.ibstat_problems(cas)
    assert sorted((p["ca"], p["port"]) for p in problems) == [("mlx5_11", 1), ("mlx5_5", 1)]
    assert "state Down, expected Active (physical state Disabled)" in problems[0]["reason"]
    rate = hw.ibstat_problems(cas, state=None, min_rate_gbps=400)
    assert sorted(p["ca"] for p in rate) == ["mlx5_1", "mlx5_11", "mlx5_2", "mlx5_5", "mlx5_7", "mlx5_8"]
    assert hw.ibstat_problems(cas, link_layer="InfiniBand", state=None)[0]["reason"] == \
        "link layer Ethernet, expected InfiniBand"
    only = hw.ibstat_problems(cas, devices=["mlx5_0", "mlx5_99"])
    assert only == [{"ca": "mlx5_99", "port": None, "reason": "CA not found"}]


MIXED = """CA 'mlx5_0'
    CA type: MT4123
    Number of ports: 2
    Firmware version: 20.31.1014
    Port 1:
        State: Active
        Physical state: LinkUp
        Rate: 200
        Link layer: InfiniBand
    Port 2:
        State: Polling
        Physical state: Polling
        Rate: 10
        Link layer: InfiniBand
CA 'mlx5_bond_0'
\tCA type: MT4125
\tFirmware version: 22.39.1002
\tPort 1:
\t\tState:    Initializing
\t\tPhysical state: LinkUp
\t\tRate: 2.5
\t\tLink layer: Ethernet
"""


def test_ibstat_spaces_tabs_mixed_layers_and_states():
    cas, notes = hw.parse_ibstat(MIXED)
    assert notes == []
    assert [(p["port"], p["state"], p["physical_state"], p["rate_gbps"], p["link_layer"]) for p in cas[0]["ports"]] == [
        (1, "Active", "LinkUp", 200.0, "InfiniBand"), (2, "Polling", "Polling", 10.0, "InfiniBand")]
    assert cas[1]["ports"][0]["state"] == "Initializing" and cas[1]["ports"][0]["rate_gbps"] == 2.5
    assert {(p["ca"], p["port"]) for p in hw.ibstat_problems(cas)} == {("mlx5_0", 2), ("mlx5_bond_0", 1)}


def test_ibstat_truncated_and_errors():
    cas, notes = hw.parse_ibstat("CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tState: Act")
    assert cas[0]["ports"][0]["state"] == "Act" and cas[0]["ports"][0]["rate_gbps"] is None
    cas, _ = hw.parse_ibstat("CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n")
    assert hw.ibstat_problems(cas)[0]["reason"] == "port state missing (truncated output?)"
    cas, _ = hw.parse_ibstat("CA 'mlx5_0'\n\tCA type: MT4129\n")
    assert hw.ibstat_problems(cas)[0]["reason"] == "no ports listed (truncated output?)"
    cas, notes = hw.parse_ibstat("ibpanic: [1234] main: stat of IB device 'mlx5_9' failed: No such file or directory\n")
    assert cas == [] and notes[0].startswith("ibpanic:")
    assert hw.parse_ibstat("") == ([], [])


# ------------------------------------------------------------------ nvlink
def test_nvlink_a100_fixture(fixture_text):
    gpus, notes = hw.parse_nvlink_status(fixture_text("nvidia-smi/nvidia-smi-nvlink-status__gpud-a100-sxm4.txt"))
    assert notes == []
    assert len(gpus) == 8
    assert [g["index"] for g in gpus] == list(range(8))
    assert gpus[0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpus[0]["uuid"] == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert gpus[7]["uuid"] == "GPU-754035b4-4708-efcd-b261-623aea38bcad"
    for g in gpus:
        assert [link["link"] for link in g["links"]] == list(range(12))
        assert all(link["active"] and link["speed_gbps"] == 25.0 for link in g["links"])
    assert hw.nvlink_problems(gpus, min_active_links=12, min_speed_gbps=25) == []
    p = hw.nvlink_problems(gpus, min_active_links=18)
    assert len(p) == 8 and p[0]["reason"] == "12 active links, expected >= 18"


def test_nvlink_inactive_and_h100_formats():
    text = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaa)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-bbbb)\n   Link 0: 0 GB/s\n   Link 1: 26.562 GB/s\n")
    gpus, notes = hw.parse_nvlink_status(text)
    assert notes == []
    assert [(link["link"], link["active"], link["speed_gbps"]) for link in gpus[0]["links"]] == [(0, True, 26.562), (1, False, None)]
    assert gpus[1]["links"][0]["active"] is False
    probs = hw.nvlink_problems(gpus, min_active_links=2, min_speed_gbps=30)
    assert {(p["gpu"], p["link"]) for p in probs} == {(0, None), (1, None), (0, 0), (1, 1)}
    assert "inactive: 1" in probs[0]["reason"]


def test_nvlink_empty_output_from_real_h200(fixture_text):
    gpus, notes = hw.parse_nvlink_status(fixture_text("nvidia-smi/h200-device/nvlink-status.txt"))
    assert gpus == [] and notes == []
    assert hw.nvlink_problems(gpus, 0) == []
    assert hw.nvlink_problems(gpus, 1)[0]["reason"].startswith("no NVLink information")


# ------------------------------------------------------------------ query-gpu / errors
def test_query_gpu_real_h200_csv(fixture_text):
    for name in ("query-gpu-csv.txt", "query-gpu-csv-noheader.txt"):
        gpus, driver, notes = hw.parse_query_gpu(fixture_text("nvidia-smi/h200-device/" + name))
        assert notes == [] and driver == "580.159.04"
        assert gpus == [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-48bd4383-4bb8-eed2-190d-057a4b212c62",
                         "pci_bus_id": "00000000:00:06.0", "memory_total_mib": 143771,
                         "fabric_state": None, "fabric_status": None}]


@pytest.mark.parametrize("device", ["h100-device", "h200-device"])
def test_real_device_captures_parse_and_read_as_one_gpu_without_nvlink(fixture_text, device):
    """Both GPU machines' captures (scripts/capture-nvidia-smi.sh through the device tool): the query forms gpu_facts
    uses, the version line, and nvlink's empty answer on a GPU without NVLink."""
    for name in ("query-gpu-csv.txt", "query-gpu-csv-noheader.txt"):
        gpus, driver, notes = hw.parse_query_gpu(fixture_text(f"nvidia-smi/{device}/{name}"))
        assert notes == [] and driver == "580.159.04" and len(gpus) == 1 and gpus[0]["memory_total_mib"] > 80000
    assert hw.parse_cuda_version(fixture_text(f"nvidia-smi/{device}/version.txt")) == "13.0"
    assert hw.parse_nvlink_status(fixture_text(f"nvidia-smi/{device}/nvlink-status.txt")) == ([], [])
    assert hw.unknown_field(fixture_text(f"nvidia-smi/{device}/query-gpu-bad-field.txt")) == "no.such.field"


def test_query_gpu_gb10_not_supported_and_fabric():
    text = ("0, NVIDIA GB10, GPU-11111111-2222-3333-4444-555555555555, 0000000F:01:00.0, [N/A], 580.126.09, "
            "[Not Supported], [Not Supported]\n"
            "1, NVIDIA H100 80GB HBM3, GPU-x, 00000000:3B:00.0, 81559, 535.161.08, Completed, Success\n")
    gpus, driver, notes = hw.parse_query_gpu(text)
    assert notes == [] and driver == "580.126.09"
    assert gpus[0]["memory_total_mib"] is None and gpus[0]["fabric_state"] is None
    assert gpus[1]["memory_total_mib"] == 81559 and gpus[1]["fabric_state"] == "Completed"
    assert gpus[1]["fabric_status"] == "Success"


def test_query_gpu_without_fabric_fields():
    fields = hw.GPU_QUERY_FIELDS[:6]
    gpus, _, notes = hw.parse_query_gpu("0, Tesla T4, GPU-t4, 00000000:00:1E.0, 15360, 470.82.01\n", fields)
    assert notes == [] and gpus[0]["fabric_state"] is None and gpus[0]["memory_total_mib"] == 15360


@pytest.mark.parametrize("text,rc,kind", [
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124", 18,
     "driver_library_mismatch"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
     "NVIDIA driver is installed and running.", 9, "no_driver"),
    ("No devices were found", 6, "no_devices"),
    ('Field "no.such.field" is not a valid field to query.', 2, "other"),
    ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error", 15, "other"),
])
def test_classify_errors(text, rc, kind):
    err = hw.classify_nvsmi_error(text, rc)
    assert err["kind"] == kind and err["message"]


def test_classify_real_fixtures(fixture_text):
    mismatch = fixture_text("nvidia-smi/nvidia-smi__tinygrad-ogkm-47-version-mismatch.txt")
    assert hw.classify_nvsmi_error(mismatch, 18) == {
        "kind": "driver_library_mismatch", "message": "Failed to initialize NVML: Driver/library version mismatch"}
    assert hw.classify_nvsmi_error(fixture_text("nvidia-smi/h200-device/query-gpu-invalid-index.txt"), 6)["kind"] == "no_devices"
    assert hw.classify_nvsmi_error(fixture_text("nvidia-smi/h200-device/query-gpu-csv.txt"), 0) is None
    assert hw.unknown_field(fixture_text("nvidia-smi/h200-device/query-gpu-bad-field.txt")) == "no.such.field"


def test_cuda_version(fixture_text):
    assert hw.parse_cuda_version(fixture_text("nvidia-smi/h200-device/version.txt")) == "13.0"
    assert hw.parse_cuda_version(fixture_text("nvidia-smi/h200-device/nvidia-smi.txt")) == "13.0"
    assert hw.parse_cuda_version(fixture_text("nvidia-smi/nvidia-smi__arctictraining-345-gb10-memory-not-supported.txt")) == "13.0"
    assert hw.parse_cuda_version("garbage") is None


# ------------------------------------------------------------------ fuzz: never raise
@pytest.mark.parametrize("seed", range(40))
def test_fuzz_truncation_and_garbage_never_raise(seed, fixture_text):
    rnd = random.Random(seed)
    sources = [fixture_text("ibstat/ibstat__gpud-h100-ethernet-some-down.txt"),
               fixture_text("nvidia-smi/nvidia-smi-nvlink-status__gpud-a100-sxm4.txt"),
               fixture_text("nvidia-smi/h200-device/query-gpu-csv.txt"),
               fixture_text("nvidia-smi/nvidia-smi-q__gpud-h100x8-fabric-completed.txt")[:3000]]
    for text in sources:
        cut = text[: rnd.randrange(len(text) + 1)]
        noisy = "".join(c if rnd.random() > 0.03 else rnd.choice("\t\n :,'()\x00é<>") for c in cut)
        for t in (cut, noisy, bytes(rnd.randrange(256) for _ in range(200)).decode("latin-1")):
            cas, _ = hw.parse_ibstat(t)
            hw.ibstat_problems(cas, min_rate_gbps=100, link_layer="Ethernet", devices=["mlx5_0"])
            gpus, _ = hw.parse_nvlink_status(t)
            hw.nvlink_problems(gpus, 4, 20)
            hw.parse_query_gpu(t)
            hw.classify_nvsmi_error(t, rnd.choice([0, 2, 9, None]))
            hw.parse_cuda_version(t)


# ------------------------------------------------------------------ sysfs
def test_rdma_sysfs_dgx_spark(tmp_path):
    from sysfs_fixture import spark_sysfs
    devs = {d["name"]: d for d in hw.read_rdma_sysfs(str(spark_sysfs(tmp_path)))}
    assert sorted(devs) == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    p = devs["rocep1s0f0"]["ports"][0]
    assert (p["port"], p["state"], p["physical_state"], p["rate_gbps"], p["link_layer"], p["netdev"]) == (
        1, "ACTIVE", "LinkUp", 200.0, "Ethernet", "enp1s0f0np0")
    assert p["roce_v2_gid_index"] == 3 and p["ipv4"] == "192.168.100.10"
    assert devs["roceP2p1s0f0"]["ports"][0]["ipv4"] == "192.168.100.14"
    down = devs["rocep1s0f1"]["ports"][0]
    assert down["state"] == "DOWN" and down["physical_state"] == "Disabled" and down["netdev"] == "enp1s0f1np1"
    # No IPv4 address on a down port: the RoCE v2 GID is the link-local one (index 1).
    assert down["roce_v2_gid_index"] == 1 and down["ipv4"] is None
    assert hw.read_rdma_sysfs(str(tmp_path / "nothing")) == []


def _pci(tmp_path, devices):
    for addr, vendor, device, cls in devices:
        d = tmp_path / "bus" / "pci" / "devices" / addr
        d.mkdir(parents=True)
        (d / "vendor").write_text(vendor + "\n")
        (d / "device").write_text(device + "\n")
        (d / "class").write_text(cls + "\n")
    return str(tmp_path)


def test_pci_real_h200_listing(tmp_path):
    # From the device capture: "/sys/bus/pci/devices/0000:00:06.0 0x10de 0x2335 0x030200" among virtio devices.
    root = _pci(tmp_path, [("0000:00:00.0", "0x8086", "0x1237", "0x060000"), ("0000:00:05.0", "0x1af4", "0x1000", "0x020000"),
                           ("0000:00:06.0", "0x10de", "0x2335", "0x030200")])
    gpus, sw = hw.read_nvidia_pci(root)
    assert gpus == [{"address": "0000:00:06.0", "device_id": "0x2335", "class": "0x030200"}] and sw == []


def test_pci_hgx_with_nvswitches_and_gb10(tmp_path):
    root = _pci(tmp_path, [("0000:1b:00.0", "0x10de", "0x2330", "0x030200"), ("0000:05:00.0", "0x10de", "0x22a3", "0x068000"),
                           ("0000:06:00.0", "0x10de", "0x22a3", "0x068000"), ("000f:01:00.0", "0x10de", "0x2e12", "0x030200"),
                           ("0000:1b:00.1", "0x10de", "0x22ba", "0x040300")])  # HDMI audio function: neither
    gpus, sw = hw.read_nvidia_pci(root)
    assert [g["address"] for g in gpus] == ["0000:1b:00.0", "000f:01:00.0"]
    assert [s["address"] for s in sw] == ["0000:05:00.0", "0000:06:00.0"]
    assert hw.read_nvidia_pci(str(tmp_path / "none")) == ([], [])


def test_dgx_release():
    rel = hw.parse_os_release('DGX_NAME="DGX Spark"\nDGX_PRETTY_NAME="NVIDIA DGX Spark"\nDGX_SWBUILD_VERSION="7.3.1"\n# c\n')
    assert rel == {"DGX_NAME": "DGX Spark", "DGX_PRETTY_NAME": "NVIDIA DGX Spark", "DGX_SWBUILD_VERSION": "7.3.1"}


def test_device_run_modules_agree_with_raw_outputs(fixture_text):
    """Same run on a real H200: what the modules returned through Ansible equals the parse of the raw outputs."""
    import json

    from conftest import LOCAL
    mods = json.loads((LOCAL / "device-runs" / "h200-modules-2026-12-02.json").read_text())
    gpus, driver, notes = hw.parse_query_gpu(fixture_text("device-runs/h200-2026-12-02/query-gpu-csv-noheader.txt"))
    assert notes == [] and gpus == mods["gpu_facts"]["gpus"] and driver == mods["gpu_facts"]["driver_version"]
    assert hw.parse_cuda_version(fixture_text("device-runs/h200-2026-12-02/version.txt")) == mods["gpu_facts"]["cuda_version"]
    nv, _ = hw.parse_nvlink_status(fixture_text("device-runs/h200-2026-12-02/nvlink-status.txt"))
    assert nv == mods["nvlink_check"]["gpus"] == []


def test_cas_from_sysfs_judged_like_ibstat_without_the_tool(tmp_path):
    """No ibstat (infiniband-diags) on the node: the same kernel view from sysfs, judged by ibstat_problems."""
    from sysfs_fixture import spark_sysfs
    root = spark_sysfs(tmp_path)
    cas = hw.cas_from_sysfs(hw.read_rdma_sysfs(str(root)))
    assert {c["name"] for c in cas} == {"rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"}
    probs = hw.ibstat_problems(cas, "Active", 200, "Ethernet", ["rocep1s0f0", "roceP2p1s0f0"])
    assert probs == []
    down = hw.ibstat_problems(cas, "Active", None, None, ["rocep1s0f1"])
    assert down == [{"ca": "rocep1s0f1", "port": 1, "reason": "state Down, expected Active (physical state Disabled)"}]
