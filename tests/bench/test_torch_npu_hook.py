"""Task files that import torch_npu get the CPU stand-ins when no real torch_npu exists; the
reference model times each stand-in as one fused kernel; a kernel cannot import them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sage.bench.reference_run import measure_reference
from sage.bench.tasks import ReferenceUnavailable, load_task
from sage.bench.torch_npu_hook import real_torch_npu
from sage.npu.errors import SandboxError
from sage.npu.restricted import compile_kernel

STANDIN = Path(__file__).parents[1] / "fixtures" / "standin_tasks"
MKB = Path("/tmp/mkb/reference")

pytestmark = pytest.mark.skipif(real_torch_npu(), reason="a real torch_npu is installed: it, not the stand-in, serves")


def test_a_torch_npu_task_loads_and_its_reference_is_one_fused_op():
    task = load_task(STANDIN / "rotary_mul_npu.py")
    run = measure_reference(task, "ascend910b2", None)
    assert run.status == "reference_ok" and run.total_us and run.total_us > 0
    ops = run.cases[0].breakdown["ops"]
    assert [(o["op"], o["calls"]) for o in ops] == [("npu_rotary_mul.default", 1)]
    # the stand-in's body doubles as its meta kernel: sized (meta) cases trace without data
    meta = [t.to("meta") for t in task.cases()[0]]
    assert task.make_model()(*meta).shape == (2, 8, 16, 64)
    x, r1, r2 = task.cases()[0]
    rot = torch.cat([-x[..., 32:], x[..., :32]], -1)
    torch.testing.assert_close(task.make_model()(x, r1, r2), x * r1 + rot * r2)


def test_an_op_without_stand_in_keeps_the_file_unavailable_with_the_op_named():
    with pytest.raises(ReferenceUnavailable, match=r"torch_npu\.npu_lstm, which has no CPU stand-in"):
        load_task(STANDIN / "lstm_npu.py")


def test_cases_fill_keyword_only_forward_arguments_in_order():
    task = load_task(STANDIN / "quant_matmul_kwonly.py")
    x1, x2, s1, s2 = task.cases()[0]
    out = task.make_model()(x1, x2, s1, s2)
    want = sum(x1[b].double() @ x2[b].double() * s1[b][:, None] * s2 for b in range(2)).to(torch.bfloat16)
    torch.testing.assert_close(out, want)
    assert measure_reference(task, "ascend910b2", None).status == "reference_ok"


def test_a_kernel_cannot_import_torch_npu():
    with pytest.raises(SandboxError, match="torch_npu"):
        compile_kernel("import torch_npu\n")
    with pytest.raises(SandboxError, match="sage.bench"):
        compile_kernel("from sage.bench import torch_npu_standin\n")


# Public NPUKernelBench files (not in the repository: their licence is theirs); run only when a
# checkout is at /tmp/mkb (CI has none and no network). Cheap files of levels 1, 2 and 4.
PUBLIC = ["npukernelbench_level1/31_iou.py", "npukernelbench_level2/1_rotary_mul.py",
          "npukernelbench_level2/7_moe_gating_top_k_softmax.py", "npukernelbench_level4/9_quant_matmul_reduce_sum.py",
          "npukernelbench_level4/3_fusion_attention.py"]


@pytest.mark.skipif(not MKB.is_dir(), reason="no MultiKernelBench checkout at /tmp/mkb (it is not vendored)")
@pytest.mark.parametrize("rel", PUBLIC)
def test_public_torch_npu_files_now_have_a_reference(rel):
    task = load_task(MKB / rel)
    run = measure_reference(task, "ascend910b2", [0])
    assert run.status == "reference_ok", run.reason
    assert run.cases[0].breakdown["ops"][0]["op"].startswith("npu_")


def test_a_file_calling_a_quantising_op_is_judged_as_tagged_quant():
    # docs/evaluation.md: quantised codes may differ by one step; a public file carries no
    # TAGS, so the op it calls says so
    assert load_task(STANDIN / "dynamic_quant_dst_type.py").tags == ["quant"]
    assert load_task(STANDIN / "rotary_mul_npu.py").tags == []
    assert load_task(STANDIN / "quant_matmul_kwonly.py").tags == []     # a float output: no codes
