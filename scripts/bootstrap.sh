#!/usr/bin/env bash
# Install what sparkfleet needs on this (controller) machine: host packages and the project venv.
# qemu-user-static runs DGX Spark's arm64 binaries here (the pinned arm64 builds are tested, arm64 lab nodes run).
# Idempotent and quick when everything is there. Debian/Ubuntu; run as root for the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pair in docker:docker.io dockerd:docker.io mmdebstrap:mmdebstrap ssh:openssh-client ip:iproute2 make:make rclone:rclone \
    qemu-aarch64-static:qemu-user-static update-binfmts:binfmt-support; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "bootstrap: error: missing ${need[*]} and cannot install them (need root and apt-get)" >&2; exit 1
  fi
  echo "bootstrap: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Headless Chromium renders the HTML report in the tests (no recommends: fonts and a DOM are all it needs).
if ! command -v chromium >/dev/null 2>&1; then
  echo "bootstrap: installing chromium (headless, for the report test)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
fi

# The venv is rebuilt when requirements.txt changes.
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/ansible-playbook ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: creating .venv from requirements.txt" >&2
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt 2> >(grep -v "is ignored: it is neither" >&2)
  echo "$want" > "$stamp"
fi

# promtool (rule tests, config and PromQL checks) from the distribution's prometheus package, unpacked
# here only: installing the package would start a Prometheus server on this machine.
if [ ! -x .cache/tools/promtool ]; then
  echo "bootstrap: unpacking promtool from the distribution's prometheus package" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download -qq prometheus >/dev/null 2>&1 || { apt-get update -qq && apt-get download -qq prometheus >/dev/null; }; } \
     && dpkg-deb -x prometheus_*.deb x)
  mkdir -p .cache/tools && cp "$tmp/x/usr/bin/promtool" .cache/tools/promtool && rm -rf "$tmp"
fi

# Pinned binaries the roles install (SeaweedFS for the lab's object store), checksummed.
"$(dirname "$0")/../.venv/bin/python" scripts/artifacts.py fetch >/dev/null
