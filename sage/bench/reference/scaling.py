"""Timing big library kernels from two small runs with the same per-core work pattern.

A library kernel deals equal tiles to its blocks and each block loops over its tiles, so
its time is an affine function of the number of tile steps the busiest block makes, for
the same tile shape and the same number of blocks: `t(q) = t0 + q * t_step`. When the full
shape would make every block loop more than `EXACT_STEPS` times, the model simulates the
same kernel on two reduced shapes whose blocks make `K1` and `K2` steps of identical tiles,
and extrapolates the line to the full shape's step count. Shapes at or below the limit
are simulated exactly. `tests/bench/test_reference.py` checks the extrapolation against an
exact simulation.
"""

from __future__ import annotations

from pydantic import BaseModel

EXACT_STEPS = 6
K1, K2 = 2, 4

Inputs = list[tuple[tuple[int, ...], str]]


class Scaling(BaseModel):
    steps_full: int            # tile steps of the busiest block at the full shape
    sub_inputs: list[Inputs]   # the two reduced shapes
    sub_steps: list[int]       # their busiest-block step counts


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def elementwise_scaling(kinds: list[str], dtypes: list[str], R: int, C: int, tile: int, align: int,
                        cores: int) -> Scaling | None:
    flat = R == 1 and all(k in ("full", "scalar") for k in kinds)
    stride = _ceil(C, align) * align

    def shapes(rows: int, cols: int) -> Inputs:
        table = {"full": (rows, cols) if not flat else (cols,), "row": (cols,), "col": (rows, 1), "scalar": (1,)}
        return [(table[k], d) for k, d in zip(kinds, dtypes)]

    if flat:
        q = _ceil(_ceil(C, tile), cores)
        if q <= EXACT_STEPS:
            return None
        return Scaling(steps_full=q, sub_inputs=[shapes(1, k * cores * tile) for k in (K1, K2)], sub_steps=[K1, K2])
    if stride <= tile:
        rpt = tile // stride
        q = _ceil(_ceil(R, rpt), cores)
        if R < cores * rpt or q <= EXACT_STEPS:
            return None
        return Scaling(steps_full=q, sub_inputs=[shapes(k * cores * rpt, C) for k in (K1, K2)], sub_steps=[K1, K2])
    n_ct = _ceil(C, tile)
    q = _ceil(R * n_ct, cores)
    if R < cores or q <= EXACT_STEPS:
        return None
    return Scaling(steps_full=q, sub_inputs=[shapes(k * cores, C) for k in (K1, K2)],
                   sub_steps=[K1 * n_ct, K2 * n_ct])


def row_scaling(R: int, C: int, dtype: str, extra: Inputs, tile: int, align: int, cores: int) -> Scaling | None:
    stride = _ceil(C, align) * align
    rpb = _ceil(R, cores)
    rpt = tile // stride if stride <= tile else 1
    if rpb < rpt:
        return None
    q = _ceil(rpb, rpt)
    if q <= EXACT_STEPS:
        return None
    return Scaling(steps_full=q, sub_inputs=[[((k * cores * rpt, C), dtype), *extra] for k in (K1, K2)],
                   sub_steps=[K1, K2])


def matmul_scaling(batch: int, M: int, K: int, N: int, dtype: str, batched: bool, base_m: int, base_n: int,
                   cores: int) -> Scaling | None:
    if M < base_m:
        return None        # a smaller tile: the reduced shapes would not keep it
    bn = min(base_n, _ceil(N, 16) * 16)
    n_nt = _ceil(N, bn)
    T = batch * _ceil(M, base_m) * n_nt
    q = _ceil(T, cores)
    if T < cores or q <= EXACT_STEPS:
        return None

    def shapes(m: int) -> Inputs:
        if batched:
            return [((1, m, K), dtype), ((1, K, N), dtype)]
        return [((m, K), dtype), ((K, N), dtype)]

    return Scaling(steps_full=q, sub_inputs=[shapes(k * cores * base_m) for k in (K1, K2)],
                   sub_steps=[K1 * n_nt, K2 * n_nt])


def extrapolate(t1: float, t2: float, q1: int, q2: int, q: int) -> float:
    slope = (t2 - t1) / (q2 - q1)
    return t1 + slope * (q - q1)

