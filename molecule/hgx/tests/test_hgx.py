"""fabric_manager's install path on HGX persona nodes: exactly the loaded driver's version among those apt offers,
held with the driver, its unit running, every GPU's fabric state Completed/Success read back; the driver (DGX OS)
verified on its pinned branch with 8 GPUs."""
from __future__ import annotations

from labtools import NODES, playbook, ssh


def test_fabric_manager_of_exactly_the_drivers_version_held_and_running():
    for n in NODES:
        out = ssh(n, "dpkg-query -W -f '${Version} ${db:Status-Abbrev}\\n' nvidia-fabricmanager-535;"
                     " apt-cache madison nvidia-fabricmanager-535 | wc -l; systemctl is-active nvidia-fabricmanager;"
                     " systemctl is-enabled nvidia-fabricmanager").stdout.split("\n")
        assert out[0].split()[0] == "535.161.08-1", out  # the loaded driver's version, not the other one apt offers
        assert out[0].split()[1].startswith("h"), out  # held with the driver
        assert int(out[1]) == 2, out
        assert out[2:4] == ["active", "enabled"], out


def test_a_fabric_manager_left_behind_by_the_driver_is_put_back_to_its_version():
    """The fabric manager downgraded under the driver (an apt run that ignored the hold): the GPU layer installs the one
    of exactly the driver's version again, and reads the 8 GPUs on the driver's branch."""
    victim = NODES[-1]
    ssh(victim, "apt-mark unhold nvidia-fabricmanager-535 >/dev/null && apt-get install -y -q --allow-downgrades"
                " nvidia-fabricmanager-535=535.154.05-1 >/dev/null 2>&1", timeout=180)
    res = playbook("playbooks/gpu.yml", "--limit", victim)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "driver 535.161.08 (CUDA 12.2) on 8 GPU(s) (DGX OS: verified, not reinstalled)" in res.stdout, res.stdout[-3000:]
    assert ssh(victim, "dpkg-query -W -f '${Version} ${db:Status-Abbrev}' nvidia-fabricmanager-535").stdout.startswith("535.161.08-1 h")
