"""The flash-attention generator against torch's scaled_dot_product_attention: mask kinds,
GQA, ragged and unequal sequence lengths, bf16, the knobs, and the tiles it computes."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sage.bench.correctness import TOLERANCES
from sage.kernels.library.flash_attention import AttnSpec, FlashKnobs, flash_attention_source
from sage.npu.execute import run_kernel_source
from sage.npu.hardware import load_preset

HW = load_preset("ascend910b2")
TILE = 128


def _np(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.numpy()


def run(spec: AttnSpec, q, k, v, mask=None, knobs=FlashKnobs()):
    args = [_np(q), _np(k), _np(v)] + ([mask.numpy()] if mask is not None else [])
    result = run_kernel_source(flash_attention_source(spec, knobs), args, filename="flash_attention.py")
    assert result.error is None, result.error
    return result


def sdpa(q, k, v, scale, attn_mask=None, causal_offset=None):
    """torch's SDPA in fp32 (GQA by repeating kv heads); a causal offset as a keep-mask."""
    group = q.shape[1] // k.shape[1]
    k, v = (t.float().repeat_interleave(group, dim=1) for t in (k, v))
    if causal_offset is not None:
        sq, skv = q.shape[2], k.shape[2]
        attn_mask = torch.arange(skv)[None, :] <= torch.arange(sq)[:, None] + causal_offset
    return F.scaled_dot_product_attention(q.float(), k, v, attn_mask=attn_mask, scale=scale)


def assert_close(out, expected: torch.Tensor, dtype: torch.dtype) -> None:
    """docs/evaluation.md's rule: an element fails when it breaks both the absolute and relative
    tolerance of the dtype; the relative L2 error must pass too (expected rounded to dtype)."""
    tol = TOLERANCES[str(dtype).split(".")[1]]
    want = expected.to(dtype).double().numpy()
    got = np.asarray(out).astype(np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want)
    assert not ((err > tol) & (err > tol * np.abs(want))).any(), f"max error {err.max():.3g}"
    assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want)


def inputs(b, h, hkv, sq, skv, d, dtype=torch.float16, seed=0):
    torch.manual_seed(seed)
    return (torch.randn(b, h, sq, d).to(dtype), torch.randn(b, hkv, skv, d).to(dtype),
            torch.randn(b, hkv, skv, d).to(dtype))


def spec_of(q, k, mask="none", **kw) -> AttnSpec:
    b, h, sq, d = q.shape
    return AttnSpec(batch=b, heads=h, kv_heads=k.shape[1], sq=sq, skv=k.shape[2], d=d,
                    dtype=str(q.dtype).split(".")[1], scale=kw.pop("scale", 1 / math.sqrt(d)), mask=mask, **kw)


@pytest.mark.parametrize("shape", [(1, 2, 2, 256, 256, 128), (1, 2, 2, 300, 300, 64), (2, 1, 1, 40, 40, 64)])
def test_causal_matches_sdpa(shape):
    q, k, v = inputs(*shape)
    result = run(spec_of(q, k, "causal"), q, k, v)
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    assert_close(result.outputs[0], expected, q.dtype)
    assert result.profile.launches == 1


@pytest.mark.parametrize("shape", [(2, 4, 2, 200, 333, 128), (1, 1, 1, 1, 1000, 128), (1, 3, 3, 129, 127, 64)])
def test_no_mask_with_unequal_and_ragged_lengths_and_gqa(shape):
    q, k, v = inputs(*shape)
    result = run(spec_of(q, k), q, k, v)
    assert_close(result.outputs[0], sdpa(q, k, v, 1 / math.sqrt(q.shape[-1])), q.dtype)


@pytest.mark.parametrize("offset", [0, 133, 256])
def test_causal_offsets_with_gqa(offset):
    # offset SKV - SQ = 133 is npu_fusion_attention's bottom-right causal: two partly masked tiles per row
    q, k, v = inputs(1, 4, 1, 200, 333, 128)
    result = run(spec_of(q, k, "causal", causal_offset=offset), q, k, v)
    assert_close(result.outputs[0], sdpa(q, k, v, 1 / math.sqrt(128), causal_offset=offset), q.dtype)


def test_bf16_causal_across_key_groups():
    q, k, v = inputs(1, 1, 1, 600, 600, 64, torch.bfloat16)    # 5 key tiles: two groups of 4
    result = run(spec_of(q, k, "causal"), q, k, v)
    assert_close(result.outputs[0], sdpa(q, k, v, 1 / 8, causal_offset=0), torch.bfloat16)


@pytest.mark.parametrize("true_keeps", [False, True])
@pytest.mark.parametrize("mshape", [(1, 1), (2, 1), (1, 2)])
def test_boolean_data_mask_in_both_conventions(mshape, true_keeps):
    q, k, v = inputs(2, 2, 1, 200, 301, 64)
    torch.manual_seed(5)
    mask = torch.rand(*mshape, 200, 301) < 0.6
    mask[..., 7] = true_keeps          # every query keeps key 7 (else torch gives NaN rows)
    spec = spec_of(q, k, "data", mask_batch=mshape[0], mask_heads=mshape[1], mask_true_keeps=true_keeps)
    result = run(spec, q, k, v, mask)
    keep = mask if true_keeps else ~mask
    assert_close(result.outputs[0], sdpa(q, k, v, 1 / 8, attn_mask=keep), q.dtype)
    assert result.profile.launches == 2           # the bits pre-pass, then the attention


def test_knobs_change_the_schedule_not_the_result():
    q, k, v = inputs(1, 2, 2, 700, 700, 64)
    expected = sdpa(q, k, v, 0.3, causal_offset=0)
    times = set()
    for knobs in (FlashKnobs(), FlashKnobs(group=2, depth=3, block_dim=3), FlashKnobs(group=1, block_dim=1)):
        result = run(spec_of(q, k, "causal", scale=0.3), q, k, v, knobs=knobs)
        assert_close(result.outputs[0], expected, q.dtype)
        times.add(round(result.profile.device_us, 2))
    assert len(times) == 3


def test_causal_computes_only_the_tiles_up_to_the_diagonal():
    q, k, v = inputs(1, 2, 2, 3 * TILE, 3 * TILE, 128)
    spec = spec_of(q, k, "causal")
    result = run(spec, q, k, v)
    # per (query tile, key tile): S^T = K Q^T and P V, each ceil(128/16)^3 cycles + fixed
    mmad = (TILE // 16) ** 3 + HW.cube.fixed_cycles
    assert spec.tiles() == 1 + 2 + 3
    assert result.profile.pipes["M"].busy_cycles == pytest.approx(2 * 2 * 6 * mmad, abs=1)


def test_shapes_it_cannot_take_are_refused_by_name():
    with pytest.raises(ValueError, match="head dimensions"):
        AttnSpec(batch=1, heads=1, kv_heads=1, sq=8, skv=8, d=96, dtype="float16", scale=1.0)
    with pytest.raises(ValueError, match="must divide"):
        AttnSpec(batch=1, heads=3, kv_heads=2, sq=8, skv=8, d=64, dtype="float16", scale=1.0)
    with pytest.raises(ValueError, match="no visible key"):
        AttnSpec(batch=1, heads=1, kv_heads=1, sq=8, skv=8, d=64, dtype="float16", scale=1.0, mask="causal",
                 causal_offset=-1)


def mmad_busy(pairs: int, heads: int) -> float:
    """M-pipe cycles of `pairs` (query tile, key tile) pairs per head at D = 128: S^T = K Q^T and
    P V, each ceil(128/16)^3 cycles + the fixed cost."""
    return 2 * heads * pairs * ((TILE // 16) ** 3 + HW.cube.fixed_cycles)


def test_a_causal_mask_given_as_data_visits_only_the_tiles_up_to_the_diagonal():
    q, k, v = inputs(1, 2, 2, 3 * TILE, 3 * TILE, 128)
    mask = torch.ones(3 * TILE, 3 * TILE, dtype=torch.bool).triu(diagonal=1)
    result = run(spec_of(q, k, "data"), q, k, v, mask)
    assert_close(result.outputs[0], sdpa(q, k, v, 1 / math.sqrt(128), causal_offset=0), q.dtype)
    assert result.profile.pipes["M"].busy_cycles == pytest.approx(mmad_busy(1 + 2 + 3, 2), abs=1)


def test_leading_key_tiles_a_data_mask_hides_everywhere_are_skipped():
    # keys 0..199 hidden from every query: key tile 0 is never visited, tile 1 is (keys 200..255)
    q, k, v = inputs(1, 2, 2, 3 * TILE, 3 * TILE, 128)
    mask = torch.zeros(3 * TILE, 3 * TILE, dtype=torch.bool)
    mask[:, :200] = True
    result = run(spec_of(q, k, "data"), q, k, v, mask)
    assert_close(result.outputs[0], sdpa(q, k, v, 1 / math.sqrt(128), attn_mask=~mask), q.dtype)
    assert result.profile.pipes["M"].busy_cycles == pytest.approx(mmad_busy(3 * 2, 2), abs=1)


@pytest.mark.parametrize("mask", [False, True])
def test_gqa_decode_packs_the_heads_of_a_kv_head_into_one_query_tile(mask):
    # one query position, 8 query heads on 2 kv heads: 2 items per batch of 4 rows each, so each
    # key tile is multiplied once per kv head (2 x 2 x 3 pairs), not once per query head
    q, k, v = inputs(2, 8, 2, 1, 300, 128)
    torch.manual_seed(6)
    hide = torch.rand(2, 1, 1, 300) < 0.5
    hide[..., 9] = False
    spec = spec_of(q, k, "data" if mask else "none", mask_batch=2 if mask else 1)
    result = run(spec, q, k, v, hide if mask else None)
    expected = sdpa(q, k, v, 1 / math.sqrt(128), attn_mask=~hide if mask else None)
    assert_close(result.outputs[0], expected, q.dtype)
    assert result.profile.pipes["M"].busy_cycles == pytest.approx(mmad_busy(3, 2 * 2), abs=1)
