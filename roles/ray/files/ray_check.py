"""The Ray cluster as the head sees it: every expected node alive, and a task placed on each node (by its
sparkfleet-host-<name> resource) returning that node's host name. Prints JSON; exit 0 when everything passed.

    <venv>/bin/python ray_check.py [--address HOST:PORT] [--wait SECONDS] NAME=IP [NAME=IP ...]
"""
import argparse
import json
import os
import socket
import sys
import time

# Ray's token authentication: the same settings as the node's Ray processes (the unit's environment file), read before
# ray is imported. The token itself stays in its root-only file (RAY_AUTH_TOKEN_PATH).
ENV_FILE = "/etc/sparkfleet/ray.env"
if os.path.exists(ENV_FILE):
    with open(ENV_FILE) as f:
        for line in f:
            k, sep, v = line.strip().partition("=")
            if sep and k.startswith("RAY_AUTH_"):
                os.environ.setdefault(k, v)

import ray  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wait", type=float, default=0, help="wait up to this long for every node to join")
    ap.add_argument("--task-timeout", type=float, default=60)
    ap.add_argument("--address", default="auto", help="the head's GCS address")
    ap.add_argument("expect", nargs="+")
    a = ap.parse_args()
    expect = dict(e.split("=", 1) for e in a.expect)
    deadline = time.monotonic() + a.wait
    # Right after a (re)start the head's GCS is not up yet: connecting is retried until the deadline.
    while True:
        try:
            ray.init(address=a.address, logging_level="ERROR", log_to_driver=False)
            break
        except (ConnectionError, RuntimeError) as e:
            if time.monotonic() >= deadline:
                print(json.dumps({"ok": False, "error": "no Ray cluster at %s: %s" % (a.address, str(e)[:200])}))
                return 1
            time.sleep(2)
    while True:
        alive = {n["NodeManagerAddress"]: n for n in ray.nodes() if n.get("Alive")}
        missing = [name for name, ip in expect.items() if ip not in alive]
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(2)

    @ray.remote(num_cpus=0)
    def where():
        return socket.gethostname()

    nodes, pending = {}, {}
    for name, ip in sorted(expect.items()):
        nodes[name] = {"ip": ip, "alive": ip in alive, "hostname": None}
        if ip in alive:
            pending[name] = where.options(resources={"sparkfleet-host-" + name: 0.001}).remote()
    for name, ref in pending.items():
        try:
            nodes[name]["hostname"] = ray.get(ref, timeout=a.task_timeout)
        except Exception as e:  # a node that cannot run a task is reported, not raised
            nodes[name]["error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
    extra = sorted(ip for ip in alive if ip not in set(expect.values()))
    ok = all(n["alive"] and n["hostname"] for n in nodes.values())
    print(json.dumps({"ok": ok, "ray_version": ray.__version__, "nodes": nodes, "unexpected": extra}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
