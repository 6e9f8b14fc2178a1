"""Single-node GPU baseline: a bf16 matmul rate and the device memory copy bandwidth per GPU, judged against a
per-platform table. The seed's first scaling step: one node measured before any multi-node claim.

Plain Python: the probe (PROBE) runs on the node under a Python that has torch; judge() runs anywhere and is
unit-tested with real device outputs (tests/fixtures/device-runs/)."""
from __future__ import annotations

import json

# Reference figures per platform (GPU name substring -> bf16 dense matmul TFLOP/s and device copy TB/s, read plus
# write, as the probe measures them), and where each comes from. A GPU passes at `min_share` of its reference.
PLATFORMS = {
    "H100": {"tflops_bf16": 800.0, "copy_tbps": 3.0,
             "source": "torch 2.11 on an H100 80GB HBM3: 782-792 TFLOP/s, 3.02-3.03 TB/s (tests/fixtures/device-runs/h100-2026-12-07)"},
    "H200": {"tflops_bf16": 790.0, "copy_tbps": 4.0,
             "source": "the H100's measured compute (same chip) and NVIDIA's 4.8 TB/s at the H100's measured copy share; "
                       "no H200 measured by this probe yet"},
    "B200": {"tflops_bf16": 1500.0, "copy_tbps": 6.5,
             "source": "NVIDIA's B200 datasheet (2.25 PFLOP/s dense bf16, 8 TB/s) at the H100's measured share of peak"},
    "GB10": {"tflops_bf16": 90.0, "copy_tbps": 0.2,
             "source": "NVIDIA's GB10 figures (1 PFLOP/s sparse FP4 = 125 TFLOP/s dense bf16, 273 GB/s LPDDR5x) "
                       "at about the H100's measured share of peak; no GB10 measured here"},
}
DEFAULT_MIN_SHARE = 0.75

PROBE = r'''
import json, sys, time
try:
    import torch
except Exception as e:  # no torch in this Python
    print(json.dumps({"error": "no_torch", "message": "%s: %s" % (type(e).__name__, e)})); sys.exit(0)
if not torch.cuda.is_available():
    print(json.dumps({"error": "no_cuda", "message": "torch %s sees no CUDA device" % torch.__version__})); sys.exit(0)
n, iters, copy_mib = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpus": []}
for i in range(torch.cuda.device_count()):
    d = torch.device("cuda", i)
    with torch.cuda.device(d):
        a = torch.randn(n, n, device=d, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=d, dtype=torch.bfloat16)
        for _ in range(3):
            a @ b
        torch.cuda.synchronize(d)
        t = time.perf_counter()
        for _ in range(iters):
            a @ b
        torch.cuda.synchronize(d)
        mm = time.perf_counter() - t
        x = torch.empty(copy_mib * 2 ** 18, dtype=torch.float32, device=d)
        y = torch.empty_like(x)
        for _ in range(3):
            y.copy_(x)
        torch.cuda.synchronize(d)
        t = time.perf_counter()
        for _ in range(iters):
            y.copy_(x)
        torch.cuda.synchronize(d)
        cp = time.perf_counter() - t
        out["gpus"].append({"index": i, "name": torch.cuda.get_device_name(d),
                            "tflops_bf16": round(2 * n ** 3 * iters / mm / 1e12, 1),
                            "copy_tbps": round(2 * x.numel() * 4 * iters / cp / 1e12, 3),
                            "matmul_n": n, "iters": iters, "copy_mib": copy_mib})
        del a, b, x, y
        torch.cuda.empty_cache()
print(json.dumps(out))
'''


def platform_of(name, platforms=None):
    """The table row whose key is in the GPU's name ('NVIDIA H100 80GB HBM3' -> H100), or None."""
    platforms = platforms or PLATFORMS
    return next((k for k in sorted(platforms, key=len, reverse=True) if k.lower() in (name or "").lower()), None)


def parse(text):
    """The probe's last JSON line -> dict; a non-JSON answer becomes an error naming its start."""
    for line in reversed((text or "").strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return {"error": "unparsed", "message": (text or "no output").strip()[:300]}


def judge(data, platforms=None, min_share=DEFAULT_MIN_SHARE):
    """Probe result -> checks [{check: gpu_baseline, target, status, detail, ...}], one per GPU and figure."""
    platforms = platforms or PLATFORMS
    if data.get("error"):
        return [{"check": "gpu_baseline", "target": "torch", "status": "not_checked" if data["error"] == "no_torch" else "fail",
                 "detail": "%s: %s" % (data["error"], data.get("message", ""))}]
    checks = []
    for g in data.get("gpus") or []:
        plat = platform_of(g.get("name"), platforms)
        for key, unit, label in (("tflops_bf16", "TFLOP/s", "bf16 matmul"), ("copy_tbps", "TB/s", "memory copy")):
            target = "GPU %s %s" % (g.get("index"), label)
            got = g.get(key)
            if plat is None:
                checks.append({"check": "gpu_baseline", "target": target, "status": "not_checked", "measured": got,
                               "detail": "%s %s measured; no reference for %s (hardware_check_gpu_platforms)" % (got, unit, g.get("name"))})
                continue
            want = float(platforms[plat][key]) * float(min_share)
            ok = got is not None and float(got) >= want
            checks.append({"check": "gpu_baseline", "target": target, "status": "pass" if ok else "fail", "measured": got,
                           "expected_min": round(want, 3),
                           "detail": "%s %s %s, expected >= %.3g (%s x %s reference %s)"
                                     % (g.get("name"), got, unit, want, min_share, plat, platforms[plat][key])})
    if not checks:
        checks.append({"check": "gpu_baseline", "target": "torch", "status": "fail", "detail": "the probe listed no GPU"})
    return checks
