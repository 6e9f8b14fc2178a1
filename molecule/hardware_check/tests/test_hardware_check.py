"""Hardware checks on nodes without GPUs or ConnectX: each check is `not_checked` with the reason, none fails and
none pretends to pass."""
from __future__ import annotations

import json

from labtools import NODES, PROJECT, playbook


def test_every_check_is_not_checked_with_its_reason(tmp_path):
    pb = tmp_path / "hw.yml"
    pb.write_text(json.dumps([
        {"ansible.builtin.import_playbook": str(PROJECT / "playbooks" / "roles.yml")},
        {"name": "Results", "hosts": "cluster", "gather_facts": False, "tasks": [
            {"name": "Results to the controller", "delegate_to": "localhost", "become": False,
             "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
             "ansible.builtin.copy": {"content": "{{ hardware_check_results | to_json }}", "mode": "0644",
                                      "dest": str(tmp_path) + "/{{ inventory_hostname }}.json"}}]},
    ]))
    res = playbook(str(pb), "-e", "sparkfleet_roles=hardware_check", timeout=300)
    assert res.returncode == 0, res.stdout[-3000:]
    got = {p.stem: json.loads(p.read_text()) for p in tmp_path.glob("*.json")}
    assert sorted(got) == NODES, res.stdout[-3000:]
    for n, checks in got.items():
        status = {c["check"]: (c["status"], c["detail"]) for c in checks}
        assert set(status) == {"gpu", "nvlink", "nvswitch_fabric", "connectx"}, (n, status)
        assert all(s == "not_checked" for s, _ in status.values()), (n, status)
        assert status["connectx"][1] == "not present: no RDMA devices in /sys/class/infiniband"
        assert status["gpu"][1].startswith("not present: ")
