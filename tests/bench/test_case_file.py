"""The JSON-lines case file format (sage.bench.case_file) and which cases a 910B kernel can take
(sage.bench.case_support). Expected values are read off the lines written here."""

import json

import pytest
import torch

from sage.bench.case_file import CaseFileError, read_case_file
from sage.bench.case_support import case_support, describe_case, dtype_support


def write_cases(tmp_path, *cases, name="t.json"):
    path = tmp_path / name
    path.write_text("\n".join(c if isinstance(c, str) else json.dumps({"inputs": c}) for c in cases) + "\n")
    return path


def tensor(dtype, shape, **extra):
    return {"name": "x", "type": "tensor", "required": True, "dtype": dtype, "shape": shape, **extra}


def test_every_dtype_name_of_the_public_files(tmp_path):
    names = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
             "bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float64": torch.float64, "fp64": torch.float64,
             "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
             "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64,
             "bool": torch.bool, "complex64": torch.complex64, "complex128": torch.complex128}
    path = write_cases(tmp_path, *[[tensor(n, [3, 2])] for n in names])
    assert [c[0].dtype for c in read_case_file(path)] == list(names.values())


def test_integer_defaults_are_small_and_unsigned_ones_not_negative(tmp_path):
    path = write_cases(tmp_path, [tensor("int8", [4096])], [tensor("uint8", [4096])], [tensor("uint32", [4096])])
    signed, unsigned, wide = (c[0].to(torch.int64) for c in read_case_file(path))
    assert signed.min() == -10 and signed.max() == 9            # 4096 draws hit both ends
    assert unsigned.min() == 0 and unsigned.max() == 9
    assert wide.min() >= 0 and wide.max() <= 9


def test_ranges_bound_integer_and_float_draws(tmp_path):
    path = write_cases(tmp_path, [tensor("int64", [2000], range=[5, 7])], [tensor("float16", [2000], range=[-0.5, 0.5])])
    ints, floats = (c[0] for c in read_case_file(path))
    assert set(ints.tolist()) == {5, 6, 7}
    assert floats.dtype == torch.float16 and floats.min() >= -0.5 and floats.max() <= 0.5


def test_rank0_and_zero_size_shapes(tmp_path):
    path = write_cases(tmp_path, [tensor("bf16", [])], [tensor("int8", [0])], [tensor("bool", [2, 0, 3])])
    assert [tuple(c[0].shape) for c in read_case_file(path)] == [(), (0,), (2, 0, 3)]


def test_scalars_take_the_python_type_of_their_dtype(tmp_path):
    scalars = [{"name": "s", "type": "scalar", "required": True, "dtype": d, "range_values": v}
               for d, v in (("int16", 67), ("fp32", -34), ("bool", 0), ("complex64", 5), ("int", 2.0))]
    scalars.append({"name": "s", "type": "scalar", "dtype": "fp16", "value": 1.5, "range_values": 9})
    case = read_case_file(write_cases(tmp_path, scalars))[0]
    assert case == [67, -34.0, False, 5 + 0j, 2, 1.5]
    assert [type(v) for v in case] == [int, float, bool, complex, int, float]


def test_a_scalar_range_is_drawn_from(tmp_path):
    path = write_cases(tmp_path, *[[{"name": "s", "type": "scalar", "dtype": "fp32", "range_values": [-100, 100]}]] * 20)
    values = [c[0] for c in read_case_file(path)]
    assert all(-100 <= v <= 100 for v in values) and len(set(values)) > 1


def test_attrs_pass_through_with_tuples_made_tuples(tmp_path):
    attrs = [{"name": "a", "type": "attr", "required": True, "dtype": d, "value": v}
             for d, v in (("int", 3), ("float", 0.5), ("bool", True), ("str", "reflect"), ("list", [1, 2]),
                          ("tuple", [0, 2, 1]), ("dtype", "int8"))]
    attrs.append({"name": "a", "type": "attr", "required": False, "dtype": None, "value": None})
    assert read_case_file(write_cases(tmp_path, attrs))[0] == [3, 0.5, True, "reflect", [1, 2], (0, 2, 1), "int8", None]


def test_optional_tensors_without_shape_are_none(tmp_path):
    optional = {"name": "bias", "type": "tensor", "required": False, "dtype": "int32", "shape": None}
    assert read_case_file(write_cases(tmp_path, [tensor("fp32", [2]), optional]))[0][1] is None


def test_every_call_draws_fresh_values(tmp_path):
    path = write_cases(tmp_path, [tensor("fp32", [64])])
    assert not torch.equal(read_case_file(path)[0][0], read_case_file(path)[0][0])


@pytest.mark.parametrize("lines, message", [
    (["{\"inputs\": [", "x"], "t.json line 1 (case 0): not JSON"),
    ([[tensor("fp32", [2])], "", "[1, 2]"], "t.json line 3 (case 1): a case must be an object with an `inputs` list"),
    ([[tensor("fp8", [2])]], "t.json line 1 (case 0): input 0 (x): unknown dtype 'fp8'"),
    ([[tensor("fp32", [2]), {"name": "w", "type": "weights"}]], "line 1 (case 0): input 1 (w): unknown type 'weights'"),
    ([[tensor("fp32", None)]], "line 1 (case 0): input 0 (x): a required tensor needs a `shape`"),
    ([[tensor("fp32", [2, 1.5])]], "input 0 (x): shape [2, 1.5] is not a list of sizes >= 0"),
    ([[tensor("int32", [2], range=[3, 1])]], "input 0 (x): range [3, 1] is not [low, high]"),
    ([[{"name": "s", "type": "scalar", "dtype": "fp32"}]], "input 0 (s): a scalar needs a numeric"),
    ([[{"name": "l", "type": "tensor_list", "dtype": "fp32"}]], "input 0 (l): a tensor_list needs `shapes`"),
    ([""], "t.json: has no cases"),
])
def test_format_errors_name_the_line_the_case_and_the_input(tmp_path, lines, message):
    with pytest.raises(CaseFileError) as info:
        read_case_file(write_cases(tmp_path, *lines))
    assert message in str(info.value)


def test_a_missing_case_file_is_a_case_file_error(tmp_path):
    with pytest.raises(CaseFileError, match="nope.json: cannot be read"):
        read_case_file(tmp_path / "nope.json")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
                                   torch.int16, torch.uint16, torch.int32, torch.uint32, torch.int64, torch.bool])
def test_the_dsl_element_types_are_supported(dtype):
    assert dtype_support(dtype) is None
    assert case_support([torch.zeros(0, 3, dtype=dtype), torch.zeros((), dtype=dtype), 2, None, "mean"]) is None


@pytest.mark.parametrize("dtype, reason", [
    (torch.float64, "the 910B vector unit has no fp64 instructions"),
    (torch.complex64, "the 910B vector unit has no complex instructions"),
    (torch.complex128, "the 910B vector unit has no complex instructions"),
    (torch.uint64, "uint64 is not an element type of sage's NPU DSL"),
    (torch.float8_e4m3fn, "float8_e4m3fn is not an element type of sage's NPU DSL"),
])
def test_other_element_types_are_unsupported_with_the_reason(dtype, reason):
    assert dtype_support(dtype).startswith(reason)


def test_case_support_names_the_argument_and_looks_into_lists():
    ok = torch.zeros(2, 3)
    assert case_support([ok, [ok, torch.zeros(1, dtype=torch.float64)]]) == (
        "argument 1 ([float32[2, 3], float64[1]]): the 910B vector unit has no fp64 instructions")
    assert case_support([ok, 1j]) == "argument 1 (1j): the 910B vector unit has no complex instructions"


def test_describe_case():
    case = [torch.zeros(0, 7, dtype=torch.float16), torch.zeros((), dtype=torch.int64), 0.5, None,
            [torch.zeros(1)] * 4, "x" * 50]
    assert describe_case(case) == ("float16[0, 7], int64[], 0.5, None, [float32[1], float32[1], float32[1], ...], "
                                   "'" + "x" * 36 + "...")
