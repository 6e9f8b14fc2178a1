#!/bin/sh
# sparkfleet lab node boot step (runs before sshd). Makes a Docker container look like a
# real node: real /etc/hosts and /etc/hostname, writable net sysctls, Spark-like interface
# names, per-node SSH host keys and the lab's admin key. Settings come from the container's
# environment (PID 1), which the lab tool sets.
set -eu
envval() { tr '\0' '\n' </proc/1/environ | sed -n "s/^$1=//p" | head -n1; }

# Docker bind-mounts these; roles must manage the real files.
for f in /etc/hosts /etc/hostname; do
  if mountpoint -q "$f" 2>/dev/null || grep -q " $f " /proc/self/mountinfo; then
    cp "$f" "$f.lab" && umount "$f" && cat "$f.lab" >"$f" && rm -f "$f.lab"
  fi
done
hostname >/etc/hostname
mount -o remount,rw,bind /proc/sys 2>/dev/null || true

# LAB_IFMAP="10.77.0.0/24=enP7s7 10.78.0.0/24=enp1s0f0np0": rename the interface holding an
# address of each subnet (prefix match on the first three octets of a /24).
for pair in $(envval LAB_IFMAP); do
  net=${pair%%=*}; want=${pair#*=}; prefix=${net%.*/*}.
  cur=$(ip -o -4 addr show | awk -v p="$prefix" 'index($4, p) == 1 {print $2; exit}')
  if [ -n "$cur" ] && [ "$cur" != "$want" ]; then
    ip link set dev "$cur" down && ip link set dev "$cur" name "$want" && ip link set dev "$want" up
    # Docker's default route goes with the link; restore it if the rename dropped it.
  fi
done
gw=$(envval LAB_GATEWAY)
if [ -n "$gw" ] && ! ip route show default | grep -q .; then ip route add default via "$gw" || true; fi

[ -f /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -A
key=$(envval LAB_AUTHORIZED_KEY)
if [ -n "$key" ]; then
  install -d -m 700 -o sparkadmin -g sparkadmin /home/sparkadmin/.ssh
  printf '%s\n' "$key" >/home/sparkadmin/.ssh/authorized_keys
  chown sparkadmin:sparkadmin /home/sparkadmin/.ssh/authorized_keys
  chmod 600 /home/sparkadmin/.ssh/authorized_keys
fi

# Quirks of the target's distribution, planted once (a re-boot must not undo what roles fixed):
# Ubuntu's `127.0.1.1 HOSTNAME` line, and DGX OS's release file on the node the lab marks.
if [ ! -e /var/lib/sparkfleet-lab-quirks ]; then
  printf '127.0.1.1\t%s\n' "$(hostname)" >>/etc/hosts
  if [ -n "$(envval LAB_DGX_RELEASE)" ]; then
    printf 'DGX_NAME="DGX Spark"\nDGX_PRETTY_NAME="NVIDIA DGX Spark"\nDGX_SWBUILD_VERSION="7.3.1"\nDGX_PLATFORM="DGX Server for KVM"\n' >/etc/dgx-release
  fi
  : >/var/lib/sparkfleet-lab-quirks
fi

# The lab's persona (LAB_PERSONA, e.g. spark): a DGX Spark's software face at the hardware boundary, applied at every
# boot (its sysfs mounts do not survive a restart): lab/persona/persona-init.
persona=$(envval LAB_PERSONA)
if [ -n "$persona" ] && [ -x /opt/sparkfleet-persona/persona-init ]; then
  LAB_PERSONA_REPO=$(envval LAB_PERSONA_REPO) /opt/sparkfleet-persona/persona-init "$persona"
fi
