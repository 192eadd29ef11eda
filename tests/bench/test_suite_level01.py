"""npukernelbench Level 0, Level 1 and plain-op task files.

Checks the task-file format, the case rules of docs/tasks.md (fresh data, several dtypes,
unaligned last dimensions, size limit), that every reference runs on CPU with finite results,
and the references against independent formulas (float64 math, aten kernels, torch.optim,
numpy, brute-force NMS).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sage.bench.npukernelbench import suite_root

LEVEL0 = [
    "logical_and", "floor_divide", "logical_not", "logical_or", "mish", "real_div", "hardsigmoid",
    "hardsigmoid_backward", "mish_backward", "relu", "sigmoid", "swish", "elu", "elu_backward",
    "gt_tensor", "hardswish", "log_add_exp", "ne_scalar", "threshold", "relu_backward",
]
LEVEL1 = [
    "gelu", "swi_glu", "add", "abs", "cumsum", "histc", "sum", "sort", "top_k", "layer_norm",
    "group_norm", "permute", "cat", "split", "pad", "repeat", "adam_w", "index", "index_put", "gather",
    "scatter", "nonzero", "repeat_interleave", "embedding_dense_backward", "nll_loss", "avg_pool3d",
    "max_pool3d", "interpolate", "dynamic_quant", "nms", "iou",
]
REQUIRED_OPS = [
    "softmax", "log_softmax", "rms_norm", "matmul", "gelu", "layer_norm", "relu", "add", "silu",
    "sigmoid", "mean", "sum",
]
MAX_ELEMENTS = 16 * 1024 * 1024
# The evaluator's tolerances (docs/evaluation.md): a reference must sit within them of exact math.
TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-9}

ROOT = suite_root()
TASK_FILES = sorted(ROOT.glob("level0/*.py")) + sorted(ROOT.glob("level1/*.py")) + sorted(ROOT.glob("ops/*.py"))
_modules: dict[Path, ModuleType] = {}


def _task_id(path: Path) -> str:
    """'level0/mish', 'level1/top_k' or 'ops/softmax'."""
    name = path.stem
    if path.parent.name.startswith("level"):
        name = name.split("_", 1)[1]
    return f"{path.parent.name}/{name}"


def load(task_id: str) -> ModuleType:
    folder, name = task_id.split("/")
    pattern = f"[0-9][0-9]_{name}.py" if folder.startswith("level") else f"{name}.py"
    (path,) = ROOT.glob(f"{folder}/{pattern}")
    return _load_path(path)


def _load_path(path: Path) -> ModuleType:
    if path not in _modules:
        spec = importlib.util.spec_from_file_location(f"npukb_{path.parent.name}_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[path] = module
    return _modules[path]


def run(module: ModuleType, case: list) -> tuple:
    out = module.Model(*module.get_init_inputs())(*case)
    return out if isinstance(out, tuple) else (out,)


def tensors(case: list) -> list[torch.Tensor]:
    return [arg for arg in case if isinstance(arg, torch.Tensor)]


def as_f64(case: list) -> list:
    return [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in case]


def assert_matches(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.shape == expected.shape
    if not actual.is_floating_point():
        assert torch.equal(actual, expected.to(actual.dtype))
        return
    tol = TOLERANCE[actual.dtype]
    torch.testing.assert_close(actual.double(), expected.double(), rtol=tol, atol=tol)


# ---------------------------------------------------------------- suite layout


def test_level_folders_hold_the_published_operators_in_order():
    for folder, names in (("level0", LEVEL0), ("level1", LEVEL1)):
        files = sorted(p.name for p in (ROOT / folder).glob("*.py"))
        assert files == [f"{i:02d}_{name}.py" for i, name in enumerate(names, start=1)]
    assert len(list((ROOT / "level0").glob("*.py"))) == 20
    assert len(list((ROOT / "level1").glob("*.py"))) == 31


def test_plain_ops_exist_by_name():
    present = {p.stem for p in (ROOT / "ops").glob("*.py")}
    assert set(REQUIRED_OPS) <= present


# ---------------------------------------------------------------- every task file


@pytest.mark.parametrize("path", TASK_FILES, ids=_task_id)
def test_task_file_follows_the_suite_rules(path):
    module = _load_path(path)
    # Format: what the loader and the reports read.
    assert issubclass(module.Model, torch.nn.Module)
    assert isinstance(module.DESCRIPTION, str) and len(module.DESCRIPTION) > 20
    assert isinstance(module.TAGS, list) and module.TAGS and all(isinstance(t, str) for t in module.TAGS)
    assert module.get_init_inputs() == []
    fused = getattr(module, "FUSED_OP", None)
    assert fused is None or fused.startswith(("torch_npu.npu_", "aclnn"))

    # Cases: several dtypes, an unaligned last dimension, get_inputs() shaped like the first case.
    groups = module.get_input_groups()
    assert 3 <= len(groups) <= 4
    assert len({tensors(case)[0].dtype for case in groups}) > 1, "cases should vary the dtype"
    assert any(
        t.dim() and (t.shape[-1] * t.element_size()) % 32 for case in groups for t in tensors(case)
    ), "some case needs a last dimension that is not a multiple of 32 bytes"
    first = module.get_inputs()
    assert [type(a) for a in first] == [type(a) for a in groups[0]]
    # Shapes may be data-dependent (nms drops ambiguous boxes), so compare rank and dtype.
    assert [(t.dim(), t.dtype) for t in tensors(first)] == [(t.dim(), t.dtype) for t in tensors(groups[0])]

    # Every reference runs on CPU, leaves its inputs alone, stays within the size limit and is finite.
    for case in groups:
        before = [t.clone() for t in tensors(case)]
        outputs = run(module, case)
        for arg, saved in zip(tensors(case), before):
            assert torch.equal(arg, saved), "the reference must not modify its inputs"
        for t in tensors(case) + list(outputs):
            assert isinstance(t, torch.Tensor)
            assert t.numel() < MAX_ELEMENTS
        for out in outputs:
            if out.is_floating_point():
                assert torch.isfinite(out).all()

    # Fresh random data on every call.
    again = module.get_input_groups()
    assert any(
        a.shape != b.shape or not torch.equal(a, b)
        for case_a, case_b in zip(groups, again)
        for a, b in zip(tensors(case_a), tensors(case_b))
    )


# ---------------------------------------------------------------- references vs independent formulas


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def _softplus(x):
    return torch.where(x > 20, x, torch.log1p(torch.exp(x.clamp(max=20))))


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def _group_norm(x, groups, weight, bias, eps):
    g = x.reshape(x.shape[0], groups, -1)
    mean = g.mean(-1, keepdim=True)
    var = ((g - mean) ** 2).mean(-1, keepdim=True)
    y = ((g - mean) / torch.sqrt(var + eps)).reshape(x.shape)
    affine_shape = (1, -1) + (1,) * (x.dim() - 2)
    return y * weight.reshape(affine_shape) + bias.reshape(affine_shape)


def _nll_loss(log_probs, target, weight, reduction, ignore_index):
    classes = log_probs.shape[1]
    flat = log_probs.movedim(1, -1).reshape(-1, classes)
    t = target.reshape(-1)
    valid = t != ignore_index
    safe = torch.where(valid, t, 0)
    w = weight[safe] * valid
    loss = -flat[torch.arange(t.numel()), safe] * w
    if reduction == "none":
        return loss.reshape(target.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def _iou_numpy(bboxes, gtboxes):
    b = bboxes.double().numpy()[None, :, :]
    g = gtboxes.double().numpy()[:, None, :]
    iw = np.clip(np.minimum(g[..., 2], b[..., 2]) - np.maximum(g[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(g[..., 3], b[..., 3]) - np.maximum(g[..., 1], b[..., 1]), 0, None)
    inter = iw * ih
    area = lambda z: (z[..., 2] - z[..., 0]) * (z[..., 3] - z[..., 1])  # noqa: E731
    return torch.from_numpy(inter / (area(g) + area(b) - inter))


def _log_softmax(x):
    shifted = x - x.amax(-1, keepdim=True)
    return shifted - torch.log(torch.exp(shifted).sum(-1, keepdim=True))


def _floor_divide(a, b):
    if a.is_floating_point():
        return torch.floor(a / b)
    return torch.from_numpy(np.floor_divide(a.numpy().astype(np.int64), b.numpy().astype(np.int64)))


def _nearest_or_bilinear(x, size, mode, align_corners):
    if mode != "nearest":
        return F.interpolate(x, size=size, mode=mode, align_corners=align_corners)
    rows = (torch.arange(size[0]) * x.shape[2]) // size[0]
    cols = (torch.arange(size[1]) * x.shape[3]) // size[1]
    return x[:, :, rows][:, :, :, cols]


def _index_put(x, indices, values, accumulate):
    out = x.clone()
    if accumulate:
        return out.index_add_(0, indices, values)
    for i, row in enumerate(indices.tolist()):
        out[row] = values[i]
    return out


# Each formula gets the case with float tensors widened to float64 and returns the outputs.
FORMULAS = {
    "level0/logical_and": lambda a, b: (a != 0) & (b != 0),
    "level0/floor_divide": _floor_divide,
    "level0/logical_not": lambda x: x == 0,
    "level0/logical_or": lambda a, b: (a != 0) | (b != 0),
    "level0/mish": lambda x: x * torch.tanh(_softplus(x)),
    "level0/real_div": lambda a, b: a / b,
    "level0/hardsigmoid": lambda x: (x / 6 + 0.5).clamp(0, 1),
    "level0/relu": lambda x: x.clamp(min=0),
    "level0/sigmoid": lambda x: 1 / (1 + torch.exp(-x)),
    "level0/swish": lambda x, beta: x / (1 + torch.exp(-beta * x)),
    "level0/elu": lambda x, alpha: torch.where(x > 0, x, alpha * torch.expm1(x)),
    "level0/gt_tensor": lambda a, b: a > b,
    "level0/hardswish": lambda x: x * (x + 3).clamp(0, 6) / 6,
    "level0/log_add_exp": lambda a, b: torch.maximum(a, b) + torch.log1p(torch.exp(-(a - b).abs())),
    "level0/ne_scalar": lambda x, s: x != s,
    "level0/threshold": lambda x, th, value: torch.where(x > th, x, torch.full_like(x, value)),
    "level0/mish_backward": lambda g, x: g * torch.func.grad(lambda v: (v * torch.tanh(_softplus(v))).sum())(x),
    "level1/gelu": _gelu,
    "level1/swi_glu": lambda x, dim: (lambda a, b: a / (1 + torch.exp(-a)) * b)(*x.chunk(2, dim)),
    "level1/add": lambda a, b: a + b,
    "level1/abs": lambda x: torch.where(x < 0, -x, x),
    "level1/cumsum": lambda x, dim: torch.cumsum(x.double() if x.is_floating_point() else x.long(), dim),
    "level1/sum": lambda x, dims: x.sum(dim=dims) if x.is_floating_point() else x.long().sum(dim=dims),
    "level1/layer_norm": _layer_norm,
    "level1/group_norm": _group_norm,
    "level1/permute": lambda x, dims: torch.from_numpy(np.ascontiguousarray(np.transpose(x.numpy(), dims))),
    "level1/cat": lambda a, b, c, dim: torch.from_numpy(np.concatenate([a.numpy(), b.numpy(), c.numpy()], dim)),
    "level1/repeat": lambda x, reps: torch.from_numpy(np.tile(x.numpy(), reps)),
    "level1/index": lambda x, idx, dim: torch.from_numpy(np.take(x.numpy(), idx.numpy(), axis=dim)),
    "level1/index_put": _index_put,
    "level1/gather": lambda x, dim, idx: torch.from_numpy(np.take_along_axis(x.numpy(), idx.numpy(), dim)),
    "level1/nonzero": lambda x: torch.from_numpy(np.argwhere(x.numpy())),
    "level1/nll_loss": _nll_loss,
    "level1/avg_pool3d": F.avg_pool3d,
    "level1/max_pool3d": F.max_pool3d,
    "level1/interpolate": _nearest_or_bilinear,
    "level1/iou": _iou_numpy,
    "ops/softmax": lambda x: torch.exp(_log_softmax(x)),
    "ops/log_softmax": _log_softmax,
    "ops/rms_norm": lambda x, w, eps: x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w,
    "ops/layer_norm": _layer_norm,
    "ops/matmul": lambda a, b: a @ b,
    "ops/gelu": _gelu,
    "ops/relu": lambda x: x.clamp(min=0),
    "ops/sigmoid": lambda x: 1 / (1 + torch.exp(-x)),
    "ops/silu": lambda x: x / (1 + torch.exp(-x)),
    "ops/add": lambda a, b: a + b,
    "ops/mul": lambda a, b: a * b,
    "ops/exp": torch.exp,
    "ops/sqrt": torch.sqrt,
    "ops/tanh": torch.tanh,
    "ops/sum": lambda x: x.sum(-1),
    "ops/mean": lambda x: x.mean(-1),
    "ops/max": lambda x: x.amax(-1),
}

# Tasks whose float64 formula is the same torch function on float64 data (pooling): the check
# is still independent of the half-precision path the reference takes.
_NUMPY_NATIVE = {"level1/permute", "level1/cat", "level1/repeat", "level1/index", "level1/gather", "level1/nonzero"}


@pytest.mark.parametrize("task_id", sorted(FORMULAS))
def test_reference_matches_independent_formula(task_id):
    module = load(task_id)
    formula = FORMULAS[task_id]
    for case in module.get_input_groups():
        (actual,) = run(module, case)
        if task_id in _NUMPY_NATIVE:
            # numpy has no bfloat16: compare through float32, which holds every bf16/fp16 value.
            widened = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else a for a in case]
            expected = formula(*widened)
        else:
            expected = formula(*as_f64(case))
        assert_matches(actual, expected)


def test_backward_references_match_aten_kernels():
    for case in load("level0/elu_backward").get_input_groups():
        grad, x, alpha = case
        (actual,) = run(load("level0/elu_backward"), case)
        expected = torch.ops.aten.elu_backward(grad.double(), alpha, 1, 1, False, x.double())
        assert_matches(actual, expected)
    for case in load("level0/hardsigmoid_backward").get_input_groups():
        (actual,) = run(load("level0/hardsigmoid_backward"), case)
        assert_matches(actual, torch.ops.aten.hardsigmoid_backward(*as_f64(case)))
    for case in load("level0/relu_backward").get_input_groups():
        (actual,) = run(load("level0/relu_backward"), case)
        assert torch.equal(actual, torch.ops.aten.threshold_backward(case[0], case[1], 0))
    for case in load("level1/embedding_dense_backward").get_input_groups():
        grad, indices, num_weights, padding_idx, by_freq = case
        (actual,) = run(load("level1/embedding_dense_backward"), case)
        expected = torch.ops.aten.embedding_dense_backward(grad.double(), indices, num_weights, padding_idx, by_freq)
        assert_matches(actual, expected)
        if padding_idx >= 0:
            assert not actual[padding_idx].any()


def test_adam_w_matches_one_torch_optim_step():
    module = load("level1/adam_w")
    for case in module.get_input_groups():
        param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay = case
        new_param, new_avg, new_avg_sq = run(module, case)
        p = torch.nn.Parameter(param.double().clone())
        p.grad = grad.double()
        opt = torch.optim.AdamW([p], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, foreach=False)
        opt.state[p] = {
            "step": torch.tensor(float(step - 1), dtype=torch.float64),
            "exp_avg": exp_avg.double().clone(),
            "exp_avg_sq": exp_avg_sq.double().clone(),
        }
        opt.step()
        assert_matches(new_param, p.detach())
        assert_matches(new_avg, opt.state[p]["exp_avg"])
        assert_matches(new_avg_sq, opt.state[p]["exp_avg_sq"])
        assert not torch.equal(new_param, param), "the step must move the parameters"


def _nms_brute_force(boxes, scores, threshold):
    b = boxes.double().tolist()
    order = sorted(range(len(b)), key=lambda i: -float(scores[i]))
    kept = []
    for i in order:
        if all(_iou_pair(b[i], b[k]) <= threshold for k in kept):
            kept.append(i)
    return kept


def _iou_pair(p, q):
    iw = max(0.0, min(p[2], q[2]) - max(p[0], q[0]))
    ih = max(0.0, min(p[3], q[3]) - max(p[1], q[1]))
    inter = iw * ih
    return inter / ((p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter)


def test_nms_matches_brute_force_and_has_no_near_threshold_pairs():
    module = load("level1/nms")
    for case in module.get_input_groups()[1:3]:  # the two smaller cases keep the pure-Python check quick
        boxes, scores, threshold = case
        (kept,) = run(module, case)
        assert kept.dtype == torch.int64
        assert kept.tolist() == _nms_brute_force(boxes, scores, threshold)
        assert 0 < kept.numel() < boxes.shape[0], "the case should both keep and suppress boxes"
        iou = _iou_numpy(boxes, boxes)
        off_diagonal = ~torch.eye(boxes.shape[0], dtype=torch.bool)
        assert ((iou - threshold).abs()[off_diagonal] >= 0.02 - 1e-9).all()
        assert scores.unique().numel() == scores.numel()


def test_sort_and_top_k_are_consistent_and_tie_free():
    sort = load("level1/sort")
    for case in sort.get_input_groups():
        x, dim, descending = case
        values, indices = run(sort, case)
        assert torch.equal(torch.gather(x, dim, indices), values)
        steps = values.diff(dim=dim)
        assert ((steps < 0) if descending else (steps > 0)).all(), "values along dim must be distinct"
    top_k = load("level1/top_k")
    for case in top_k.get_input_groups():
        x, k, largest = case
        values, indices = run(top_k, case)
        ordered = np.sort(x.float().numpy(), axis=-1)
        ordered = ordered[:, ::-1] if largest else ordered
        expected = torch.from_numpy(np.ascontiguousarray(ordered[:, :k])).to(x.dtype)
        assert torch.equal(values, expected)
        assert torch.equal(torch.gather(x, -1, indices), values)


def test_dynamic_quant_codes_are_exact_and_unambiguous():
    module = load("level1/dynamic_quant")
    for case in module.get_input_groups():
        (x,) = case
        y, scale = run(module, case)
        assert y.dtype == torch.int8 and scale.dtype == torch.float32
        assert scale.shape == x.shape[:-1]
        xf = x.double()
        assert torch.equal(scale.double(), xf.abs().amax(-1) / 127)
        quotient = xf / scale.double().unsqueeze(-1)
        assert ((quotient - y.double()).abs() <= 0.25).all()
        assert ((quotient - quotient.floor()) != 0.5).all(), "no rounding ties"
        assert (y.abs().amax(-1) == 127).all()
        assert ((quotient - quotient.trunc()).abs() == 0.75).any(), "truncation must be distinguishable"


def test_histc_counts_match_numpy_histogram():
    module = load("level1/histc")
    for case in module.get_input_groups():
        x, bins, low, high = case
        (counts,) = run(module, case)
        expected, _ = np.histogram(x.float().numpy(), bins=bins, range=(low, high))
        assert torch.equal(counts, torch.from_numpy(expected).to(counts.dtype))
        inside = ((x >= low) & (x <= high)).sum().item()
        assert 0 < inside < x.numel()


def test_split_and_scatter_and_repeat_interleave_against_numpy():
    split = load("level1/split")
    for case in split.get_input_groups():
        x, sizes, dim = case
        pieces = run(split, case)
        boundaries = np.cumsum(sizes)[:-1]
        for piece, expected in zip(pieces, np.split(x.float().numpy(), boundaries, axis=dim)):
            assert torch.equal(piece.float(), torch.from_numpy(np.ascontiguousarray(expected)))
            assert piece.is_contiguous()
    scatter = load("level1/scatter")
    for case in scatter.get_input_groups():
        x, dim, index, src = case
        (out,) = run(scatter, case)
        expected = x.float().numpy().copy()
        np.put_along_axis(expected, index.numpy(), src.float().numpy(), axis=dim)
        assert torch.equal(out.float(), torch.from_numpy(expected))
        along = index if dim == 1 else index.t()
        assert (along.sort(dim=-1).values.diff(dim=-1) > 0).all(), "indices along dim must be distinct"
    interleave = load("level1/repeat_interleave")
    for case in interleave.get_input_groups():
        x, repeats, dim = case
        (out,) = run(interleave, case)
        reps = repeats.numpy() if isinstance(repeats, torch.Tensor) else repeats
        assert torch.equal(out.float(), torch.from_numpy(np.repeat(x.float().numpy(), reps, axis=dim)))


def test_pad_matches_numpy_pad():
    module = load("level1/pad")
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
    for case in module.get_input_groups():
        x, pad, mode, value = case
        (out,) = run(module, case)
        widths = [(0, 0)] * x.dim()
        for i in range(len(pad) // 2):
            widths[x.dim() - 1 - i] = (pad[2 * i], pad[2 * i + 1])
        kwargs = {"constant_values": value} if mode == "constant" else {}
        expected = np.pad(x.float().numpy(), widths, mode=np_mode[mode], **kwargs)
        assert torch.equal(out.float(), torch.from_numpy(expected))


def test_suite_loader_accepts_the_levels_when_available():
    tasks_module = pytest.importorskip("sage.bench.tasks")
    for folder, count in (("level0", 20), ("level1", 31)):
        tasks, skipped = tasks_module.load_tasks(ROOT / folder)
        assert len(tasks) == count and not skipped
