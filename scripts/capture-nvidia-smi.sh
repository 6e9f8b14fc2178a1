#!/usr/bin/env bash
# Capture real nvidia-smi outputs (and exit codes) for parser fixtures. Run on a GPU machine:
#   scripts/capture-nvidia-smi.sh OUTDIR
# Each file NAME.txt holds the output; NAME.rc holds the exit code.
set -u
out=${1:?OUTDIR}; mkdir -p "$out"
q='index,name,uuid,pci.bus_id,memory.total,driver_version,fabric.state,fabric.status'
cap() { local name=$1; shift; "$@" >"$out/$name.txt" 2>&1; echo $? >"$out/$name.rc"; }
cap nvidia-smi nvidia-smi
cap nvidia-smi-q nvidia-smi -q
cap nvidia-smi-L nvidia-smi -L
cap query-gpu-csv nvidia-smi --query-gpu=$q --format=csv
cap query-gpu-csv-noheader nvidia-smi --query-gpu=$q --format=csv,noheader,nounits
cap query-gpu-invalid-index nvidia-smi -i 99 --query-gpu=$q --format=csv
cap query-gpu-bad-field nvidia-smi --query-gpu=index,no.such.field --format=csv
cap nvlink-status nvidia-smi nvlink --status
cap nvlink-status-i0 nvidia-smi nvlink --status -i 0
cap nvlink-capabilities nvidia-smi nvlink -c
cap nvlink-invalid-index nvidia-smi nvlink --status -i 99
cap topo-m nvidia-smi topo -m
cap help-query-gpu nvidia-smi --help-query-gpu
cap version nvidia-smi --version
cap lspci-nvidia sh -c 'lspci -nn -d 10de: 2>&1 || ls /sys/bus/pci/devices'
cap sys-pci-vendors sh -c 'grep -l 0x10de /sys/bus/pci/devices/*/vendor 2>&1; for d in /sys/bus/pci/devices/*; do echo "$d $(cat $d/vendor) $(cat $d/device) $(cat $d/class)"; done'
cap uname uname -a
cap os-release cat /etc/os-release
