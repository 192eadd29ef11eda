"""The flash-attention example beyond the task's cases: the tiles it skips, the online
rescaling across key groups, extreme logits and sequences shorter than one AIV's rows."""

from pathlib import Path

import pytest
import torch

from sage.npu.execute import OutputSpec, run_kernel_source
from sage.npu.hardware import load_preset
from tests.npu.test_examples import assert_close, load_task

KERNEL = Path(__file__).resolve().parents[2] / "examples" / "kernels" / "flash_attention.py"
HW = load_preset("ascend910b2")
TILE = 128


def run(q, k, v):
    spec = [OutputSpec(shape=tuple(q.shape), dtype="float16")]
    return run_kernel_source(KERNEL.read_text(), [q.numpy(), k.numpy(), v.numpy()], filename=KERNEL.name,
                             expected=spec)


def reference(q, k, v):
    return load_task("flash_attention_task.py").Model()(q, k, v)


def test_one_mix_launch_computes_only_the_tiles_up_to_the_diagonal():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3 * TILE, 128).half() for _ in range(3))
    result = run(q, k, v)
    assert result.error is None, result.error
    assert_close(result.outputs[0], reference(q, k, v))
    assert result.profile.launches == 1
    # per (query tile, key tile): S^T = K Q^T and P V, each ceil(128/16)^2 ceil(128/16) cycles + fixed
    mmad = (TILE // 16) ** 3 + HW.cube.fixed_cycles
    tiles = 2 * (1 + 2 + 3)                       # 2 heads, the lower triangle of 3 x 3 tiles
    assert result.profile.pipes["M"].busy_cycles == pytest.approx(2 * tiles * mmad, abs=1)


@pytest.mark.parametrize("rising", [True, False])
def test_the_running_max_is_rescaled_across_key_groups(rising):
    # keys whose logits grow (or shrink) along the sequence: with rising logits every group of
    # key tiles raises the running max far above the last one (alpha ~ 0), with falling logits
    # the first group holds it; 5 tiles are two groups of the kernel's 4
    torch.manual_seed(1)
    s = 5 * TILE - 40
    ramp = torch.linspace(0.2, 3.0, s) if rising else torch.linspace(3.0, 0.2, s)
    q = torch.randn(1, 1, s, 64).half()
    k = (torch.randn(1, 1, s, 64) * ramp[:, None]).half()
    v = torch.randn(1, 1, s, 64).half()
    result = run(q, k, v)
    assert result.error is None, result.error
    assert_close(result.outputs[0], reference(q, k, v))


def test_logits_in_the_hundreds_neither_overflow_nor_lose_the_small_terms():
    torch.manual_seed(2)
    q, k = (torch.randn(1, 1, 2 * TILE, 128) * 4 for _ in range(2))   # logits of a few hundred / sqrt(128)
    q, k, v = q.half(), k.half(), torch.randn(1, 1, 2 * TILE, 128).half()
    result = run(q, k, v)
    assert result.error is None, result.error
    assert_close(result.outputs[0], reference(q, k, v))


def test_a_sequence_shorter_than_one_aiv_s_rows():
    torch.manual_seed(3)
    q, k, v = (torch.randn(1, 3, 40, 64).half() for _ in range(3))   # the second AIV stores nothing
    result = run(q, k, v)
    assert result.error is None, result.error
    assert_close(result.outputs[0], reference(q, k, v))


def test_other_head_dimensions_are_refused_by_name():
    q = torch.randn(1, 1, 64, 96).half()
    result = run(q, q, q)
    assert result.error is not None and "head dimensions 64 and 128" in str(result.error)
