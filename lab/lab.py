#!/usr/bin/env python3
"""sparkfleet embedded lab: simulated cluster nodes as systemd containers.

    lab.py up      [--nodes N] [--spare N] [--name NAME] [--outsider]   build the image if needed, start nodes
    lab.py down    [--name NAME]                            remove containers, networks, volumes, inventory
    lab.py status  [--name NAME]

Nodes run systemd and sshd; Ansible reaches them over SSH on the management network, as on a
real cluster. Node 1 is the control/storage node, the others are compute nodes. Every node has
a management interface (enP7s7, like DGX Spark) and two fabric interfaces (enp1s0f0np0 and
enP2p1s0f0np0, the two halves of a ConnectX-7 port, each on its own subnet, MTU 9000).
Planted quirks of the target's distribution: Ubuntu cloud-init's sshd drop-in
(PasswordAuthentication yes), a `127.0.1.1 HOSTNAME` line in /etc/hosts, and /etc/dgx-release
on the last node (DGX OS detection).

Environment: LAB_NODES (default 3), LAB_NAME (default "lab"), LAB_MGMT_CIDR, LAB_FABRIC_CIDR,
LAB_FABRIC2_CIDR (default: the fabric's second octet + 10),
LAB_SUITE (bookworm), LAB_MIRROR (default: this machine's Debian mirror),
LAB_ARCH: amd64 (default), arm64 (every node arm64, like DGX Spark) or mixed (the last compute node arm64).
LAB_PERSONA: none (default) or spark: every cluster node shows a DGX Spark's software face at the hardware boundary
(lab/persona/: /etc/dgx-release, nvidia-smi replaying real GB10 recordings, /dev/nvidia0, the GB10's PCI functions and
four CX-7 RDMA devices in sysfs, NVIDIA's packages as stand-ins from an apt repository the lab starts). Roles never
test for it; the validation report marks what rests on it `persona`.
arm64 nodes run through qemu-user-static registered in binfmt_misc with the fix-binary flag (installed and
registered here when missing); their image is built with `mmdebstrap --architectures=arm64`. Emulated nodes are
several times slower: keep them few.
Only the standard library: it runs before the project venv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB_DIR = Path(__file__).resolve().parent
STATE = ROOT / ".lab"
MIN_NODES, MAX_NODES = 2, 16
IMAGE_REPO = "sparkfleet/labnode"
# Like DGX Spark: management port, and the two halves of ConnectX-7 port 0 (each on its own subnet).
MGMT_IF, FABRIC_IFS = "enP7s7", ("enp1s0f0np0", "enP2p1s0f0np0")
# Baked into the image so roles find them installed (apt inside nodes still works).
PACKAGES = [
    "python3", "python3-apt", "systemd", "systemd-sysv", "dbus", "openssh-server", "openssh-client",
    "sudo", "iproute2", "iputils-ping", "procps", "ca-certificates", "nftables", "chrony",
    "iperf3", "kmod", "util-linux", "gnupg", "curl", "less", "busybox-static", "netbase",
]
# Every capability but these: SYS_RESOURCE is not in this VM's bounding set, and with SYS_TIME
# a node's chrony would set the host clock (../shared/notes/lab.md).
DROP_CAPS = ["SYS_RESOURCE", "SYS_TIME"]
# mmdebstrap customize hooks ($1 is the new root).
IMAGE_HOOKS = [
    'install -m 755 "$LAB_DIR/node-init.sh" "$1/usr/local/sbin/sparkfleet-lab-init"',
    'install -m 644 "$LAB_DIR/sparkfleet-lab-init.service" "$1/etc/systemd/system/"',
    'chroot "$1" systemctl enable sparkfleet-lab-init.service ssh.service',
    # Timers that would take the apt lock in the middle of a run; gettys nobody uses.
    'chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer getty@tty1.service '
    'systemd-firstboot.service e2scrub_reap.service',
    'chroot "$1" useradd -m -s /bin/bash -U sparkadmin',
    'echo "sparkadmin ALL=(ALL) NOPASSWD:ALL" >"$1/etc/sudoers.d/sparkadmin"; chmod 440 "$1/etc/sudoers.d/sparkadmin"',
    'rm -f "$1"/etc/ssh/ssh_host_*',
    # Package installs inside nodes (most of a first converge, several times slower on emulated arm64 nodes): no
    # fsync per file, no docs or man pages, no man-db rebuild after each install.
    'printf "force-unsafe-io\npath-exclude=/usr/share/doc/*\npath-include=/usr/share/doc/*/copyright\n'
    'path-exclude=/usr/share/man/*\npath-exclude=/usr/share/info/*\n" >"$1/etc/dpkg/dpkg.cfg.d/90-sparkfleet-lab"',
    'rm -f "$1/var/lib/man-db/auto-update"',
    # Package lists kept (a dry run must find packages, as on a real machine) but dated 1970, so
    # `apt: cache_valid_time` refreshes them on the first real run.
    'rm -f "$1/var/lib/apt/periodic/update-success-stamp"; touch -d @0 "$1/var/lib/apt/lists"',
    'printf "127.0.0.1\\tlocalhost\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n" >"$1/etc/hosts"',
    # Distribution quirks of Ubuntu cloud images, on purpose: sshd keeps the first value it reads,
    # so this file wins over any drop-in sorted after it.
    'printf "PasswordAuthentication yes\\n" >"$1/etc/ssh/sshd_config.d/50-cloud-init.conf"',
    # A node converged by an earlier sparkfleet release: its sshd drop-in, named to sort after cloud-init's.
    'printf "# Managed by Ansible (sparkfleet ssh_trust)\\nPermitRootLogin yes\\n" >"$1/etc/ssh/sshd_config.d/50-sparkfleet.conf"',
]

# Emulated (arm64) nodes only: qemu-user cannot open NETLINK_NETFILTER sockets ("Protocol not supported"), so nft and
# iptables built for arm64 cannot talk to the kernel (the firewall role and dockerd need them). These images carry
# Debian's amd64 builds of both (multiarch; they run natively) in place of /usr/sbin/nft and xtables-nft-multi through
# dpkg diversions; the arm64 packages stay installed and the rules loaded are real. qemu-user cannot load seccomp
# filters either (chronyd -F 1 exits), nor start containers (runc's namespaced clone): dockerd runs, containers do not.
# Every other program on the node is arm64. These are the lab's limits: the roles are the same for a real aarch64 node.
FOREIGN_PACKAGES = ["libnftables1:amd64", "libedit2:amd64", "libxtables12:amd64", "libip4tc2:amd64", "libip6tc2:amd64",
                    "libnetfilter-conntrack3:amd64", "libnfnetlink0:amd64"]
_AMD64 = "/usr/lib/x86_64-linux-gnu"
FOREIGN_HOOKS = [
    'sed -i "s/^DAEMON_OPTS=.*/DAEMON_OPTS=\\"-F 0\\"/" "$1/etc/default/chrony"',
    'chroot "$1" sh -c "cd /tmp && apt-get download -q nftables:amd64 iptables:amd64"'
    ' && for d in "$1"/tmp/*_amd64.deb; do dpkg-deb -x "$d" "$1/tmp/amd64"; done'
    ' && for b in nft xtables-nft-multi; do chroot "$1" dpkg-divert --quiet --local --divert /usr/sbin/$b.arm64'
    ' --rename /usr/sbin/$b && install -m 755 "$1/tmp/amd64/usr/sbin/$b" "$1/usr/sbin/$b"; done'
    f' && cp -a "$1/tmp/amd64{_AMD64}/xtables" "$1{_AMD64}/" && rm -rf "$1"/tmp/*_amd64.deb "$1/tmp/amd64"',
]


class LabError(Exception):
    """A one-line, user-facing error."""


def log(msg: str) -> None:
    print(f"lab: {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(what: str):
    """Labs may start at the same time (scripts/molecule_all.py runs the arm64 scenario beside the others): one at a
    time installs packages, starts dockerd or builds a given image; the next one finds it done."""
    STATE.mkdir(exist_ok=True)
    with open(STATE / f".{what}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run(cmd: list[str], check: bool = True, capture: bool = True, **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, text=True, capture_output=capture, **kw)
    if check and res.returncode != 0:
        detail = (res.stderr or res.stdout or "").strip().splitlines()
        raise LabError(f"{' '.join(cmd[:3])} failed: {detail[-1] if detail else 'exit ' + str(res.returncode)}")
    return res


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(["docker", *args], check=check)


# ---------------------------------------------------------------- engine
def docker_ok() -> bool:
    return shutil.which("docker") is not None and run(["docker", "info"], check=False).returncode == 0


def ensure_engine() -> None:
    if docker_ok():
        return
    if not shutil.which("dockerd") or not shutil.which("mmdebstrap"):
        apt_install(["docker.io", "mmdebstrap"])
    if not docker_ok():
        log("starting dockerd")
        logf = open(STATE / "dockerd.log", "ab")
        subprocess.Popen(["dockerd"], stdout=logf, stderr=logf, start_new_session=True)
        for _ in range(60):
            if docker_ok():
                return
            time.sleep(0.5)
        raise LabError(f"dockerd did not answer within 30 s; see {STATE / 'dockerd.log'}")


def apt_install(pkgs: list[str]) -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise LabError(f"Docker engine missing and cannot be installed here (need root and apt-get for {' '.join(pkgs)})")
    log(f"installing {' '.join(pkgs)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with locked("apt"):
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *pkgs]):
            res = subprocess.run(cmd, env=env, text=True, capture_output=True)
            if res.returncode != 0:
                last = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["?"]
                raise LabError(f"{' '.join(pkgs)} missing and cannot be installed: {' '.join(cmd[:2])}: {last[0]}")


# ---------------------------------------------------------------- image
def host_mirrors() -> tuple[str, str]:
    """The Debian mirror this machine already uses (LAB_MIRROR overrides)."""
    if os.environ.get("LAB_MIRROR"):
        m = os.environ["LAB_MIRROR"].rstrip("/")
        return m, os.environ.get("LAB_SECURITY_MIRROR", m + "-security")
    uris: list[str] = []
    for f in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if f.is_file():
            text = f.read_text(errors="replace")
            uris += re.findall(r"^URIs:\s*(\S+)", text, re.M)
            uris += re.findall(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M)
    main = next((u for u in uris if not u.rstrip("/").endswith("-security")), None)
    sec = next((u for u in uris if u.rstrip("/").endswith("-security")), None)
    if not main:
        raise LabError("no Debian mirror found in /etc/apt; set LAB_MIRROR")
    main = main.rstrip("/")
    return main, (sec or main + "-security").rstrip("/")


def image_tag(suite: str, arch: str = "amd64") -> str:
    files = [(LAB_DIR / f).read_text() for f in ("node-init.sh", "sparkfleet-lab-init.service")]
    recipe = json.dumps([suite, PACKAGES, IMAGE_HOOKS, files] + ([FOREIGN_PACKAGES, FOREIGN_HOOKS] if arch != "amd64" else []))
    # The amd64 tag keeps its old name, so an existing image stays valid.
    suffix = "" if arch == "amd64" else f"-{arch}"
    return f"{IMAGE_REPO}:{suite}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}{suffix}"


BINFMT = Path("/proc/sys/fs/binfmt_misc")


def ensure_emulation(arch: str) -> None:
    """qemu-user for ARCH in binfmt_misc with the F flag (the kernel keeps the interpreter open, so containers, which
    do not have /usr/bin/qemu-*-static in their root, can run ARCH binaries) and the C flag (setuid binaries: sudo)."""
    qemu = {"arm64": "aarch64"}[arch]
    entry = BINFMT / f"qemu-{qemu}"
    if not (BINFMT / "register").exists():
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], check=False)
    if not shutil.which(f"qemu-{qemu}-static") or not shutil.which("update-binfmts"):
        apt_install(["qemu-user-static", "binfmt-support"])
    if not entry.exists():
        run(["update-binfmts", "--enable", f"qemu-{qemu}"], check=False)
    text = entry.read_text() if entry.exists() else ""
    # Debian registers qemu with flags PF. Lab nodes also need C (credentials from the binary, not the interpreter):
    # without it setuid programs run as the caller, and sudo refuses ("effective uid is not 0").
    if "enabled" in text and not re.search(r"^flags:.*C", text, re.M):
        spec = dict(ln.split(" ", 1) for ln in Path(f"/usr/share/binfmts/qemu-{qemu}").read_text().splitlines() if " " in ln)
        entry.write_text("-1")
        (BINFMT / "register").write_text(f":qemu-{qemu}:M:{spec.get('offset', '0')}:{spec['magic']}:{spec['mask']}:"
                                         f"{spec['interpreter']}:POCF")
        text = entry.read_text() if entry.exists() else ""
    if "enabled" not in text or not re.search(r"^flags:.*F", text, re.M) or not re.search(r"^flags:.*C", text, re.M):
        raise LabError(f"{entry}: qemu-{qemu} is not registered with the fix-binary (F) and credentials (C) flags; "
                       f"`apt-get install qemu-user-static binfmt-support` registers it (flags PF), this tool adds C")


def ensure_image(suite: str, arch: str = "amd64") -> str:
    tag = image_tag(suite, arch)
    if arch != "amd64":
        ensure_emulation(arch)
    with locked("image-" + tag.rsplit(":", 1)[1]):
        return build_image(suite, arch, tag)


def build_image(suite: str, arch: str, tag: str) -> str:
    if docker("image", "inspect", tag, check=False).returncode == 0:
        return tag
    if not shutil.which("mmdebstrap"):
        apt_install(["mmdebstrap"])
    main, sec = host_mirrors()
    log(f"building node image {tag} (mmdebstrap {suite} {arch}, "
        f"{'about a minute' if arch == 'amd64' else 'several minutes: package scripts run emulated'})")
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp) / "rootfs.tar"
        foreign = arch != "amd64"
        cmd = ["mmdebstrap", "--variant=minbase", f"--architectures={arch}{',amd64' if foreign else ''}",
               "--include=" + ",".join(PACKAGES + (FOREIGN_PACKAGES if foreign else [])), "--skip=cleanup/apt",
               *[f"--customize-hook={h}" for h in (FOREIGN_HOOKS if foreign else []) + IMAGE_HOOKS], suite, str(tar),
               f"deb {main} {suite} main", f"deb {main} {suite}-updates main", f"deb {sec} {suite}-security main"]
        res = subprocess.run(cmd, text=True, capture_output=True, env=dict(os.environ, LAB_DIR=str(LAB_DIR)))
        if res.returncode != 0:
            tail = "\n".join((res.stderr or "").strip().splitlines()[-15:])
            raise LabError(f"mmdebstrap failed:\n{tail}")
        # No --platform: this Docker records amd64 anyway and `run --platform` would then ask a registry.
        docker("import", "-c", 'CMD ["/sbin/init"]', "-c", "ENV container=docker", str(tar), tag)
    return tag


# ---------------------------------------------------------------- persona
PERSONA_DIR = LAB_DIR / "persona"
PERSONAS = ("none", "spark", "hgx")
REPO_PORT = 8080


def build_persona_repo() -> Path:
    """NVIDIA's packages as stand-ins (lab/persona/repo.json: real names, versions, dependencies; no payload) in a flat
    apt repository under .lab/persona-repo, for amd64 and arm64. Rebuilt when the spec changes."""
    spec = (PERSONA_DIR / "repo.json").read_text()
    out = STATE / "persona-repo"
    stamp = hashlib.sha256((spec + "format 2").encode()).hexdigest()
    if (out / ".stamp").exists() and (out / ".stamp").read_text() == stamp:
        return out
    # Emptied, not removed: running repository servers and nodes bind-mount this folder.
    out.mkdir(parents=True, exist_ok=True)
    for f in out.iterdir():
        f.unlink()
    entries = []
    units = json.loads(spec).get("units", {})
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, depends, *files in json.loads(spec)["packages"]:
            for arch in ("amd64", "arm64"):
                root = Path(tmp) / f"{name}_{arch}_{version}"
                (root / "DEBIAN").mkdir(parents=True)
                (root / "usr/share/doc" / name).mkdir(parents=True)
                (root / "usr/share/doc" / name / "README.sparkfleet-lab").write_text(
                    "sparkfleet lab stand-in: NVIDIA's package name and version, no payload.\n")
                for path, unit in (files[0] if files else {}).items():
                    (root / path).parent.mkdir(parents=True, exist_ok=True)
                    (root / path).write_text(units[unit])
                control = (f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: sparkfleet lab <lab@sparkfleet.invalid>\n"
                           + (f"Depends: {depends}\n" if depends else "")
                           + "Section: non-free/libs\nPriority: optional\n"
                           "Description: sparkfleet lab stand-in for NVIDIA's package (no payload)\n")
                (root / "DEBIAN" / "control").write_text(control)
                deb = out / f"{name}_{version}_{arch}.deb"
                run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)])
                data = deb.read_bytes()
                entries.append(control + f"Filename: ./{deb.name}\nSize: {len(data)}\n"
                               f"SHA256: {hashlib.sha256(data).hexdigest()}\n")
    packages = "\n".join(entries)
    (out / "Packages").write_text(packages)
    (out / "Release").write_text(f"Origin: sparkfleet-lab\nLabel: NVIDIA stand-ins\nDate: Thu, 01 Jan 1970 00:00:00 UTC\nSHA256:\n"
                                 f" {hashlib.sha256(packages.encode()).hexdigest()} {len(packages.encode())} Packages\n")
    (out / ".stamp").write_text(stamp)
    return out


def start_repo(p: dict, tag: str, repo: Path) -> None:
    """The lab's apt repository: a static HTTP server on the management network (the node image's python3)."""
    cname = f"{prefix(p['name'])}-aptrepo"
    if docker("inspect", "-f", "{{.State.Running}}", cname, check=False).stdout.strip() == "true":
        return
    docker("rm", "-f", cname, check=False)
    docker("run", "-d", "--name", cname, "--label", f"sparkfleet.lab={p['name']}", "--network", f"{prefix(p['name'])}-mgmt",
           "--ip", p["repo_ip"], "-v", f"{repo}:/srv:ro", "--entrypoint", "python3", tag,
           "-m", "http.server", str(REPO_PORT), "--directory", "/srv")


# ---------------------------------------------------------------- plan
def plan(name: str, nodes: int, outsider: bool, spare: int = 0, arch: str = "amd64", persona: str = "none") -> dict:
    mgmt = ipaddress.ip_network(os.environ.get("LAB_MGMT_CIDR", "10.77.0.0/24"))
    fabric = ipaddress.ip_network(os.environ.get("LAB_FABRIC_CIDR", "10.78.0.0/24"))
    if fabric.version != 4:
        raise LabError(f"LAB_FABRIC_CIDR={fabric}: the lab needs an IPv4 /24")
    o = str(fabric.network_address).split(".")
    fabric2 = ipaddress.ip_network(os.environ.get("LAB_FABRIC2_CIDR", f"{o[0]}.{(int(o[1]) + 10) % 256}.{o[2]}.0/24"))
    nets = [("LAB_MGMT_CIDR", mgmt), ("LAB_FABRIC_CIDR", fabric), ("LAB_FABRIC2_CIDR", fabric2)]
    for var, net in nets:
        if net.prefixlen != 24 or net.version != 4:
            raise LabError(f"{var}={net}: the lab needs an IPv4 /24")
    for i, (va, a) in enumerate(nets):
        for vb, b in nets[i + 1:]:
            if a.overlaps(b):
                raise LabError(f"{va}={a} overlaps {vb}={b}")
    fabrics = [str(fabric), str(fabric2)]
    hosts = []
    for i in range(1, nodes + 1):
        hosts.append({
            "name": f"spark-{i:02d}", "index": i, "group": "control" if i == 1 else "compute",
            "mgmt_ip": str(mgmt.network_address + 10 + i),
            "fabric_ips": [str(ipaddress.ip_network(f).network_address + 10 + i) for f in fabrics],
            "dgx_release": i == nodes and persona == "none",
            "arch": "arm64" if arch == "arm64" or (arch == "mixed" and i == nodes) else "amd64",
            "persona": persona,
        })
    # Spare nodes: set up like cluster nodes, in the inventory's `spare` group only, for the day-2 tests
    # (playbooks/add_node.yml moves one into the cluster).
    for i in range(nodes + 1, nodes + spare + 1):
        hosts.append({
            "name": f"spark-{i:02d}", "index": i, "group": "spare",
            "mgmt_ip": str(mgmt.network_address + 10 + i),
            "fabric_ips": [str(ipaddress.ip_network(f).network_address + 10 + i) for f in fabrics],
            "dgx_release": False, "arch": "arm64" if arch == "arm64" else "amd64", "persona": persona,
        })
    if outsider:  # a machine on the management network that is not part of the cluster
        hosts.append({"name": "outsider", "index": 0, "group": "outside",
                      "mgmt_ip": str(mgmt.network_address + 200), "fabric_ips": [], "dgx_release": False,
                      "arch": "amd64", "persona": "none"})
    return {"name": name, "mgmt": str(mgmt), "fabrics": fabrics, "mgmt_gw": str(mgmt.network_address + 1),
            "fabric_gws": [str(ipaddress.ip_network(f).network_address + 1) for f in fabrics], "hosts": hosts,
            "persona": persona, "repo_ip": str(mgmt.network_address + 250)}


def networks(p: dict) -> list[tuple[str, str, str, str]]:
    """(docker network suffix, cidr, gateway, mtu) of the lab's networks."""
    return [("mgmt", p["mgmt"], p["mgmt_gw"], "1500")] + [
        ("fabric" if i == 0 else f"fabric{i}", c, g, "9000") for i, (c, g) in enumerate(zip(p["fabrics"], p["fabric_gws"], strict=False))]


def check_clashes(p: dict) -> None:
    """A lab subnet must not overlap a route of this machine or another Docker network."""
    ours = {f"sparkfleet-{p['name']}-{n[0]}" for n in networks(p)}
    wanted = [ipaddress.ip_network(n[1]) for n in networks(p)]
    taken: list[tuple[str, ipaddress.IPv4Network]] = []
    for line in run(["ip", "-4", "route", "show"], check=False).stdout.splitlines():
        dst, _, rest = line.partition(" ")
        dev = re.search(r"dev (\S+)", rest)
        if dst != "default" and "/" in dst:
            taken.append((f"route {dst} on {dev.group(1) if dev else '?'}", ipaddress.ip_network(dst, strict=False)))
    our_bridges = set()
    for net in docker("network", "ls", "--format", "{{.Name}}").stdout.split():
        info = json.loads(docker("network", "inspect", net).stdout)[0]
        if net in ours:
            our_bridges.add(info.get("Options", {}).get("com.docker.network.bridge.name") or "br-" + info["Id"][:12])
            continue
        for cfg in (info.get("IPAM") or {}).get("Config") or []:
            if cfg.get("Subnet") and ":" not in cfg["Subnet"]:
                taken.append((f"docker network {net}", ipaddress.ip_network(cfg["Subnet"])))
    for what, net in taken:
        if any(b in what for b in our_bridges):
            continue
        for w in wanted:
            if w.overlaps(net):
                raise LabError(f"subnet clash: lab subnet {w} overlaps {what} ({net}); set LAB_MGMT_CIDR/LAB_FABRIC_CIDR")


# ---------------------------------------------------------------- up / down
def prefix(name: str) -> str:
    return f"sparkfleet-{name}"


def ensure_key(name: str) -> Path:
    key = STATE / name / "id_ed25519"
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"sparkfleet-{name}-admin", "-f", str(key)])
    return key


def up(name: str, nodes: int, outsider: bool, suite: str, spare: int = 0, arch: str = "amd64",
       persona: str = "none") -> None:
    STATE.mkdir(exist_ok=True)
    p = plan(name, nodes, outsider, spare, arch, persona)
    with locked("engine"):
        ensure_engine()
    check_clashes(p)
    tags = {a: ensure_image(suite, a) for a in sorted({h["arch"] for h in p["hosts"]} | ({"amd64"} if persona != "none" else set()))}
    repo = None
    if persona != "none":
        with locked("persona-repo"):
            repo = build_persona_repo()
    key = ensure_key(name)
    pub = key.with_suffix(".pub").read_text().strip()
    pre = prefix(name)
    try:
        for net, cidr, gw, mtu in networks(p):
            if docker("network", "inspect", f"{pre}-{net}", check=False).returncode != 0:
                docker("network", "create", "--driver", "bridge", "--subnet", cidr, "--gateway", gw,
                       "-o", f"com.docker.network.driver.mtu={mtu}", "--label", f"sparkfleet.lab={name}", f"{pre}-{net}")
        # Remove nodes beyond the wanted count (LAB_NODES lowered since the last `up`).
        wanted = {f"{pre}-{h['name']}" for h in p["hosts"]}
        for c in docker("ps", "-a", "--filter", f"label=sparkfleet.lab={name}", "--format", "{{.Names}}").stdout.split():
            if c not in wanted:
                docker("rm", "-f", "-v", c)
        if repo:
            start_repo(p, tags["amd64"], repo)
        for h in p["hosts"]:
            start_node(p, h, tags[h["arch"]], pub, repo)
        # Emulated arm64 nodes boot several times slower (systemd, ssh-keygen -A under qemu).
        wait_ready(p, key, timeout=360 if any(h["arch"] != "amd64" for h in p["hosts"]) else 90)
    except (LabError, KeyboardInterrupt):
        log("start failed: removing what was created")
        down(name, quiet=True)
        raise
    write_inventory(p, key)
    log(f"{nodes} nodes up ({', '.join(h['name'] for h in p['hosts'])}); inventory in inventory/{inv_dirname(name)}/")


def start_node(p: dict, h: dict, tag: str, pub: str, repo: Path | None = None) -> None:
    pre = prefix(p["name"])
    cname = f"{pre}-{h['name']}"
    state = docker("inspect", "-f", "{{.State.Running}} {{.Config.Image}} {{index .Config.Labels \"sparkfleet.persona\"}}", cname,
                   check=False)
    if state.returncode == 0:
        running, image, *label = state.stdout.split()
        had = label[0] if label and not label[0].startswith("<no") else "none"
        if running == "true" and image == tag and had == h.get("persona", "none"):
            return
        docker("rm", "-f", "-v", cname)
    ifmap = " ".join([f"{p['mgmt']}={MGMT_IF}"] + [f"{c}={i}" for c, i, _ in zip(p["fabrics"], FABRIC_IFS, h["fabric_ips"], strict=False)])
    caps = [a for c in DROP_CAPS for a in ("--cap-drop", c)]
    persona = []
    if h.get("persona", "none") != "none" and repo is not None:
        persona = ["-e", f"LAB_PERSONA={h['persona']}", "-e", f"LAB_PERSONA_REPO=http://{p['repo_ip']}:{REPO_PORT}/",
                   "-v", f"{PERSONA_DIR}:/opt/sparkfleet-persona:ro", "-v", f"{repo}:/opt/sparkfleet-persona-repo:ro"]
    docker("create", "--name", cname, "--hostname", h["name"], "--label", f"sparkfleet.lab={p['name']}",
           "--label", f"sparkfleet.persona={h.get('persona', 'none')}",
           "--cap-add", "ALL", *caps, "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
           "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
           "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
           "-v", f"{cname}-docker:/var/lib/docker", "--stop-signal", "SIGRTMIN+3",
           "--network", f"{pre}-mgmt", "--ip", h["mgmt_ip"],
           "-e", f"LAB_IFMAP={ifmap}", "-e", f"LAB_GATEWAY={p['mgmt_gw']}", "-e", f"LAB_AUTHORIZED_KEY={pub}",
           "-e", f"LAB_DGX_RELEASE={'1' if h['dgx_release'] else ''}", *persona, tag)
    for (net, *_), ip in zip(networks(p)[1:], h["fabric_ips"], strict=False):
        docker("network", "connect", "--ip", ip, f"{pre}-{net}", cname)
    docker("start", cname)


def wait_ready(p: dict, key: Path, timeout: float = 90) -> None:
    pending = {h["name"]: h for h in p["hosts"]}
    deadline = time.time() + timeout
    while pending and time.time() < deadline:
        for n, h in list(pending.items()):
            res = run(["ssh", *ssh_opts(key), f"sparkadmin@{h['mgmt_ip']}", "sudo -n systemctl is-system-running"],
                      check=False)
            if res.stdout.strip() in ("running", "degraded"):
                del pending[n]
        if pending:
            time.sleep(1)
    if pending:
        raise LabError(f"nodes not reachable over SSH within {timeout:.0f} s: {', '.join(sorted(pending))}")


def ssh_opts(key: Path) -> list[str]:
    return ["-i", str(key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=3"]


def inv_dirname(name: str) -> str:
    return "lab" if name == "lab" else f"lab-{name}"


def write_inventory(p: dict, key: Path) -> None:
    """inventory/<lab>/hosts.yml: plain YAML written as JSON (a subset of YAML) for no dependency."""
    inv = ROOT / "inventory" / inv_dirname(p["name"])
    inv.mkdir(parents=True, exist_ok=True)
    def hostvars(h: dict) -> dict:
        v = {"ansible_host": h["mgmt_ip"], "sparkfleet_node_index": h["index"]}
        if h["fabric_ips"]:
            v["sparkfleet_fabric_ips"] = h["fabric_ips"]
        if h["arch"] != "amd64":
            # Ray's raylet gives its Python dashboard agent 15 s to start (write_inventory); under emulation three
            # Python processes start at that moment. Without the log monitor (it streams the node's task output to
            # drivers; nothing the lab's tests read from this node) the agent gets half the CPU instead of a third.
            v["ray_start_extra_args"] = ["--include-log-monitor", "false"]
        return v
    groups = {g: {"hosts": {h["name"]: hostvars(h) for h in p["hosts"] if h["group"] == g}} for g in ("control", "compute")}
    data = {"all": {
        "vars": {
            "ansible_user": "sparkadmin",
            "ansible_ssh_private_key_file": str(key),
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
            "ansible_python_interpreter": "/usr/bin/python3",
            "sparkfleet_lab": True,
            "sparkfleet_cluster_name": p["name"],
            "sparkfleet_mgmt_cidr": p["mgmt"],
            "sparkfleet_mgmt_interface": MGMT_IF,
            "sparkfleet_fabric_cidrs": p["fabrics"],
            "sparkfleet_fabric_interfaces": list(FABRIC_IFS),
            "sparkfleet_admin_cidrs": [f"{p['mgmt_gw']}/32"],
            # Containers share the host's memory and have a 64 MB /dev/shm: a small object store per Ray node.
            "ray_object_store_memory_bytes": 100 * 1024 * 1024,
        },
        "children": {"cluster": {"children": groups}},
    }}
    extra = []
    for g in ("spare", "outside"):
        members = [h for h in p["hosts"] if h["group"] == g]
        if members:
            data["all"]["children"][g] = {"hosts": {h["name"]: hostvars(h) for h in members}}
            extra.append(g)
    if extra:
        data["all"]["vars"]["sparkfleet_extra_groups"] = extra
    if p.get("persona") == "hgx":
        # The HGX persona replays an 8x H100 whose recorded driver is 535.161.08: its branch, as its owner would set it.
        data["all"]["vars"]["nvidia_driver_branch"] = "535"
    if p.get("persona", "none") != "none":
        # The lab reaches no container registry: NVIDIA's CUDA and DCGM exporter images cannot be pulled, so the steps
        # that run them are off here, each named in the run (a real site sets a registry mirror instead).
        data["all"]["vars"].update({"container_runtime_gpu_check": False, "dcgm_exporter_enabled": False,
                                    "validate_gpu_container_image": "",
                                    # NVIDIA's vLLM image "from the registry mirror": the lab's repository host, where
                                    # nothing serves a registry; the pull fails there (no traffic leaves the lab) and
                                    # vLLM's start is skipped, named. No image has this all-zero digest.
                                    "vllm_image_registry": f"{p['repo_ip']}:5000",
                                    "vllm_image_digest": "sha256:" + "0" * 64})
    if any(h["arch"] != "amd64" for h in p["hosts"]):
        # An emulated node's raylet gives its dashboard agent (Python, emulated) 15 s to publish its HTTP port, fixed in
        # Ray 2.60 (node_manager.cc, WaitForPersistedPort; `ray start` never hands the raylet the agent's fixed port),
        # then exits with a fatal check; systemd starts it again. On a busy machine (CI runs two labs at once) the agent
        # took 19-30 s. Ray's join check waits for a start that makes it: 20 min instead of 3 (on 2026-12-07 the 8th
        # start made it, after 8 min beside default's converge; CI's machine gave up within 10 min twice). (A larger
        # CPU share for the emulated node slowed every other scenario by about 30 %: README, "CI time".)
        data["all"]["vars"]["ray_join_timeout_s"] = 1200
    (inv / "hosts.yml").write_text("# Written by lab/lab.py; do not edit (regenerated on `lab up`).\n"
                                   + json.dumps(data, indent=2) + "\n")
    (STATE / p["name"] / "plan.json").write_text(json.dumps(p, indent=2))


def down(name: str, quiet: bool = False) -> None:
    if not docker_ok():
        if not quiet:
            log("no Docker engine running: nothing to remove")
        shutil.rmtree(ROOT / "inventory" / inv_dirname(name), ignore_errors=True)
        return
    pre = prefix(name)
    cs = docker("ps", "-a", "--filter", f"label=sparkfleet.lab={name}", "--format", "{{.Names}}").stdout.split()
    if cs:
        docker("rm", "-f", "-v", *cs)
    vols = [v for v in docker("volume", "ls", "--format", "{{.Name}}").stdout.split() if v.startswith(pre + "-")]
    if vols:
        docker("volume", "rm", "-f", *vols)
    for net in ("mgmt", "fabric", "fabric1"):
        docker("network", "rm", f"{pre}-{net}", check=False)
    shutil.rmtree(ROOT / "inventory" / inv_dirname(name), ignore_errors=True)
    shutil.rmtree(STATE / name, ignore_errors=True)
    if not quiet:
        log(f"lab '{name}' removed ({len(cs)} containers, {len(vols)} volumes, 2 networks, inventory)")


def status(name: str) -> None:
    if not docker_ok():
        print("no Docker engine running")
        return
    out = docker("ps", "-a", "--filter", f"label=sparkfleet.lab={name}", "--format", "{{.Names}}\t{{.Status}}").stdout
    print(out.strip() or f"lab '{name}': no nodes")


def parse_nodes(raw: str) -> int:
    if not re.fullmatch(r"\d+", raw.strip()) or not MIN_NODES <= int(raw) <= MAX_NODES:
        raise LabError(f"LAB_NODES={raw!r}: must be a whole number from {MIN_NODES} to {MAX_NODES}")
    return int(raw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["up", "down", "status"])
    ap.add_argument("--nodes", default=os.environ.get("LAB_NODES", "3"))
    ap.add_argument("--name", default=os.environ.get("LAB_NAME", "lab"))
    ap.add_argument("--spare", default=os.environ.get("LAB_SPARE", "0"),
                    help="extra nodes in the `spare` group (not in the cluster), for add_node tests")
    ap.add_argument("--outsider", action="store_true", help="also start a non-cluster host on the management network")
    ap.add_argument("--suite", default=os.environ.get("LAB_SUITE", "bookworm"))
    ap.add_argument("--arch", default=os.environ.get("LAB_ARCH", "amd64"),
                    help="amd64, arm64 (every node) or mixed (the last compute node arm64)")
    ap.add_argument("--persona", default=os.environ.get("LAB_PERSONA", "none") or "none",
                    help="none or spark (DGX Spark's software face at the hardware boundary: lab/persona/)")
    a = ap.parse_args(argv)
    try:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,20}", a.name):
            raise LabError(f"LAB_NAME={a.name!r}: use lower-case letters, digits and '-'")
        if a.action == "up" and a.arch not in ("amd64", "arm64", "mixed"):
            raise LabError(f"LAB_ARCH={a.arch!r}: use amd64, arm64 or mixed")
        if a.action == "up" and a.persona not in PERSONAS:
            raise LabError(f"LAB_PERSONA={a.persona!r}: use {' or '.join(PERSONAS)}")
        if a.action == "up":
            spare = int(a.spare) if re.fullmatch(r"\d", str(a.spare).strip()) else -1
            if not 0 <= spare <= 4 or parse_nodes(a.nodes) + spare > MAX_NODES:
                raise LabError(f"LAB_SPARE={a.spare!r}: 0 to 4 spare nodes, at most {MAX_NODES} nodes in all")
            up(a.name, parse_nodes(a.nodes), a.outsider, a.suite, spare, a.arch, a.persona)
        elif a.action == "down":
            down(a.name)
        else:
            status(a.name)
    except LabError as e:
        print(f"lab: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
