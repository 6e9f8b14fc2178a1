"""Inference layer on the converged lab, for real: a Ray cluster of every node over the fabric, its ports and
only its ports reachable, the gateway's 503 and its rate limit (fleet consistency naming a planted version:
test_validate.py)."""
from __future__ import annotations

import json
import re

from labtools import INV, INVENTORY, NODES, OUTSIDERS, addr, playbook, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
VENV = "/opt/sparkfleet/inference"
# services.yml: what the firewall opens for Ray (and the ray role passes to `ray start`).
HEAD_PORTS = {6379, 8265, 10001}
NODE_PORTS = set(range(6380, 6386))
WORKER_PORTS = range(52000, 53001)


def data_ip(h):
    return (INV["hosts"][h].get("sparkfleet_fabric_ips") or [addr(h)])[0]


# An admin's Ray client on a node: the token settings of the node's Ray processes (README, "Ray's token"), as root.
RAY_ENV = "set -a; . /etc/sparkfleet/ray.env; set +a;"


def ray_check(wait=60):
    expect = " ".join(f"{n}={data_ip(n)}" for n in NODES)
    res = ssh(CONTROL, f"{VENV}/bin/python /usr/local/lib/sparkfleet/ray_check.py --wait {wait} {expect}",
              check=False, timeout=wait + 120)
    return res, json.loads(res.stdout.strip().splitlines()[-1])


def test_every_node_joins_ray_over_the_fabric_and_runs_a_task_placed_on_it():
    res, data = ray_check()
    assert res.returncode == 0 and data["ok"], res.stdout + res.stderr
    for n in NODES:
        node = data["nodes"][n]
        # The node resource put the task on that node: it answers with its own host name, at its fabric address.
        assert node["alive"] and node["hostname"] == n and node["ip"] == data_ip(n), node
    assert data["unexpected"] == []
    status = ssh(CONTROL, f"{RAY_ENV} {VENV}/bin/ray status --address {data_ip(CONTROL)}:6379", timeout=60).stdout
    assert len(re.findall(r"^ 1 node_", status, re.M)) == len(NODES), status
    # NCCL/GLOO in every Ray process (and the vLLM workers Ray starts) go over the fabric, not the management port.
    for n in NODES:
        env = ssh(n, "cat /etc/sparkfleet/ray.env").stdout
        assert "NCCL_SOCKET_IFNAME=enp1s0f0np0,enP2p1s0f0np0" in env and "GLOO_SOCKET_IFNAME=enp1s0f0np0" in env
        assert f"VLLM_HOST_IP={data_ip(n)}" in env


def test_ray_refuses_a_caller_without_its_token_and_runs_jobs_unprivileged():
    """A cluster user on a compute node reaches the head's job API (the firewall lets cluster nodes in) and asks it to
    run `id -u`: refused without the token, a file only Ray's user and root read, in no unit or environment file. An
    admin's job, through the documented path (sudo sparkfleet-ray-job), runs as Ray's system user; no Ray process on
    any node runs as root."""
    node = NODES[-1]
    submit = (f"runuser -u spark -- curl -s -o /dev/null -w '%{{http_code}}' --max-time 20 -X POST "
              f"-H 'Content-Type: application/json' -d '{{\"entrypoint\": \"id -u\"}}' "
              f"http://{data_ip(CONTROL)}:8265/api/jobs/")
    assert ssh(node, submit).stdout.strip() in ("401", "403")
    token = ssh(node, "stat -c '%a %U' /etc/sparkfleet/ray-auth-token; cat /etc/sparkfleet/ray-auth-token").stdout.split()
    assert token[:2] == ["400", "sparkfleet-ray"] and len(token[2]) >= 32, token[:2]
    assert token[2] not in ssh(node, "cat /etc/sparkfleet/ray.env; systemctl cat sparkfleet-ray").stdout
    assert ssh(node, "runuser -u spark -- cat /etc/sparkfleet/ray-auth-token", check=False).returncode != 0
    # The documented path: refused to the cluster user (no token for it), and an admin's job runs unprivileged.
    denied = ssh(node, "runuser -u spark -- sparkfleet-ray-job list", check=False)
    assert denied.returncode != 0 and "run it with sudo" in denied.stderr, denied.stdout + denied.stderr
    job = ssh(node, "sparkfleet-ray-job submit -- id -un", check=False, timeout=180)
    assert job.returncode == 0 and "sparkfleet-ray" in [ln.strip() for ln in job.stdout.splitlines()], (
        job.stdout[-2000:] + job.stderr)
    # The journal names who asked: the admin behind sudo (the lab's tests log in as sparkadmin and use sudo).
    assert "user=sparkadmin ray job submit -- id -un" in ssh(node, "journalctl -t sparkfleet-ray-job --no-pager -o cat | tail -3").stdout
    for n in NODES:
        procs = ssh(n, "ps -eo user:20,args --no-headers | grep -E 'raylet|gcs_server|ray/dashboard|ray::|ray start' "
                       "| grep -v grep", check=False).stdout.splitlines()
        assert procs and all(p.split()[0] == "sparkfleet-ray" for p in procs), (n, procs)


RAY_PROCS = re.compile(r'"(raylet|gcs_server|python|ray::[A-Za-z]+)"')


def listening(h):
    """{port: address} of the TCP sockets Ray's processes listen on, loopback excluded."""
    ports = {}
    for line in ssh(h, "ss -ltnpH").stdout.splitlines():
        f = line.split()
        ip, _, port = f[3].rpartition(":")
        if ip.strip("[]") not in ("127.0.0.1", "::1") and RAY_PROCS.search(" ".join(f[5:])):
            ports[int(port)] = ip
    return ports


PROBE = r"""
import json, socket, sys, concurrent.futures as cf
def probe(t):
    try:
        socket.create_connection((t[0], t[1]), timeout=2).close(); return True
    except OSError:
        return False
targets = json.loads(sys.argv[1])
with cf.ThreadPoolExecutor(16) as ex:
    print(json.dumps([[*t, ok] for t, ok in zip(targets, ex.map(probe, targets))]))
"""


HOLD = r"""
import sys, time, ray
ray.init(address="auto", logging_level="ERROR", log_to_driver=False)
@ray.remote(num_cpus=0)
class Hold:
    def ping(self):
        return 1
actors = [Hold.options(resources={"sparkfleet-host-" + n: 0.001}).remote() for n in sys.argv[1:]]
ray.get([a.ping.remote() for a in actors], timeout=60)
print("ready", flush=True)
time.sleep(80)
"""


def test_ray_ports_are_the_only_ones_open_between_nodes_and_closed_to_the_outsider():
    """The reachability matrix on Ray's real listeners: every port a Ray process listens on is probed from every
    other node and from a host outside the cluster. Declared ports (services.yml) are open between nodes on the
    fabric and management addresses; anything Ray opens beyond them (the dashboard's and autoscaler's own gRPC
    ports) is closed, and the outsider reaches none of them."""
    # An actor on every node (a driver held for a minute), so a worker port is listening on each one too.
    ssh(CONTROL, "cat > /tmp/hold.py <<'EOF'\n" + HOLD + "\nEOF\n"
                 f"rm -f /tmp/hold.out; {RAY_ENV} nohup timeout 90 {VENV}/bin/python /tmp/hold.py {' '.join(NODES)} > /tmp/hold.out 2>&1 &")
    ssh(CONTROL, "for i in $(seq 60); do grep -q ready /tmp/hold.out && exit 0; sleep 1; done; cat /tmp/hold.out; exit 1",
        timeout=90)
    declared = {}
    targets = []
    for d in NODES:
        allowed = NODE_PORTS | set(WORKER_PORTS) | (HEAD_PORTS if d == CONTROL else set())
        ports = listening(d)
        assert {6380, 6381} <= set(ports), (d, ports)  # node manager, object manager
        for port, bound in ports.items():
            declared[port, d] = port in allowed
            # Sockets bound to one address (Ray's agents bind the node IP) are probed there only.
            ips = sorted({addr(d), data_ip(d)}) if bound in ("0.0.0.0", "*", "[::]") else [bound]
            targets += [[ip, port, d] for ip in ips]
    assert HEAD_PORTS <= {p for p, d in declared if d == CONTROL}
    for n in NODES:
        assert any(p in WORKER_PORTS for p, d in declared if d == n), f"{n}: no Ray worker listens in the worker range"
    mismatches = []
    for src in NODES + OUTSIDERS:
        probe = [[ip, port] for ip, port, d in targets if d != src]
        res = ssh(src, "cat > /tmp/probe.py <<'EOF'\n" + PROBE + "\nEOF\n" f"python3 /tmp/probe.py '{json.dumps(probe)}'",
                  timeout=120)
        owner = {(ip, port): d for ip, port, d in targets}
        for ip, port, ok in json.loads(res.stdout):
            want = src in NODES and declared[port, owner[ip, port]]
            if ok != want:
                mismatches.append(f"{src} -> {owner[ip, port]} {ip}:{port}: {'open' if ok else 'closed'}, want "
                                  f"{'open' if want else 'closed'} ({'declared' if declared[port, owner[ip, port]] else 'undeclared'})")
    assert not mismatches, "\n".join(mismatches)


# The gateway's key for the lab's default team (generated once into the lab inventory's secrets folder).
GW_KEY = (INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_gateway_key_default").read_text().strip()


def curl(path, host="127.0.0.1"):
    out = ssh(CONTROL, f"curl -s -H 'Authorization: Bearer {GW_KEY}' -o /tmp/gw.body -w '%{{http_code}}' "
                       f"http://{host}:8090{path}; echo; cat /tmp/gw.body").stdout
    code, _, body = out.partition("\n")
    return int(code), body


def test_gateway_answers_and_says_clearly_that_no_backend_is_healthy():
    code, body = curl("/gateway/health")
    assert code == 200 and json.loads(body)["status"] == "ok"
    # The lab has no GPU, so no vLLM: the API answers 503 with a JSON error naming the problem.
    code, body = curl("/v1/models", host=addr(CONTROL))
    assert code == 503, body
    err = json.loads(body)["error"]
    assert "no healthy inference backend" in err["message"] and err["code"] == 503
    last = json.loads(ssh(CONTROL, "tail -n 1 /var/log/nginx/sparkfleet-gateway.log").stdout)
    assert last["uri"] == "/v1/models" and last["status"] == 503 and isinstance(last["request_time"], float)


LOAD = r"""
import concurrent.futures as cf, json, sys, time, urllib.request, urllib.error
def one(_):
    try:
        req = urllib.request.Request("http://127.0.0.1:8090/v1/models", headers={"Authorization": "Bearer " + sys.argv[3]})
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return -1
t = time.monotonic()
with cf.ThreadPoolExecutor(int(sys.argv[2])) as ex:
    codes = list(ex.map(one, range(int(sys.argv[1]))))
print(json.dumps({"codes": {str(c): codes.count(c) for c in set(codes)}, "seconds": time.monotonic() - t}))
"""


def test_gateway_rate_limit_sheds_load_with_429_under_a_bounded_local_burst():
    # 300 requests from 16 threads on the gateway's own node (loopback): far over 20 r/s with a burst of 40.
    res = ssh(CONTROL, "cat > /tmp/load.py <<'EOF'\n" + LOAD + f"\nEOF\npython3 /tmp/load.py 300 16 {GW_KEY}", timeout=180)
    data = json.loads(res.stdout)
    codes = {int(k): v for k, v in data["codes"].items()}
    assert set(codes) <= {429, 503} and sum(codes.values()) == 300, codes
    allowed = 40 + 20 * data["seconds"] + 20  # burst + rate over the run, with a margin
    assert codes.get(429, 0) >= 300 - allowed and codes.get(503, 0) >= 1, (codes, data["seconds"])
    auth = f"-H 'Authorization: Bearer {GW_KEY}'"
    body = ssh(CONTROL, f"curl -s {auth} http://127.0.0.1:8090/v1/models -o /dev/null; "
                        f"for i in $(seq 80); do curl -s {auth} http://127.0.0.1:8090/v1/models; done | grep -m1 rate_limited").stdout
    assert json.loads(body)["error"]["code"] == 429
    # The access log has the request times the validation report turns into P50/P95/P99.
    res = playbook("playbooks/validate.yml", timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
    report = json.loads((__import__("labtools").PROJECT / "reports/validate/latest.json").read_text())
    lat = [c for c in report["hosts"][CONTROL] if c["check"] == "gateway_latency"]
    assert lat and lat[0]["status"] == "pass" and "P95" in lat[0]["detail"], lat
    fleet = [c for c in report["hosts"][NODES[1]] if c["check"] == "fleet_version"]
    assert {c["target"] for c in fleet} >= {"python", "ray"} and all(c["status"] == "pass" for c in fleet
                                                                     if c["target"] in ("python", "ray")), fleet
    # Driver and CUDA versions came from the persona's stand-ins: `persona`, never `pass`.
    assert all(c["status"] == "persona" for c in fleet if c["target"] in ("driver", "cuda")), fleet
