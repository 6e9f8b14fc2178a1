#!/usr/bin/env bash
# On the device machine: install the carried wheels, capture raw nvidia-smi outputs, run the
# GPU playbook through Ansible with -c local. Output in $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site ANSIBLE_CONFIG=$PWD/ansible.cfg ANSIBLE_FORCE_COLOR=0 OUT
bash scripts/capture-nvidia-smi.sh /tmp/cap >/dev/null 2>&1
tar -C /tmp -czf "$OUT/capture.tgz" cap
python3 /tmp/site/bin/ansible-playbook -i scripts/device/inventory.yml scripts/device/gpu-run.yml "$@" 2>&1 | tee "$OUT/gpu-run.log"
echo "playbook rc=${PIPESTATUS[0]}"
