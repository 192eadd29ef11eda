import torch

DESCRIPTION = (
    "Pairwise IoU matrix as torch_npu.npu_iou (mode 0, IoU): boxes (x1, y1, x2, y2); out[j][i] is the IoU of "
    "gtboxes[j] and bboxes[i], shape (M, N). Inputs: bboxes (N, 4), gtboxes (M, 4); computed in float32, "
    "returned in the input dtype."
)
TAGS = ["vision", "broadcast", "elementwise"]
FUSED_OP = "torch_npu.npu_iou"


class Model(torch.nn.Module):
    def forward(self, bboxes, gtboxes):
        b = bboxes.float()
        g = gtboxes.float()
        area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        area_g = (g[:, 2] - g[:, 0]) * (g[:, 3] - g[:, 1])
        top_left = torch.maximum(g[:, None, :2], b[None, :, :2])
        bottom_right = torch.minimum(g[:, None, 2:], b[None, :, 2:])
        wh = (bottom_right - top_left).clamp(min=0)
        inter = wh[..., 0] * wh[..., 1]
        return (inter / (area_g[:, None] + area_b[None, :] - inter)).to(bboxes.dtype)


_CASES = [
    (1024, 1024, torch.float32),
    (2117, 301, torch.float16),
    (500, 37, torch.bfloat16),
    (4096, 301, torch.float32),
]


def _boxes(count, dtype):
    # Corners in a 264 x 264 field, sides 1..64: dense overlaps, never an empty box. For
    # bfloat16 the corners are integers (exact below 256) so rounding cannot collapse a box.
    top_left = torch.rand(count, 2) * 200.0
    wh = 1.0 + torch.rand(count, 2) * 63.0
    if dtype == torch.bfloat16:
        top_left, wh = top_left.round(), wh.round().clamp(min=2.0)
    return torch.cat([top_left, top_left + wh], dim=1).to(dtype)


def _case(n, m, dtype):
    return [_boxes(n, dtype), _boxes(m, dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
