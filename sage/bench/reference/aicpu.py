"""The time of one AI CPU kernel of torch_npu: a fixed cost and a per-element rate, fitted.

Some aten calls reach a CANN kernel that runs on the chip's AI CPU rather than its AI cores
(`kernel_paths.py` says which). The AI-core model of `vendor.py` (bytes over HBM bandwidth,
vector work over 48 AIV cores) does not describe them: an AI CPU kernel costs about 30 µs
even for one element.

The only public kernel times of an AI CPU kernel found are those of flagos-ai/FlagGems-vllm
pull request 818 (https://github.com/flagos-ai/FlagGems-vllm/pull/818): `torch.cumsum` of
int64[n] on the AI CPU (`CumsumAiCpu`), "kernel_details 全行求和" (every kernel_details row
summed, i.e. msprof's kernel durations: what `sage.npu.timeline` calls `kernel_us`), on an
**Ascend 910C** (CANN 9.1.0, torch-npu 2.10.0.post2), not a 910B: no 910B figure was found.
`STRESS_POINTS` are its eight "压力" (stress test) rows; the two "生产" rows (n = 18: 40 µs,
n = 288: 34 µs) were measured inside a serving run and are left out of the fit.

    kernel_us(n) = FIXED_US + PER_ELEMENT_US x n      (least squares over STRESS_POINTS)

gives 30.79 µs + 2.14 ns per element (R² = 0.61). The fixed part is well measured (30-32 µs
at every n); the per-element rate is **modelled**: it rests on a 1 µs rise from n = 1 to
n = 576, so it is not extrapolated past 576 elements (`aicpu_kernel_us`).
Other AI CPU kernels (sort, top-k, ...) have no public time of their own and take the same
fit, per element of the largest tensor they touch.
"""

from __future__ import annotations

from functools import lru_cache

SOURCE = "https://github.com/flagos-ai/FlagGems-vllm/pull/818"
# (n int64 elements, AI CPU cumsum kernel time in µs): the "压力" rows of the PR's table.
STRESS_POINTS: tuple[tuple[int, float], ...] = (
    (1, 31.0), (2, 30.0), (17, 31.0), (19, 31.0), (32, 31.0), (36, 31.0), (96, 31.0), (576, 32.0),
)


@lru_cache(maxsize=1)
def fit() -> tuple[float, float]:
    """(fixed µs, µs per element): ordinary least squares over STRESS_POINTS."""
    n = len(STRESS_POINTS)
    mx = sum(x for x, _ in STRESS_POINTS) / n
    my = sum(y for _, y in STRESS_POINTS) / n
    sxx = sum((x - mx) ** 2 for x, _ in STRESS_POINTS)
    sxy = sum((x - mx) * (y - my) for x, y in STRESS_POINTS)
    slope = sxy / sxx
    return my - slope * mx, slope


MEASURED_ELEMENTS = max(n for n, _ in STRESS_POINTS)


def aicpu_kernel_us(elements: int, aicore_us: float = 0.0) -> float:
    """Kernel time (msprof duration, no launch fixed cost) of one AI CPU kernel over `elements`.

    Within the measured sizes, the fit. Beyond them the fit's per-element rate is not
    extrapolated (it rests on a 1 µs rise): the kernel is charged the fit at the largest
    measured size plus `aicore_us`, the AI-core model's time for the same work. That is a
    lower bound (a few AI CPU cores do not outrun the AI cores' vector units), so a kernel's
    speedup against it is understated, never inflated by the extrapolation."""
    fixed, per_element = fit()
    if elements <= MEASURED_ELEMENTS:
        return fixed + per_element * max(elements, 0)
    return fixed + per_element * MEASURED_ELEMENTS + aicore_us
