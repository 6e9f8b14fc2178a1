#!/usr/bin/env bash
# On the device machine (one GPU, torch with its NCCL wheel, nvcc, no network): build nccl-tests (carried in
# .nccl-tests, NVIDIA/nccl-tests at v2.19.6) against the NCCL that torch ships, run it with NCCL_DEBUG=INFO and keep
# the outputs in $OUT as parser fixtures (tests/fixtures/nccl-tests/).
set -x
OUT=${OUT:-/tmp/out}
NH=$(python3 -c "import nvidia.nccl as n; print(list(n.__path__)[0])" 2>&1) ; echo "NCCL_HOME=$NH"; ls $NH $NH/lib $NH/include | head
mkdir -p /tmp/ncl/lib && ln -sf $NH/lib/libnccl.so.2 /tmp/ncl/lib/libnccl.so && ln -sfn $NH/include /tmp/ncl/include
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt 2>&1
# The GPU in the fixtures' names (h100, h200): "NVIDIA H200" -> h200.
G=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
cd .nccl-tests && time make -j16 CUDA_HOME=/usr/local/cuda NCCL_HOME=/tmp/ncl NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > $OUT/build.log 2>&1; echo build rc=$?; tail -5 $OUT/build.log
export LD_LIBRARY_PATH=$NH/lib
NCCL_DEBUG=INFO ./build/all_reduce_perf -b 8 -e 512M -f 4 -g 1 > $OUT/all_reduce_perf__${G}-1gpu-NCCL_DEBUG-INFO.txt 2>&1; echo rc=$?
./build/all_gather_perf -b 1M -e 1G -f 4 -g 1 > $OUT/all_gather_perf__${G}-1gpu.txt 2>&1; echo rc=$?
NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=nonexistent0 ./build/all_reduce_perf -b 8 -e 8 -g 1 > $OUT/all_reduce_perf__${G}-1gpu-bad-ifname.txt 2>&1; echo rc=$?
./build/all_reduce_perf -b 8 -e 8 -g 2 > $OUT/all_reduce_perf__${G}-1gpu-asks-2-gpus.txt 2>&1; echo rc=$?
tail -30 $OUT/all_reduce_perf__${G}-1gpu-NCCL_DEBUG-INFO.txt
