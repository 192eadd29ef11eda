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
    # New tensors each call (a reference that writes into its input spoils nothing later), with
    # the same values for the same seed (a case is replayed by its seed: test_seeded_cases.py).
    task = load_task(THIRDPARTY / "kernelbench/level1/19_ReLU.py")
    first, second = task.cases()[0][0], task.cases()[0][0]
    assert first.data_ptr() != second.data_ptr() and torch.equal(first, second)
    first.zero_()
    assert not torch.equal(first, task.cases()[0][0])


def test_thirdparty_folder_loads_with_the_right_skips():
    tasks, skipped = load_tasks(THIRDPARTY)
    assert sorted(t.key for t in tasks) == ["level1/19_ReLU", "level1/97_Sync_cuda_forward",
                                           "level2/12_Scale_Bias", "sigmoid"]
    reasons = {s.name: (s.kind, s.reason) for s in skipped}
    assert set(reasons) == {"98_Gemm_cuda_inputs", "rotary_mul"}
    # it imports torch_npu (served by the CPU stand-ins) but moves its inputs to the NPU
    assert reasons["rotary_mul"] == ("reference_unavailable", "calls .npu() (line 17)")
    assert reasons["98_Gemm_cuda_inputs"][0] == "reference_unavailable"
    assert ".cuda()" in reasons["98_Gemm_cuda_inputs"][1]


def test_multikernelbench_category_file_has_no_level():
    task = load_task(THIRDPARTY / "multikernelbench/activation/sigmoid.py")
    assert task.level is None and task.key == "sigmoid"


def test_npu_device_use_is_reference_unavailable_not_load_error():
    with pytest.raises(ReferenceUnavailable, match=r"calls \.npu\(\)"):
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


# --- MultiKernelBench / NPUKernelBench task files as they are (tests/fixtures/mkb_tasks) ---

MKB = FIXTURES / "mkb_tasks"
MKB0, MKB1 = MKB / "npukernelbench_level0", MKB / "npukernelbench_level1"


def _signature(case):
    """(dtype, shape) per tensor argument, the value of any other."""
    out = []
    for a in case:
        if isinstance(a, torch.Tensor):
            out.append((a.dtype, tuple(a.shape)))
        elif isinstance(a, list) and a and isinstance(a[0], torch.Tensor):
            out.append([(t.dtype, tuple(t.shape)) for t in a])
        else:
            out.append(a)
    return out


def test_mkb_folder_loads_every_task_and_skips_the_rest_with_reasons():
    tasks, skipped = load_tasks(MKB)
    # 7_rotary_mul imports torch_npu: it loads with the CPU stand-in (sage.bench.torch_npu_standin)
    assert [t.key for t in tasks] == ["level0/1_logical_and", "level0/2_leaky_relu", "level0/3_not_equal_scalar",
                                      "level0/5_clamp", "level1/5_layer_norm", "level1/6_cat", "level1/7_rotary_mul"]
    kinds = {s.name: s.kind for s in skipped}
    assert kinds == {"4_relu_backward_aten": "reference_unavailable",
                     "8_bad_case_line": "load_error", "9_negative_shape": "load_error", "case_lines": "not_a_task"}
    reasons = {s.name: s.reason for s in skipped}
    assert reasons["4_relu_backward_aten"] == ("calls torch.ops.aten.relu_backward, which this build of torch "
                                               "does not have (line 11)")
    assert reasons["case_lines"].startswith("not a task file")


def test_input_groups_from_the_case_file_keep_rank0_zero_size_8d_int_and_bool():
    task = load_task(MKB0 / "1_logical_and.py")
    assert [_signature(c) for c in task.cases()] == [
        [(torch.int8, ()), (torch.int8, ())],
        [(torch.int8, (16, 20)), (torch.int8, (16, 1))],
        [(torch.bool, (3, 0, 5)), (torch.bool, (3, 0, 5))],
        [(torch.bool, (2, 1, 3, 1, 2, 1, 2, 5)), (torch.bool, (1, 1, 3, 1, 1, 1, 2, 1))],
        [(torch.uint8, (7, 33)), (torch.int16, (33,))],
    ]
    assert all(task.case_support(c) is None for c in task.cases())


def test_missing_get_inputs_falls_back_to_the_first_group():
    task = load_task(MKB0 / "1_logical_and.py")
    assert not hasattr(task.module, "get_inputs")
    assert _signature(task.first_case()) == [(torch.int8, ()), (torch.int8, ())]


def test_missing_get_input_groups_falls_back_to_get_inputs():
    task = load_task(THIRDPARTY / "kernelbench/level1/19_ReLU.py")
    assert _signature(task.first_case()) == [(torch.float32, (16, 2048))]
    assert [_signature(c) for c in task.cases()] == [[(torch.float32, (16, 2048))]]


def test_a_task_with_only_a_case_file_reads_it_attrs_included():
    task = load_task(MKB0 / "2_leaky_relu.py")
    assert [_signature(c) for c in task.cases()] == [
        [(torch.float16, ()), 0.01],
        [(torch.float32, (0, 301)), 0.2],
        [(torch.bfloat16, (2, 2, 1, 3, 1, 2, 4, 37)), 1],
        [(torch.float32, (64, 2117)), 0.125],
    ]
    x = task.cases()[3][0]
    assert x.min() >= -3.0 and x.max() <= 3.0          # "range": [-3.0, 3.0]
    assert isinstance(task.cases()[2][1], int)         # an int attr stays an int


def test_the_reference_runs_on_every_edge_case():
    task = load_task(MKB0 / "2_leaky_relu.py")
    model = task.make_model()
    for case in task.cases():
        out = model(*case)
        assert out.shape == case[0].shape and out.dtype == case[0].dtype
    task = load_task(MKB0 / "1_logical_and.py")
    outs = [task.make_model()(*case) for case in task.cases()]
    assert [tuple(o.shape) for o in outs] == [(), (16, 20), (3, 0, 5), (2, 1, 3, 1, 2, 1, 2, 5), (7, 33)]
    assert all(o.dtype == torch.bool for o in outs)


def test_optional_inputs_are_none_when_a_case_leaves_them_out():
    task = load_task(MKB1 / "5_layer_norm.py")     # also imports the helper module beside it
    assert [_signature(c) for c in task.cases()] == [
        [(torch.float32, (16, 301)), [301], (torch.float32, (301,)), (torch.float32, (301,)), 1e-6],
        [(torch.float16, (4, 8, 64)), [8, 64], None, (torch.float16, (8, 64)), 1e-5],
        [(torch.bfloat16, (2, 2117)), [2117], None, None, 1e-5],
    ]


def test_tensor_lists_from_the_case_file():
    task = load_task(MKB1 / "6_cat.py")
    first, second = task.cases()
    assert _signature(first) == [[(torch.float16, (64, 32)), (torch.float16, (64, 0)), (torch.float16, (64, 301))], 1]
    assert _signature(second) == [[(torch.int64, (3,)), (torch.int64, (5,))], 0]
    values = torch.cat(second[0])
    assert values.min() >= 0 and values.max() <= 99
    assert tuple(task.make_model()(*first).shape) == (64, 333)


def test_fp64_and_complex_cases_load_but_are_unsupported_with_the_reason():
    task = load_task(MKB0 / "3_not_equal_scalar.py")
    cases = task.cases()
    assert [_signature(c)[0] for c in cases] == [(torch.float32, (8, 301)), (torch.float64, (4, 5)),
                                                 (torch.int32, (6,)), (torch.complex64, (3, 3))]
    assert [task.case_support(c) for c in cases] == [
        None,
        "argument 0 (float64[4, 5]): the 910B vector unit has no fp64 instructions",
        "argument 1 ((2+0j)): the 910B vector unit has no complex instructions",
        "argument 0 (complex64[3, 3]): the 910B vector unit has no complex instructions",
    ]
    model = task.make_model()
    assert all(model(*c).dtype == torch.bool for c in cases)     # the reference itself runs


def test_a_bad_case_file_line_is_named_in_the_error():
    with pytest.raises(TaskLoadError) as info:
        load_task(MKB1 / "8_bad_case_line.py")
    text = str(info.value)
    assert "8_bad_case_line.py" in text and "get_input_groups() raised JSONDecodeError" in text
    assert "8_bad_case_line.json line 2 (case 1): not JSON" in text
    with pytest.raises(TaskLoadError, match=r"9_negative_shape\.json line 3 \(case 1\): input 0 \(x\): "
                                            r"shape \[4, -1\] is not a list of sizes >= 0"):
        load_task(MKB1 / "9_negative_shape.py")


def test_a_helper_module_is_not_a_task():
    from sage.bench.tasks import NotATask

    with pytest.raises(NotATask, match="not a task file"):
        load_task(MKB1 / "case_lines.py")


def test_a_case_file_path_loads_its_task():
    assert load_task(MKB0 / "2_leaky_relu.json").path == (MKB0 / "2_leaky_relu.py").resolve()


def test_public_format_reasons_for_a_missing_operator_at_run_time():
    from sage.bench.tasks import runtime_accelerator_reason

    try:
        torch.ops.aten.relu_backward
    except AttributeError as exc:
        assert runtime_accelerator_reason(exc) == ("calls torch.ops.aten.relu_backward, which this build of "
                                                   "torch does not have")
    else:
        pytest.skip("this torch build has aten.relu_backward")


def test_folder_search_skips_environments_caches_and_private_files(tmp_path):
    task = "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    return [torch.ones(1)]\n"
    for rel in ["a/1_x.py", ".venv/lib/t.py", "a/__pycache__/t.py", "b/site-packages/t.py", "a/_private.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(task)
    from sage.bench.tasks import task_files

    assert [p.relative_to(tmp_path).as_posix() for p in task_files(tmp_path)] == ["a/1_x.py"]


def test_helpers_of_two_folders_with_the_same_name_do_not_mix(tmp_path):
    for folder, factor in (("one", 2), ("two", 3)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "common.py").write_text(f"FACTOR = {factor}\n")
        (tmp_path / folder / "t.py").write_text(
            "import torch\nfrom common import FACTOR\n"
            "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x * FACTOR\n"
            "def get_inputs():\n    return [torch.ones(2)]\n")
    tasks, skipped = load_tasks(tmp_path)
    factors = {t.path.parent.name: t.module.FACTOR for t in tasks}
    assert factors == {"one": 2, "two": 3}
    assert sorted(s.kind for s in skipped) == ["not_a_task", "not_a_task"]


@pytest.mark.parametrize("body, problem", [
    ("def get_input_groups():\n    return []\n", "get_input_groups() returned no cases"),
    ("def get_input_groups():\n    return [torch.ones(2)]\n", "case 0 from get_input_groups() is a Tensor (float32[2])"),
    ("def get_input_groups():\n    return torch.ones(2)\n", "get_input_groups() returned a Tensor"),
    ("", "missing `get_inputs` or `get_input_groups` (and no case file t.json beside it)"),
])
def test_input_functions_that_return_the_wrong_thing_are_named(tmp_path, body, problem):
    path = tmp_path / "t.py"
    path.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n" + body)
    with pytest.raises(TaskLoadError) as info:
        load_task(path)
    assert problem in str(info.value) and "t.py" in str(info.value)
