"""The library's cube pipelines on the simulator, against the cube's peak and the reference model.

Flash attention forward (sage/kernels/library/flash_attention.py: one MIX_AIC_1_2 launch), causal,
fp16, batch B, H heads, sequence S, head dim D (issue 26 asks for 1 x 32 x 8192 x 128). It reports:

- `device_us`: the launch's device time on the simulator;
- `computed_tflops` and `peak_fraction`: the cube FLOPs of the tiles the kernel computes (two
  128 x 128 x D products per visited (query tile, key tile) pair; the tiles above the diagonal
  are skipped and not counted), over the device time, and as a fraction of the cube's fp16 peak
  (AIC cores x 16 x 16 x 16 MACs per cycle x 2 x clock, the simulator's own `mad_cycles` rate);
- `useful_tflops`: the causal half of the score matrix only, 2 * B * H * S * S * D FLOPs
  (the convention of the public figures: 4 * Sq * Skv * D, halved for a causal mask);
- `reference_us`: the reference model's device time for npu_fusion_attention at that shape
  (sage/bench/reference/standin_work.py: the vendor model with the fused-attention cube factor
  calibrated on huawei-csl/pto-dsl PR 126, https://github.com/huawei-csl/pto-dsl/pull/126, which
  publishes 175.53 us for Q rows 3072, 8192 keys, head dim 128), `speedup` = reference / kernel;
- `sim_s`: the wall time of the simulation. 1 x 32 x 8192 x 128 is 66,560 tile pairs: its one
  launch makes more than the simulator's 2,500,000 instruction records per launch
  (sage/npu/sim/caps.py) and is refused (KernelResourceError); `--heads 8` at 8192 (16,640
  pairs, the same per-core work pattern) and `--seq 4096` at 32 heads run, in about 13 min each
  on a loaded 2-core machine.

With `--check`, head 0's output is compared with torch (fp32 softmax attention).

    .venv/bin/python benchmarks/cube_pipelines.py [--seq 8192] [--heads 32] [--batch 1] [--dim 128]
                                                  [--group 4] [--depth 2] [--check] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sage.bench.reference.standin_work import cube_factor, work_from  # noqa: E402
from sage.bench.reference.vendor import group_of, vendor_time  # noqa: E402
from sage.kernels import TensorMeta  # noqa: E402
from sage.kernels.library.flash_attention import AttnSpec, FlashKnobs, flash_attention_source  # noqa: E402
from sage.npu.execute import run_kernel_source  # noqa: E402
from sage.npu.hardware import load_preset  # noqa: E402


def cube_peak_tflops(hw) -> float:
    """fp16: one 16 x 16 x 16 fractal step per cycle per AIC (docs/dsl.md, Mmad cost)."""
    f = hw.cube.fractal
    return hw.chip.aic_cores * f * f * f * 2 * hw.chip.clock_mhz * 1e6 / 1e12


def reference_us(b: int, h: int, s: int, d: int, hw) -> float:
    """npu_fusion_attention (BNSD, causal: sparse_mode 3 with its 2048 x 2048 mask) on the reference model."""
    q = TensorMeta(shape=[b, h, s, d], dtype="float16")
    args = {"query": q, "key": q, "value": q, "head_num": h, "input_layout": "BNSD",
            "atten_mask": TensorMeta(shape=[2048, 2048], dtype="bool"), "sparse_mode": 3}
    nbytes = 4.0 * q.nbytes + 2048 * 2048
    work = work_from("npu_fusion_attention", args, nbytes, hw)
    work = work.model_copy(update={"cube_flops": work.cube_flops * cube_factor("npu_fusion_attention", hw)})
    return vendor_time(work, group_of(None, work, hw), hw).device_us


def flash_attention(b: int, h: int, s: int, d: int, knobs: FlashKnobs, check: bool, preset: str) -> dict:
    hw = load_preset(preset)
    spec = AttnSpec(batch=b, heads=h, kv_heads=h, sq=s, skv=s, d=d, dtype="float16", scale=1 / math.sqrt(d),
                    mask="causal")
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, h, s, d).half() for _ in range(3))
    start = time.time()
    result = run_kernel_source(flash_attention_source(spec, knobs), [q.numpy(), k.numpy(), v.numpy()],
                               filename="flash_attention.py", preset=preset, instruction_budget=2_000_000_000)
    sim_s = time.time() - start
    if result.error is not None:
        raise SystemExit(f"the kernel failed: {result.error.type}: {result.error.message}")
    device_us = result.profile.device_us
    computed = spec.flops()
    useful = 2.0 * b * h * s * s * d
    peak = cube_peak_tflops(hw)
    ref = reference_us(b, h, s, d, hw)
    out = {"kernel": "flash_attention_forward", "shape": [b, h, s, d], "dtype": "float16", "mask": "causal",
           "knobs": knobs.model_dump(), "device_us": round(device_us, 2), "launches": result.profile.launches,
           "computed_tflops": round(computed / device_us / 1e6, 2), "useful_tflops": round(useful / device_us / 1e6, 2),
           "peak_tflops": round(peak, 1), "peak_fraction": round(computed / device_us / 1e6 / peak, 4),
           "reference_us": round(ref, 2), "speedup": round(ref / device_us, 3), "sim_s": round(sim_s, 1),
           "bottleneck": result.profile.bottleneck}
    if check:
        o = torch.from_numpy(np.asarray(result.outputs[0])[0, 0].astype(np.float32))
        want = torch.nn.functional.scaled_dot_product_attention(q[0, 0].float()[None], k[0, 0].float()[None],
                                                                v[0, 0].float()[None], is_causal=True)[0]
        out["head0_max_abs_error"] = float((o - want).abs().max())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--preset", default="ascend910b2")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    row = flash_attention(a.batch, a.heads, a.seq, a.dim, FlashKnobs(group=a.group, depth=a.depth), a.check, a.preset)
    if a.json:
        print(json.dumps([row], indent=2))
        return
    for k, v in row.items():
        print(f"{k:>22}: {v}")


if __name__ == "__main__":
    main()
