"""Loading task files: the suite, third-party KernelBench / MultiKernelBench files, broken files."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sage.bench.tasks import (ReferenceUnavailable, TaskLoadError, UnknownOpError, kernel_args, level_of,
                              load_task, load_tasks, parameter_kwargs, resolve_op, suite_files)

FIXTURES = Path(__file__).parents[1] / "fixtures"
THIRDPARTY = FIXTURES / "thirdparty"


def test_kernelbench_file_without_input_groups_falls_back_to_get_inputs():
    task = load_task(THIRDPARTY / "kernelbench/level1/19_ReLU.py")
    assert task.name == "19_ReLU" and task.level == 1 and task.key == "level1/19_ReLU"
    assert task.tags == [] and "ReLU" in task.description
    cases = task.cases()
    assert len(cases) == 1 and cases[0][0].shape == (16, 2048)


def test_inputs_are_fresh_on_every_call():
    task = load_task(THIRDPARTY / "kernelbench/level1/19_ReLU.py")
    assert not torch.equal(task.cases()[0][0], task.cases()[0][0])


def test_thirdparty_folder_loads_with_the_right_skips():
    tasks, skipped = load_tasks(THIRDPARTY)
    assert sorted(t.key for t in tasks) == ["level1/19_ReLU", "level1/97_Sync_cuda_forward",
                                           "level2/12_Scale_Bias", "sigmoid"]
    reasons = {s.name: (s.kind, s.reason) for s in skipped}
    assert set(reasons) == {"98_Gemm_cuda_inputs", "rotary_mul"}
    assert reasons["rotary_mul"] == ("reference_unavailable", "imports torch_npu (line 5)")
    assert reasons["98_Gemm_cuda_inputs"][0] == "reference_unavailable"
    assert ".cuda()" in reasons["98_Gemm_cuda_inputs"][1]


def test_multikernelbench_category_file_has_no_level():
    task = load_task(THIRDPARTY / "multikernelbench/activation/sigmoid.py")
    assert task.level is None and task.key == "sigmoid"


def test_torch_npu_import_is_reference_unavailable_not_load_error():
    with pytest.raises(ReferenceUnavailable, match="imports torch_npu"):
        load_task(THIRDPARTY / "multikernelbench/npu_fused/rotary_mul.py")


def test_model_parameters_become_kwargs_with_underscores():
    task = load_task(THIRDPARTY / "kernelbench/level2/12_Scale_Bias.py")
    model = task.make_model()
    kwargs = parameter_kwargs(model)
    assert sorted(kwargs) == ["scale_weight", "shift"]
    assert isinstance(kwargs["shift"], np.ndarray) and kwargs["shift"].shape == (512,)
    np.testing.assert_array_equal(kwargs["scale_weight"], model.scale.weight.detach().numpy())


def test_kernel_args_convert_tensors_and_keep_scalars():
    import ml_dtypes

    x = torch.randn(4, 3).to(torch.bfloat16)
    args = kernel_args([x, 2, 0.5, [torch.ones(2)]])
    assert args[0].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(args[0].astype(np.float32), x.float().numpy())
    assert args[1:3] == [2, 0.5] and isinstance(args[3][0], np.ndarray)


@pytest.mark.parametrize("name, problem", [
    ("syntax_error.py", "syntax error at line 5"),
    ("no_model.py", "missing `Model`"),
    ("inputs_raise.py", "get_inputs() raised RuntimeError"),
])
def test_broken_files_name_the_file_and_the_problem(name, problem):
    with pytest.raises(TaskLoadError) as info:
        load_task(FIXTURES / "broken" / name)
    assert name in str(info.value) and problem in str(info.value)


def test_a_broken_file_in_a_folder_is_skipped_not_fatal():
    tasks, skipped = load_tasks(FIXTURES / "broken")
    assert tasks == []
    assert {s.name: s.kind for s in skipped} == {"syntax_error": "load_error", "no_model": "load_error",
                                                 "inputs_raise": "load_error"}


def test_level_from_folder_names():
    assert level_of(Path("x/level3/01_a.py")) == 3
    assert level_of(Path("x/npukernelbench_level2/a.py")) == 2
    assert level_of(Path("x/activation/a.py")) is None


def test_resolve_suite_names_in_every_form():
    by_key = resolve_op("level1/10_layer_norm")
    assert by_key.name == "10_layer_norm.py" and by_key.parent.name == "level1"
    assert resolve_op("10_layer_norm") == by_key
    from sage.bench.tasks import plain_op_files

    plain = {p.stem for p in plain_op_files()}
    only_in_suite = next(f for f in suite_files() if f.stem.split("_", 1)[1] not in plain)
    assert resolve_op(only_in_suite.stem.split("_", 1)[1]) == only_in_suite


def test_resolve_prefers_plain_ops():
    from sage.bench.tasks import PLAIN_OPS_DIR, plain_op_files

    plain = {p.stem for p in plain_op_files()}
    suite = {f.stem.split("_", 1)[1] for f in suite_files()}
    both = sorted(plain & suite)
    assert both, "the plain ops/ tasks share names with suite tasks (relu, layer_norm, ...)"
    assert resolve_op(both[0]).parent == PLAIN_OPS_DIR


def test_unknown_name_lists_close_matches():
    with pytest.raises(UnknownOpError, match="Did you mean: .*layer_norm"):
        resolve_op("layer_nrom")


def test_resolve_accepts_a_path():
    path = THIRDPARTY / "kernelbench/level1/19_ReLU.py"
    assert resolve_op(str(path)) == path.resolve()


def test_suite_files_are_ordered_by_level_and_number():
    files = suite_files()
    levels = [level_of(f) for f in files]
    assert levels == sorted(levels)
    level0 = [f.stem for f in files if level_of(f) == 0]
    assert level0[:2] == ["01_logical_and", "02_floor_divide"]
