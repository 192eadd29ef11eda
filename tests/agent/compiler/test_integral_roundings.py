"""A rounding of a value that is already an integer costs nothing: `x.round().to(int8)`
(a quantiser) rounds once, not once for round and again for the cast's truncation."""

from __future__ import annotations

import numpy as np

from sage.kernels import Const, Inp, Op
from sage.kernels.lowering import _drop_integral_roundings


def test_a_trunc_of_a_clamped_round_is_dropped_and_a_trunc_of_a_product_is_kept():
    x = Inp(0)
    q = Op("clamp", (Op("round", (Op("div", (x, Const(0.5))),)),), (("min", -128.0), ("max", 127.0)))
    assert _drop_integral_roundings(Op("trunc", (q,))) == q
    # a clamp to a non-integer bound, or a product with 0.5, may leave the integers
    half = Op("clamp", (Op("round", (x,)),), (("min", -1.5),))
    assert _drop_integral_roundings(Op("trunc", (half,))) == Op("trunc", (half,))
    scaled = Op("mul", (Op("round", (x,)), Const(0.5)))
    assert _drop_integral_roundings(Op("floor", (scaled,))) == Op("floor", (scaled,))


def test_a_rounded_quantiser_runs_one_rounding(compile_graph):
    compiled, run = compile_graph("x", "torch.round(x * 4.0).clamp(-100, 100).to(torch.int32)",
                                  "torch.randn(8, 64)")
    # one magnitude guard (round's), none for the cast's trunc
    assert compiled.source.count("CompareScalar(") == 1
    x = (np.arange(512, dtype=np.float32).reshape(8, 64) - 256.0) / 7.0
    (out,) = run(x)
    np.testing.assert_array_equal(out, np.clip(np.round(x * 4.0), -100, 100).astype(np.int32))


def test_an_int32_floor_division_rounds_in_its_store_cast(compile_graph):
    # a // b of int32 computes floor(a / b) in float32: the int32 store's Cast rounds toward
    # -inf itself (CAST_FLOOR), no float floor (guard, casts, select) before a truncating cast
    compiled, run = compile_graph("a, b", "torch.floor_divide(a, b)",
                                  "torch.randint(-50, 50, (4, 96), dtype=torch.int32), "
                                  "torch.randint(1, 9, (4, 96), dtype=torch.int32)")
    assert "RoundMode.CAST_FLOOR" in compiled.source and "CompareScalar(" not in compiled.source
    rng = np.random.default_rng(2)
    a = rng.integers(-5000, 5000, (4, 96)).astype(np.int32)
    b = (rng.integers(1, 40, (4, 96)) * rng.choice([-1, 1], (4, 96))).astype(np.int32)
    (out,) = run(a, b)
    np.testing.assert_array_equal(out, np.floor_divide(a, b))


def test_an_int8_quantiser_rounds_in_its_store_cast(compile_graph):
    # round(x / 0.5).to(int8): the store rounds half to even in its float32 -> int32 Cast, then
    # takes int8's route (int32 -> float32 -> float16 -> int8, exact inside int8's range): no
    # float round (guard, two casts, select) before it
    compiled, run = compile_graph("x", "torch.round(x / 0.5).to(torch.int8)", "torch.randn(4, 128)")
    src = compiled.source
    assert "CompareScalar(" not in src and "Select(" not in src
    assert "Cast(self.cvt.Get(int32)" in src and "RoundMode.CAST_RINT" in src
    x = (np.arange(512, dtype=np.float32).reshape(4, 128) - 256.0) / 5.0    # inside int8 once doubled
    x[0, :6] = [1.25, 1.75, -1.25, -1.75, 0.25, -0.25]                       # 2.5, 3.5, -2.5, -3.5, .5, -.5
    (out,) = run(x)
    assert out[0, :6].tolist() == [2, 4, -2, -4, 0, 0]                      # half to even, as torch.round
    np.testing.assert_array_equal(out, np.round(x / 0.5).astype(np.int8))
