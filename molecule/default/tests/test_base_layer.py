"""Base layer on real lab nodes: names, SSH trust, time config, sysctl, firewall policy, check mode."""
from __future__ import annotations

import json

import pytest

from labtools import INV, NODES, OUTSIDERS, addr, host, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")


def fabric_ip(h, i=0):
    return INV["hosts"][h]["sparkfleet_fabric_ips"][i]


@pytest.mark.parametrize("src", NODES)
def test_every_node_resolves_every_name(src):
    for dst in NODES:
        out = ssh(src, f"getent ahostsv4 {dst} | head -1; getent ahostsv4 {dst}-fab | head -1; "
                       f"getent ahostsv4 {dst}-fab1 | head -1").stdout.split("\n")
        assert out[0].split()[0] == addr(dst), f"{src}: {dst} -> {out[0]}"
        assert out[1].split()[0] == fabric_ip(dst), f"{src}: {dst}-fab -> {out[1]}"
        assert out[2].split()[0] == fabric_ip(dst, 1), f"{src}: {dst}-fab1 -> {out[2]}"


def test_ubuntu_127_0_1_1_line_is_disabled():
    """The lab plants Ubuntu's `127.0.1.1 HOSTNAME` line; it would make MPI/NCCL bind to loopback."""
    for n in NODES:
        hosts = host(n).file("/etc/hosts").content_string
        assert not [ln for ln in hosts.splitlines() if ln.startswith("127.0.1.1")], hosts
        assert "127.0.1.1" in hosts  # commented out with a note, not silently deleted


@pytest.mark.parametrize("src", NODES)
def test_cluster_user_ssh_to_every_node_without_prompt(src):
    targets = [n for dst in NODES for n in (dst, f"{dst}-fab", addr(dst))]
    script = "; ".join(f"echo {t}=$(sudo -u spark ssh -o BatchMode=yes -o ConnectTimeout=5 {t} hostname 2>&1)"
                       for t in targets)
    got = dict(line.split("=", 1) for line in ssh(src, script).stdout.strip().splitlines())
    expected = {t: dst for dst in NODES for t in (dst, f"{dst}-fab", addr(dst))}
    assert got == expected


def test_same_user_everywhere_and_sshd_hardened():
    for n in NODES:
        h = host(n)
        assert h.user("spark").uid == 2000 and h.group("spark").gid == 2000
        # The lab plants Ubuntu cloud-init's drop-in; ours must win over it.
        assert "PasswordAuthentication yes" in h.file("/etc/ssh/sshd_config.d/50-cloud-init.conf").content_string
        conf = h.run("sshd -T").stdout
        assert "passwordauthentication no" in conf and "kbdinteractiveauthentication no" in conf
        assert h.file("/home/spark/.ssh/id_ed25519").mode == 0o600
        assert h.sysctl("net.ipv4.ip_local_port_range") == "50000\t51000" or \
            h.run("cat /proc/sys/net/ipv4/ip_local_port_range").stdout.split() == ["50000", "51000"]


def test_chrony_control_serves_time_to_the_others():
    ctl = host(CONTROL).file("/etc/chrony/conf.d/sparkfleet.conf").content_string
    assert "local stratum 10" in ctl and f"allow {INV['vars']['sparkfleet_mgmt_cidr']}" in ctl
    for n in NODES:
        if n != CONTROL:
            conf = host(n).file("/etc/chrony/conf.d/sparkfleet.conf").content_string
            assert f"server {addr(CONTROL)} iburst minpoll 4 maxpoll 6 prefer" in conf and "local stratum" not in conf
        assert host(n).service("chrony").is_enabled and host(n).service("chrony").is_running
    # Real NTP over UDP 123 through the firewall: each node has heard the control node (reach register > 0).
    for n in NODES:
        if n != CONTROL:
            out = ssh(n, "for i in $(seq 20); do r=$(chronyc -n sources | awk -v a=%s '$2==a {print $5}'); "
                         "[ -n \"$r\" ] && [ \"$r\" != 0 ] && echo reach=$r && exit 0; sleep 1; done; chronyc -n sources; exit 1"
                      % addr(CONTROL), check=False, timeout=60)
            assert out.returncode == 0, f"{n} never heard {CONTROL}'s NTP server:\n{out.stdout}"


# ------------------------------------------------------------------ firewall reachability matrix
LISTEN = r"""
import socket, threading, sys, time
ports = [int(p) for p in sys.argv[1].split(',')]
def tcp(p):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(('0.0.0.0', p))
    except OSError as e:
        print(f'bind tcp/{p}: {e}', flush=True)  # a busy port reads as "closed" to the probe: say why
        return
    s.listen(64)
    s.settimeout(1)
    end = time.time() + 60
    while time.time() < end:
        try: c, _ = s.accept(); c.close()
        except OSError: pass
def udp(p):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', p)); s.settimeout(1)
    end = time.time() + 60
    while time.time() < end:
        try: d, a = s.recvfrom(100); s.sendto(d, a)
        except OSError: pass
for p in ports: threading.Thread(target=tcp, args=(p,), daemon=True).start()
for p in (sys.argv[2] if len(sys.argv) > 2 else '4791').split(','): threading.Thread(target=udp, args=(int(p),), daemon=True).start()
time.sleep(61)
"""
PROBE = r"""
import json, socket, sys, concurrent.futures as cf
targets = json.loads(sys.argv[1])
def probe(t):
    ip, port, proto = t
    try:
        if proto == 'tcp':
            socket.create_connection((ip, port), timeout=2).close(); return True
        # NTP gets a real client request (chrony answers it; the echo listener echoes it), other ports a byte.
        data = b'\x1b' + bytes(47) if port == 123 else b'x'
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(data, (ip, port))
        return len(s.recvfrom(100)[0]) > 0
    except OSError:
        return False
with cf.ThreadPoolExecutor(32) as ex:
    print(json.dumps([[*t, ok] for t, ok in zip(targets, ex.map(probe, targets))]))
"""
# NCCL_PORT is a port of the narrowed ephemeral range (50000-51000) that no socket on any node holds at test time:
# a fixed one can be the source port of a node's own outgoing connection, and then nothing can listen on it.
NCCL_PORT = 50500
TCP_PORTS = [22, NCCL_PORT, 6443, 10250, 9100, 12345]
# Ports published by containers (docker run -p) on one compute node: undeclared, and vLLM's declared 8000.
PUBLISHED_UNDECLARED, PUBLISHED_DECLARED = 18080, 8000
WEB = NODES[-1]
PUBLISH = ("test -n \"$(docker images -q sparkfleet/web:1)\" || { d=$(mktemp -d); mkdir -p $d/bin; cp /bin/busybox $d/bin/; "
           "tar -C $d -c . | docker import - sparkfleet/web:1 >/dev/null; rm -rf $d; }; docker rm -f pub1 pub2 >/dev/null 2>&1; "
           f"docker run -d --name pub1 -p {PUBLISHED_UNDECLARED}:80 sparkfleet/web:1 /bin/busybox httpd -f -p 80 >/dev/null && "
           f"docker run -d --name pub2 -p {PUBLISHED_DECLARED}:80 sparkfleet/web:1 /bin/busybox httpd -f -p 80 >/dev/null")


def allowed(src, dst, port, proto):
    """The policy, written independently of the role: who may reach which port."""
    node = src in NODES
    if proto == "udp" and port == 123:
        return node and dst == CONTROL  # air-gapped lab: the control node serves time to the nodes only
    if proto == "udp":
        return node  # RoCEv2 4791 between nodes only
    if port == PUBLISHED_UNDECLARED:
        return node  # a container's published port: cluster nodes only, nobody outside
    if port == PUBLISHED_DECLARED:
        # vLLM's port: a host listener answers the gateway's host only; published by a container (on WEB), the
        # firewall's rule for published ports lets cluster nodes in, as for any container.
        return node if dst == WEB else src == CONTROL
    if port == 22:
        return True  # management network (the outsider sits on it) and nodes
    if port == 9100:
        return True  # node_exporter: whole management network
    if port == NCCL_PORT:
        return node  # NCCL range: cluster nodes only
    if port in (6443, 10250):
        return False  # API server, kubelet: declared for sparkfleet_scheduler kubernetes only (this lab runs Slurm)
    return False  # unlisted


def free_nccl_port():
    busy = set()
    for n in NODES:
        out = ssh(n, "ss -Htanu | awk '{print $5}'").stdout.split()
        busy |= {int(a.rsplit(':', 1)[1]) for a in out if a.rsplit(':', 1)[-1].isdigit()}
    return next(p for p in range(50500, 51000) if p not in busy)


def test_firewall_matrix_matches_policy():
    global NCCL_PORT
    NCCL_PORT = TCP_PORTS[1] = free_nccl_port()
    for n in NODES:
        ssh(n, "cat > /tmp/listen.py <<'EOF'\n" + LISTEN + "\nEOF\n"
               f"nohup timeout 70 python3 /tmp/listen.py {','.join(str(p) for p in TCP_PORTS[1:] + ([] if n == WEB else [8000]))} "
               f"{'4791,123' if n == CONTROL else '4791'} >/tmp/listen.log 2>&1 &")
    ssh(WEB, PUBLISH, timeout=120)
    import time
    time.sleep(1.5)
    mismatches = []
    for src in NODES + OUTSIDERS:
        targets = [[addr(d), p, "tcp"] for d in NODES for p in TCP_PORTS] + [[addr(d), 4791, "udp"] for d in NODES]
        targets += [[addr(d), 123, "udp"] for d in NODES]
        targets += [[addr(WEB), PUBLISHED_UNDECLARED, "tcp"], [addr(WEB), PUBLISHED_DECLARED, "tcp"]]
        targets += [[addr(d), PUBLISHED_DECLARED, "tcp"] for d in NODES if d != WEB]  # vLLM's port, host listeners
        if src in NODES:  # NCCL over the fabric too
            targets += [[fabric_ip(d, i), NCCL_PORT, "tcp"] for d in NODES if d != src for i in (0, 1)]
        ip2host = {addr(d): d for d in NODES} | {fabric_ip(d, i): d for d in NODES for i in (0, 1)}
        res = ssh(src, "cat > /tmp/probe.py <<'EOF'\n" + PROBE + "\nEOF\n"
                       f"python3 /tmp/probe.py '{json.dumps(targets)}'", timeout=120)
        for ip, port, proto, ok in json.loads(res.stdout):
            dst = ip2host[ip]
            if dst == src:
                continue  # loopback-ish traffic to itself is not the policy under test
            want = allowed(src, dst, port, proto)
            if ok != want:
                mismatches.append(f"{src} -> {dst} ({ip}) {proto}/{port}: {'open' if ok else 'closed'}, want "
                                  f"{'open' if want else 'closed'}")
    # From this controller (an admin address): neither (vLLM's port answers the gateway's host only; admins use the
    # gateway and its keys).
    import socket
    def reach(port):
        try:
            socket.create_connection((addr(WEB), port), timeout=3).close()
            return True
        except OSError:
            return False
    admin = {p: reach(p) for p in (PUBLISHED_UNDECLARED, PUBLISHED_DECLARED)}
    ssh(WEB, "docker rm -f pub1 pub2", check=False)
    assert admin == {PUBLISHED_UNDECLARED: False, PUBLISHED_DECLARED: False}, admin
    binds = {n: ssh(n, "cat /tmp/listen.log", check=False).stdout.strip() for n in NODES}
    assert not mismatches, "\n".join(mismatches + [f"{n} listener: {b}" for n, b in binds.items() if b])


def test_unlisted_port_open_without_firewall_shows_the_probe_works():
    """Guard against a probe that always fails: the outsider has no firewall, so its listener is reachable."""
    if not OUTSIDERS:
        pytest.skip("no outsider in this lab")
    out = OUTSIDERS[0]
    ssh(out, "cat > /tmp/listen.py <<'EOF'\n" + LISTEN + "\nEOF\nnohup timeout 20 python3 /tmp/listen.py 12345 >/dev/null 2>&1 &")
    import time
    time.sleep(1)
    res = ssh(NODES[0], "cat > /tmp/probe.py <<'EOF'\n" + PROBE + "\nEOF\n"
                        f"python3 /tmp/probe.py '{json.dumps([[addr(out), 12345, 'tcp']])}'")
    assert json.loads(res.stdout)[0][3] is True


def test_ruleset_survives_reload_and_is_the_only_thing_we_own():
    h = host(NODES[1])
    assert h.service("sparkfleet-firewall").is_enabled
    assert h.file("/etc/sparkfleet/firewall.nft").mode == 0o600
    assert h.run("nft -c -f /etc/sparkfleet/firewall.nft").rc == 0
    assert "policy drop" in h.run("nft list chain inet sparkfleet input").stdout
