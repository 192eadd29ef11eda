"""Every example kernel in examples/kernels/ is correct against its task's torch reference."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from sage.npu.execute import OutputSpec, run_kernel_source
from sage.npu.restricted import compile_kernel
from sage.npu.sandbox import Limits, run_sandboxed

KERNELS = Path(__file__).resolve().parents[2] / "examples" / "kernels"
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-3, torch.bfloat16: 8e-3}

# kernel file -> task file beside it
EXAMPLES = {
    "add.py": "add_task.py",
    "softmax.py": "softmax_task.py",
    "layernorm.py": "layernorm_task.py",
    "matmul.py": "matmul_task.py",
    "matmul_vector.py": "matmul_task.py",
    "matmul_bias_gelu_mix.py": "matmul_bias_gelu_task.py",
    "flash_attention.py": "flash_attention_task.py",
}
# Tasks whose last dimension is a head dimension the kernel takes whole (64 or 128): their
# ragged case is the sequence length instead
LAST_DIM_BY_DESIGN = {"flash_attention_task.py"}


def load_task(name: str):
    path = KERNELS / name
    spec = importlib.util.spec_from_file_location(f"example_task_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_close(actual: np.ndarray, expected: torch.Tensor) -> None:
    """docs/evaluation.md: an element fails when it breaks both the absolute and the relative
    tolerance of its dtype, and the relative L2 error of the whole output must pass too."""
    tol = TOLERANCE[expected.dtype]
    assert actual.shape == tuple(expected.shape)
    assert actual.dtype == expected.numpy().dtype
    want = expected.double().numpy()
    got = actual.astype(np.float64)
    err = np.abs(got - want)
    bad = (err > tol) & (err > tol * np.abs(want))
    assert not bad.any(), f"{bad.sum()} of {bad.size} elements off, max error {err.max():.3g}"
    assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want)


def cases_of(task) -> list[list[torch.Tensor]]:
    cases = task.get_input_groups()
    assert len(cases) >= 3
    return cases


@pytest.mark.parametrize("kernel_file", sorted(EXAMPLES))
def test_example_kernel_matches_torch_on_every_case(kernel_file):
    task = load_task(EXAMPLES[kernel_file])
    source = (KERNELS / kernel_file).read_text()
    model = task.Model(*task.get_init_inputs())
    for case in cases_of(task):
        want = model(*case)
        run = run_kernel_source(source, [t.numpy() for t in case], filename=kernel_file,
                                expected=[OutputSpec(shape=tuple(want.shape), dtype=want.numpy().dtype.name)])
        assert run.error is None, f"{kernel_file} on {[tuple(t.shape) for t in case]}: {run.error}"
        assert_close(run.outputs[0], want)
        assert run.profile.cycles > 0


KERNEL_FILES = sorted(p for p in KERNELS.parent.glob("*/*.py") if not p.name.endswith("_task.py"))


@pytest.mark.parametrize("path", KERNEL_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_kernel_compiles_as_restricted_python(path):
    compile_kernel(path.read_text(), path.name)  # task files are trusted reference code: not checked


def test_task_cases_include_a_last_dimension_that_is_not_32_byte_aligned():
    for task_file in set(EXAMPLES.values()) - LAST_DIM_BY_DESIGN:
        shapes = [(case[0].shape[-1], case[0].element_size()) for case in cases_of(load_task(task_file))]
        assert any((d * size) % 32 for d, size in shapes), task_file


def test_task_inputs_are_fresh_random_data_on_every_call():
    task = load_task("softmax_task.py")
    first, second = task.get_input_groups()[0][0], task.get_input_groups()[0][0]
    assert not torch.equal(first, second)


def test_an_example_runs_the_same_through_the_sandbox():
    task = load_task("softmax_task.py")
    case = task.get_input_groups()[1]
    run = run_sandboxed((KERNELS / "softmax.py").read_text(), [t.numpy() for t in case],
                        filename="softmax.py", limits=Limits(wall_seconds=60))
    assert run.error is None, run.error
    assert_close(run.outputs[0], task.Model()(*case))


def test_a_tens_of_megabytes_output_crosses_the_sandbox_pipe_intact():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4 * 2**20, dtype=np.float32)            # 16 MB per tensor
    y = rng.standard_normal(4 * 2**20, dtype=np.float32)
    run = run_sandboxed((KERNELS / "add.py").read_text(), [x, y], filename="add.py",
                        limits=Limits(wall_seconds=120))
    assert run.error is None, run.error
    np.testing.assert_array_equal(run.outputs[0], x + y)
