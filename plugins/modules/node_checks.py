#!/usr/bin/python
# One task runs every per-node validation check (fewer, fatter tasks: ../shared/notes/performance.md).
from __future__ import annotations

DOCUMENTATION = r"""
module: node_checks
short_description: Run the per-node validation checks in one call
description:
  - Checks services, the firewall table, time sync, name resolution, SSH trust to peers, fabric MTU to peers
    (ping with fragmentation forbidden) and GPU access from a container, in parallel, each bounded in time.
  - Every check returns C(pass), C(fail) or C(not_checked) with the reason; a check that cannot run is never a pass.
  - Never changes anything; supports check mode. Never fails the task for failed checks (the caller decides).
version_added: "0.1.0"
author: sparkfleet developers
options:
  services:
    description: systemd units that must be active.
    type: list
    elements: str
    default: []
  services_optional:
    description: Units checked only where they are installed and not skipped by a unit condition (listed as not_checked otherwise).
    type: list
    elements: str
    default: []
  nft_table:
    description: nftables table that must be loaded (C(FAMILY NAME)); empty to skip.
    type: str
    default: ""
  time_sync:
    description: Check chrony's sync state.
    type: bool
    default: true
  max_time_offset_s:
    description: Largest clock offset accepted.
    type: float
    default: 0.1
  time_sync_wait_s:
    description: Seconds to wait (chronyc waitsync) for a node found out of sync to sync again before it fails.
    type: int
    default: 0
  names:
    description: Host names and the address each must resolve to.
    type: dict
    default: {}
  ssh_user:
    description: User whose passwordless SSH to the peers is checked.
    type: str
    default: ""
  ssh_peers:
    description: Names to reach over SSH as I(ssh_user).
    type: list
    elements: str
    default: []
  mtu_peers:
    description: Peers to ping with the full MTU and fragmentation forbidden, each C({name, ip, mtu}).
    type: list
    elements: dict
    default: []
  bandwidth_peers:
    description: Peers to measure TCP bandwidth to with iperf3 (an iperf3 server must listen on them), each C({name, ip}).
      Measured one after the other, each for I(bandwidth_seconds).
    type: list
    elements: dict
    default: []
  bandwidth_seconds:
    description: Seconds per iperf3 measurement.
    type: int
    default: 2
  bandwidth_interface:
    description: Interface whose link rate (sysfs speed) the results are compared with.
    type: str
    default: ""
  min_bandwidth_share:
    description: Fail a pair below this share of the link rate (0-1; only where the rate is known).
    type: float
    default: 0.0
  gpu_container_image:
    description: Image for the container GPU check (C(nvidia-smi -L) inside C(docker run --gpus all)); empty to skip.
    type: str
    default: ""
  expected_gpus:
    description: GPUs the container must see (0 = no GPU on this node, the check is not_checked).
    type: int
    default: 0
  versions_python:
    description: The inference environment's interpreter; its Python, Ray, vLLM, torch and NCCL versions are returned
      in C(versions) for the fleet consistency check (NCCL from the environment, else the system's libnccl2).
    type: str
    default: ""
  ray_expect:
    description: On the Ray head, the nodes (C(NAME=IP)) that must be alive in the Ray cluster and run a task each.
    type: list
    elements: str
    default: []
  ray_known:
    description: >-
      Every cluster node as NAME=IP, in this run or not: a node alive in Ray that is one of them but not in
      I(ray_expect) (outside --limit, or dropped out of the run) is no unexpected node.
    type: list
    elements: str
    default: []
  ray_check:
    description: The ray role's check script (run with I(versions_python)).
    type: str
    default: /usr/local/lib/sparkfleet/ray_check.py
  http_checks:
    description: >-
      URLs that must answer, each C({name, url, status}) (the status expected, default 200), or with
      C(not_checked) set to a reason, reported as not checked. C(status_without) C({path, status}) expects another
      status while a local file is absent (the gateway answers 503 where no vLLM unit is installed). C(bearer=true)
      sends I(http_bearer) as an C(Authorization) header (C(Bearer) and the key).
    type: list
    elements: dict
    default: []
  http_bearer:
    description: The key for http checks with C(bearer) (the gateway's; never logged).
    type: str
  checksums:
    description: Files whose sha256 to return in I(checksums) (null where absent), e.g. the munge key the validate role
      compares across nodes. Read as root; the content never leaves the node.
    type: list
    elements: path
    default: []
  gateway_log:
    description: The gateway's JSON access log; the P50/P95/P99 request times of its last 10000 requests are reported.
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Validate the node
  sparkfleet.cluster.node_checks:
    services: [ssh, sparkfleet-firewall]
    nft_table: inet sparkfleet
    names: {spark-02: 10.0.0.12, spark-02-fab: 10.1.0.12}
    ssh_user: spark
    ssh_peers: [spark-02, spark-02-fab]
    mtu_peers: [{name: spark-02-fab, ip: 10.1.0.12, mtu: 9000}]
  register: checks
"""

RETURN = r"""
checks:
  description: One entry per check, C({check, target, status, detail}); status is pass, fail or not_checked.
  returned: always
  type: list
  elements: dict
versions:
  description: Versions for the fleet consistency check (C(python), C(ray), C(vllm), C(torch), C(nccl); null where absent).
  returned: always
  type: dict
checksums:
  description: The sha256 of each file of I(checksums) (null where absent).
  returned: always
  type: dict
failed_checks:
  description: Number of checks with status fail.
  returned: always
  type: int
"""

import hashlib
import json
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.sparkfleet.cluster.plugins.module_utils.inference import latency_percentiles

# A distribution without readable metadata (a half-written .dist-info) is skipped, not a traceback.
_VERSIONS = ("import importlib.metadata as m, json, platform\n"
             "d = {(x.metadata['Name'] or '').lower().replace('_', '-'): x.version for x in m.distributions()}\n"
             "nccl = [v for k, v in sorted(d.items()) if k.startswith('nvidia-nccl-cu')]\n"
             "print(json.dumps({'python': platform.python_version(), 'ray': d.get('ray'), 'vllm': d.get('vllm'),"
             " 'torch': d.get('torch'), 'nccl': nccl[0] if nccl else None}))")


def result(check, target, status, detail=""):
    return {"check": check, "target": target, "status": status, "detail": detail}


# ssh's answers when no login was tried to the end: the server was busy or the check ran out of time.
_SSH_TRANSIENT = ("kex_exchange_identification", "Connection closed by", "Connection reset by", "Connection timed out",
                  "Session terminated", "banner exchange")


def transient_ssh_failure(rc, text):
    """A timeout (rc 124/137 from timeout(1)) or a connection dropped before authentication: not a trust failure."""
    return rc in (124, 137) or (rc == 255 and any(s in text for s in _SSH_TRANSIENT))


class Checker:
    def __init__(self, module, ssh_concurrency=6):
        self.m = module
        self.bearer = (getattr(module, "params", None) or {}).get("http_bearer")
        self.ssh_slots = threading.BoundedSemaphore(ssh_concurrency)

    def run(self, argv, timeout=20):
        rc, out, err = self.m.run_command(["timeout", str(timeout)] + argv)
        return rc, out or "", err or ""

    def run_until(self, argv, ok, tries=3):
        """run(argv) until ok(rc, out) or TRIES calls; the last answer. Under load or emulation (seen on qemu-user arm64
        lab nodes, where checks run in threads) a read-only call now and then times out (rc 124) or answers nothing:
        ask again before judging. A real answer (a unit missing, a table open) is the same each time, and quick."""
        for _ in range(tries):
            rc, out, err = self.run(argv)
            if ok(rc, out):
                break
        return rc, out, err

    def service(self, unit, optional=False):
        def props_of(out):
            return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

        rc, out, err = self.run_until(["systemctl", "show", unit, "-p", "LoadState,ActiveState,SubState,ConditionResult"],
                                      lambda rc, out: rc == 0 and "LoadState" in props_of(out))
        props = props_of(out)
        if rc != 0 or "LoadState" not in props:
            # systemctl itself failed or timed out: that says nothing about the unit, so never "not installed".
            return result("service", unit, "fail", "systemctl show failed (rc %s): %s" % (rc, (err or out).strip()[:200]))
        if props.get("LoadState") != "loaded":
            return result("service", unit, "not_checked" if optional else "fail", "unit not installed")
        if props.get("ActiveState") == "active":
            return result("service", unit, "pass", props.get("SubState", ""))
        if props.get("ConditionResult") == "no":
            return result("service", unit, "not_checked", "unit skipped itself: a start condition is not met "
                          "(for chrony in a container: no CAP_SYS_TIME)")
        return result("service", unit, "fail", "state %s/%s" % (props.get("ActiveState"), props.get("SubState")))

    def nft(self, table):
        if not self.m.get_bin_path("nft"):
            return result("firewall", table, "fail", "nft not installed")
        rc, out, err = self.run_until(["nft", "list", "table"] + table.split(), lambda rc, out: rc == 0 and "policy drop" in out)
        if rc == 124:
            return result("firewall", table, "fail", "nft list table timed out 3 times (20 s each)")
        if rc != 0:
            return result("firewall", table, "fail", "table not loaded: %s" % (err.strip() or out.strip())[:200])
        if "policy drop" not in out:
            return result("firewall", table, "fail", "no default-drop input chain")
        return result("firewall", table, "pass", "%d rules" % sum(1 for line in out.splitlines() if "accept" in line))

    def tracking(self):
        rc, out, err = self.run(["chronyc", "-n", "tracking"])
        fields = dict((k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in out.splitlines()))
        return rc, fields, (err or out).strip()

    def time_sync(self, max_offset, wait_s=0):
        if not self.m.get_bin_path("chronyc"):
            return result("time_sync", "chrony", "fail", "chronyc not installed")
        rc, out, _ = self.run(["systemctl", "is-active", "chrony"])
        if out.strip() != "active":
            return result("time_sync", "chrony", "not_checked", "chronyd not running (%s)" % out.strip())
        rc, fields, text = self.tracking()
        waited = ""
        if rc == 0 and fields.get("Leap status") not in (None, "Normal") and wait_s > 0:
            # Out of sync just now (chronyd restarted, or it dropped its samples after a clock jump): give it its next
            # polls (2 s apart, up to wait_s) before calling it a failure. waitsync only reads; it changes nothing.
            tries, started = max(1, wait_s // 2), time.monotonic()
            self.run(["chronyc", "waitsync", str(tries), "0", "0", "2"], timeout=wait_s + 10)
            rc, fields, text = self.tracking()
            waited = " (in sync after %.0f s of waiting)" % (time.monotonic() - started)
        if rc != 0 or "Leap status" not in fields:
            return result("time_sync", "chrony", "fail", text[:200])
        if fields["Leap status"] != "Normal":
            # The sources say why (none reachable, none selectable): the detail a person needs first.
            _, sources, _ = self.run(["chronyc", "-n", "sources"])
            lines = [" ".join(line.split()) for line in sources.splitlines() if line[:1] in "^=#" and line[1:2] in "*+-?x~"]
            return result("time_sync", "chrony", "fail", "not synchronised (leap status %s%s); sources: %s" % (
                fields["Leap status"], ", after %d s" % wait_s if wait_s > 0 else "", "; ".join(lines) or "none")[:400])
        try:
            offset = abs(float(fields.get("System time", "0").split()[0]))
        except ValueError:
            offset = 0.0
        if offset > max_offset:
            return result("time_sync", "chrony", "fail", "offset %.3f s > %.3f s" % (offset, max_offset))
        return result("time_sync", "chrony", "pass", "source %s, offset %.6f s%s" % (fields.get("Reference ID", "?"), offset, waited))

    def resolve(self, name, want):
        try:
            got = socket.getaddrinfo(name, None, socket.AF_INET)[0][4][0]
        except OSError as e:
            return result("resolve", name, "fail", str(e))
        return result("resolve", name, "pass" if got == want else "fail", "%s (want %s)" % (got, want))

    def ssh(self, user, peer):
        # A few logins at a time (6: a 3-node cluster's all at once): every node checks every peer by every name at
        # once; on 8 lab nodes 16 threads each timed logins out, and sshd's MaxStartups (10:30:100) drops connections
        # beyond 10 unauthenticated ones. A login that timed out or was dropped before authentication is asked again;
        # a refused key or host key fails at once.
        for attempt in range(3):
            with self.ssh_slots:
                rc, out, err = self.run(["runuser", "-u", user, "--", "ssh", "-o", "BatchMode=yes", "-o",
                                         "ConnectTimeout=10", peer, "hostname"], timeout=30)
            if rc == 0:
                return result("ssh_trust", peer, "pass", "as %s -> %s" % (user, out.strip()))
            if not transient_ssh_failure(rc, err + out):
                break
            time.sleep(1 + attempt)
        return result("ssh_trust", peer, "fail", "as %s: %s" % (user, (err or out).strip()[:200] or "exit %d" % rc))

    def mtu(self, peer):
        size = int(peer["mtu"]) - 28  # IPv4 + ICMP headers
        rc, out, err = self.run(["ping", "-c", "2", "-i", "0.2", "-W", "1", "-M", "do", "-s", str(size), peer["ip"]], timeout=10)
        name = "%s (%s)" % (peer.get("name", peer["ip"]), peer["ip"])
        if rc == 0:
            return result("fabric_mtu", name, "pass", "%d-byte packets, fragmentation forbidden" % peer["mtu"])
        text = (out + err).strip().splitlines()
        hint = next((t for t in text if "mtu" in t.lower() or "too long" in t.lower()), text[-1] if text else "")
        return result("fabric_mtu", name, "fail", "no %d-byte path: %s" % (peer["mtu"], hint[:200]))

    def link_gbps(self, iface):
        try:
            with open("/sys/class/net/%s/speed" % iface) as f:
                mbps = int(f.read().strip())
            return mbps / 1000.0 if mbps > 0 else None
        except (OSError, ValueError):
            return None  # virtual links (veth) have no rate

    def bandwidth(self, peers, seconds, iface, min_share):
        if not peers:
            return []
        if not self.m.get_bin_path("iperf3"):
            return [result("bandwidth", p.get("name", p["ip"]), "not_checked", "iperf3 not installed") for p in peers]
        rate = self.link_gbps(iface) if iface else None
        out = []
        for p in peers:  # one at a time: a matrix of concurrent flows would measure contention
            name = "%s (%s)" % (p.get("name", p["ip"]), p["ip"])
            rc, stdout, err = self.run(["iperf3", "-c", p["ip"], "-t", str(seconds), "-J", "--connect-timeout", "3000"],
                                       timeout=seconds + 15)
            try:
                data = json.loads(stdout)
                gbps = data["end"]["sum_received"]["bits_per_second"] / 1e9
            except (ValueError, KeyError, TypeError):
                msg = (json.loads(stdout).get("error") if stdout.strip().startswith("{") else None) or err.strip() or stdout.strip()
                out.append(result("bandwidth", name, "fail", "iperf3: %s" % str(msg)[:200]))
                continue
            if rate:
                share = gbps / rate
                ok = share >= min_share
                out.append(result("bandwidth", name, "pass" if ok and gbps > 0 else "fail",
                                  "%.1f Gb/s, %.0f%% of the %.0f Gb/s link" % (gbps, 100 * share, rate),
                                  ) | {"gbps": round(gbps, 2), "share": round(share, 3)})
            else:
                out.append(result("bandwidth", name, "pass" if gbps > 0 else "fail",
                                  "%.1f Gb/s (link rate unknown: virtual or unreported)" % gbps) | {"gbps": round(gbps, 2),
                                                                                                     "share": None})
        return out

    def gpu_container(self, image, expected):
        if expected <= 0:
            return result("container_gpu", image or "-", "not_checked", "no NVIDIA GPU on this node")
        if not self.m.get_bin_path("docker"):
            return result("container_gpu", image, "not_checked", "docker not installed")
        if not image:
            return result("container_gpu", "-", "not_checked", "no CUDA image to run (validate_gpu_container_image is empty)")
        rc, out, err = self.run(["docker", "run", "--rm", "--gpus", "all", image, "nvidia-smi", "-L"], timeout=180)
        seen = sum(1 for line in out.splitlines() if line.startswith("GPU "))
        if rc != 0:
            return result("container_gpu", image, "fail", (err or out).strip()[-300:])
        return result("container_gpu", image, "pass" if seen == expected else "fail", "%d of %d GPUs visible" % (seen, expected))


    def versions(self, python):
        out = {"python": None, "ray": None, "vllm": None, "torch": None, "nccl": None}
        if python and os.access(python, os.X_OK):
            # 120 s: an emulated aarch64 node under CI load took over 30 s to list the venv's distributions. Asked
            # twice: one failed probe on a loaded control node (lifecycle, CI) is not a version.
            for _ in range(2):
                rc, stdout, err = self.run([python, "-c", _VERSIONS], timeout=120)
                try:
                    got = json.loads(stdout) if rc == 0 else None
                except ValueError:
                    got, rc = None, rc or 1
                if got is not None:
                    out.update(got)
                    break
            # Anything but its one JSON line (a venv being rebuilt, a killed probe) is named as such, with its last
            # words, not as "not installed".
            if got is None:
                why = (err.strip().splitlines() or [""])[-1][:160]
                out.update({k: "unreadable (the probe exited %d%s)" % (rc, ": " + why if why else "")
                            for k in ("python", "ray", "vllm", "torch")})
        if not out["nccl"]:
            rc, stdout, _ = self.run(["dpkg-query", "-W", "-f", "${Version}", "libnccl2"])
            out["nccl"] = stdout.strip().split("+")[0] or None if rc == 0 else None
        return out

    def ray_cluster(self, python, script, expect, known=None):
        if not (python and os.access(python, os.X_OK)):
            return [result("ray_cluster", "-", "fail", "no inference environment (%s)" % python)]
        rc, out, err = self.run([python, script, "--wait", "20"] + expect, timeout=150)
        try:
            data = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return [result("ray_cluster", "-", "fail", "ray_check: %s" % (err or out).strip()[-300:])]
        # No cluster to ask (the head down, Ray not starting): ray_check says so instead of listing nodes.
        if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
            why = data.get("error") if isinstance(data, dict) else None
            return [result("ray_cluster", "-", "fail", "ray_check: %s" % (why or (err or out).strip()[-300:]))]
        checks = []
        for name, n in sorted(data["nodes"].items()):
            target = "%s (%s)" % (name, n["ip"])
            if not n["alive"]:
                checks.append(result("ray_cluster", target, "fail", "not alive in the Ray cluster"))
            elif not n.get("hostname"):
                checks.append(result("ray_cluster", target, "fail", "a task placed there did not run: %s" % n.get("error", "?")))
            else:
                checks.append(result("ray_cluster", target, "pass", "alive; a task placed there ran on %s (Ray %s)"
                                     % (n["hostname"], data.get("ray_version"))))
        # A cluster node outside this run (--limit, or dropped out: unreachable) may well be alive in Ray: not a
        # stranger. Any other node is.
        known = {e.split("=", 1)[-1] for e in known or []}
        strangers = [ip for ip in data.get("unexpected") or [] if ip not in known]
        if strangers:
            checks.append(result("ray_cluster", "unexpected nodes", "fail", ", ".join(strangers)))
        return checks

    def http(self, spec):
        name, want = spec.get("name", spec["url"]), int(spec.get("status", 200))
        without = spec.get("status_without") or {}
        if without.get("path") and not os.path.exists(without["path"]):
            want = int(without["status"])
        if spec.get("not_checked"):
            return result("http", name, "not_checked", spec["not_checked"])
        req = Request(spec["url"])
        if spec.get("bearer") and self.bearer:
            req.add_header("Authorization", "Bearer " + self.bearer)
        try:
            with urlopen(req, timeout=10) as r:
                code, body = r.status, r.read(300)
        except HTTPError as e:
            code, body = e.code, e.read(300)
        except (URLError, OSError) as e:
            return result("http", name, "fail", "%s: %s" % (spec["url"], e))
        detail = "%s answered %d: %s" % (spec["url"], code, body.decode("utf-8", "replace").strip()[:160])
        return result("http", name, "pass" if code == want else "fail", detail if code == want else detail + " (want %d)" % want)

    def gateway_latency(self, path):
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.path.getsize(path) - 4 * 1024 * 1024))
                lines = f.read().decode("utf-8", "replace").splitlines()[-10000:]
        except OSError as e:
            return result("gateway_latency", path, "not_checked", "no access log: %s" % e)
        p = latency_percentiles(lines)
        if not p["count"]:
            return result("gateway_latency", path, "not_checked", "no requests logged yet")
        return result("gateway_latency", path, "pass", "P50 %.3f s, P95 %.3f s, P99 %.3f s over the last %d requests"
                      % (p["p50"], p["p95"], p["p99"], p["count"])) | {"percentiles": p}


def file_checksums(paths):
    out = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                out[path] = hashlib.sha256(f.read()).hexdigest()
        except FileNotFoundError:
            out[path] = None
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            services=dict(type="list", elements="str", default=[]),
            services_optional=dict(type="list", elements="str", default=[]),
            nft_table=dict(type="str", default=""),
            time_sync=dict(type="bool", default=True),
            max_time_offset_s=dict(type="float", default=0.1),
            time_sync_wait_s=dict(type="int", default=0),
            names=dict(type="dict", default={}),
            ssh_user=dict(type="str", default=""),
            ssh_peers=dict(type="list", elements="str", default=[]),
            mtu_peers=dict(type="list", elements="dict", default=[]),
            bandwidth_peers=dict(type="list", elements="dict", default=[]),
            bandwidth_seconds=dict(type="int", default=2),
            bandwidth_interface=dict(type="str", default=""),
            min_bandwidth_share=dict(type="float", default=0.0),
            gpu_container_image=dict(type="str", default=""),
            expected_gpus=dict(type="int", default=0),
            versions_python=dict(type="str", default=""),
            ray_expect=dict(type="list", elements="str", default=[]),
            ray_known=dict(type="list", elements="str", default=[]),
            ray_check=dict(type="str", default="/usr/local/lib/sparkfleet/ray_check.py"),
            http_checks=dict(type="list", elements="dict", default=[]),
            http_bearer=dict(type="str", no_log=True),
            gateway_log=dict(type="str", default=""),
            checksums=dict(type="list", elements="path", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    for peer in p["mtu_peers"]:
        if "ip" not in peer or not str(peer.get("mtu", "")).isdigit() or int(peer["mtu"]) < 576:
            module.fail_json(msg="mtu_peers: each entry needs ip and an mtu >= 576, got %r" % (peer,))
    c = Checker(module)
    jobs = [(c.service, u) for u in p["services"]] + [(lambda u: c.service(u, optional=True), u) for u in p["services_optional"]]
    if p["nft_table"]:
        jobs.append((c.nft, p["nft_table"]))
    if p["time_sync"]:
        jobs.append((lambda off: c.time_sync(off, p["time_sync_wait_s"]), p["max_time_offset_s"]))
    jobs += [(lambda kv: c.resolve(*kv), kv) for kv in sorted(p["names"].items())]
    if p["ssh_user"]:
        jobs += [(lambda peer: c.ssh(p["ssh_user"], peer), peer) for peer in p["ssh_peers"]]
    jobs += [(c.mtu, peer) for peer in p["mtu_peers"]]
    jobs.append((lambda _: c.gpu_container(p["gpu_container_image"], p["expected_gpus"]), None))
    jobs += [(c.http, spec) for spec in p["http_checks"]]
    if p["gateway_log"]:
        jobs.append((c.gateway_latency, p["gateway_log"]))
    with ThreadPoolExecutor(max_workers=16) as ex:
        versions = ex.submit(c.versions, p["versions_python"])
        ray = ex.submit(c.ray_cluster, p["versions_python"], p["ray_check"], p["ray_expect"], p["ray_known"]) \
            if p["ray_expect"] else None
        checks = list(ex.map(lambda job: job[0](job[1]), jobs))
        checks += ray.result() if ray else []
    # Bandwidth last and alone, so the other checks' traffic does not disturb it.
    checks += c.bandwidth(p["bandwidth_peers"], p["bandwidth_seconds"], p["bandwidth_interface"], p["min_bandwidth_share"])
    module.exit_json(changed=False, checks=checks, versions=versions.result(), checksums=file_checksums(p["checksums"]), failed_checks=sum(1 for x in checks if x["status"] == "fail"))


if __name__ == "__main__":
    main()
