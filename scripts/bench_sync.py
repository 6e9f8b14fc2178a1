#!/usr/bin/env python3
"""Benchmark model distribution on a converged lab (not a test): publish a generated model, then time
the sync (playbooks/storage.yml, rclone with parallel transfers) to one compute node and to all of them,
and a plain single-stream download of the same data from the same server on one node.

    python3 scripts/bench_sync.py [--inventory inventory/lab] [--mb 400]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv" / "bin"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--inventory", default=str(ROOT / "inventory" / "lab"))
    ap.add_argument("--mb", type=int, default=400)
    a = ap.parse_args()
    inv = json.loads((Path(a.inventory) / "hosts.yml").read_text().split("\n", 1)[1])["all"]
    compute = sorted(inv["children"]["cluster"]["children"]["compute"]["hosts"])
    hosts = {**inv["children"]["cluster"]["children"]["compute"]["hosts"]}
    key = inv["vars"]["ansible_ssh_private_key_file"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), PATH=f"{VENV}:{os.environ['PATH']}")
    name = f"bench-{os.getpid()}"

    def pb(*args):
        t = time.monotonic()
        subprocess.run([str(VENV / "ansible-playbook"), "-i", a.inventory, *args], cwd=ROOT, env=env, check=True,
                       capture_output=True, text=True)
        return time.monotonic() - t

    def ssh(host, cmd):
        return subprocess.run(["ssh", "-i", key, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                               "-o", "LogLevel=ERROR", f"sparkadmin@{hosts[host]['ansible_host']}", "sudo sh -c " +
                               json.dumps(cmd)], check=True, capture_output=True, text=True)

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(8):
            (Path(tmp) / f"model-{i:05d}.safetensors").write_bytes(os.urandom((a.mb // 8) << 20))
        pb("playbooks/model_publish.yml", "-e", f"model_name={name}", "-e", "model_version=v1", "-e", f"model_dir={tmp}")
    models = json.dumps({"model_sync_models": [{"name": name, "version": "v1"}]})
    res = {"mb": a.mb}
    for n in compute:
        ssh(n, f"rm -rf /models/{name}")
    res["sync_one_node_s"] = pb("playbooks/storage.yml", "-e", models, "--limit", f"control,{compute[0]}")
    for n in compute:
        ssh(n, f"rm -rf /models/{name}")
    res["sync_all_nodes_s"] = pb("playbooks/storage.yml", "-e", models)
    t = time.monotonic()
    ssh(compute[0], f"rm -rf /tmp/{name}; rclone copy --config /etc/sparkfleet/rclone.conf --transfers 1 "
                    f"--multi-thread-streams 0 sparkfleet:models/{name}/v1 /tmp/{name}; rm -rf /tmp/{name}")
    res["single_stream_one_node_s"] = time.monotonic() - t
    res["nodes"] = len(compute)
    for n in compute:
        ssh(n, f"rm -rf /models/{name}")
    print(json.dumps(res))
    print(f"| data | sync to 1 node (incl. Ansible) | sync to all {len(compute)} compute nodes | single-stream download, 1 node |")
    print("| --- | --- | --- | --- |")
    print(f"| {a.mb} MB | {res['sync_one_node_s']:.1f} s ({a.mb / res['sync_one_node_s']:.0f} MB/s) | "
          f"{res['sync_all_nodes_s']:.1f} s ({a.mb * len(compute) / res['sync_all_nodes_s']:.0f} MB/s aggregate) | "
          f"{res['single_stream_one_node_s']:.1f} s ({a.mb / res['single_stream_one_node_s']:.0f} MB/s) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
