import torch

DESCRIPTION = (
    "Greedy non-maximum suppression (torchvision.ops.nms semantics): visit boxes (x1, y1, x2, y2) by decreasing "
    "score, keep a box unless its IoU with an already kept box exceeds iou_threshold. Inputs: boxes (N, 4), "
    "scores (N,), python float iou_threshold; returns the kept int64 indices in decreasing score order."
)
TAGS = ["vision", "sort"]


def _pairwise_iou(boxes):
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    top_left = torch.maximum(boxes[:, None, :2], boxes[None, :, :2])
    bottom_right = torch.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
    wh = (bottom_right - top_left).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area[:, None] + area[None, :] - inter)


class Model(torch.nn.Module):
    def forward(self, boxes, scores, iou_threshold):
        order = torch.argsort(scores.float(), descending=True)
        overlaps = _pairwise_iou(boxes.float()[order]) > iou_threshold
        suppressed = torch.zeros(order.numel(), dtype=torch.bool)
        kept = []
        for i in range(order.numel()):
            if suppressed[i]:
                continue
            kept.append(i)
            suppressed |= overlaps[i]
        return order[torch.tensor(kept, dtype=torch.long)]


_CASES = [
    (2000, 2000, torch.float32, 0.5),
    (1000, 1000, torch.float16, 0.3),
    (301, 250, torch.bfloat16, 0.6),
    (3000, 2000, torch.float32, 0.7),
]

# Minimum distance of any pairwise IoU from the threshold, so that rounding differences
# between correct implementations cannot flip a suppression decision.
_MARGIN = 0.02


_SCORE_BITS = {
    torch.float32: (torch.int32, 0x3E000000),
    torch.float16: (torch.int16, 0x3000),
    torch.bfloat16: (torch.int16, 0x3E00),
}


def _scores(n, dtype):
    # Distinct scores (consecutive positive bit patterns from 0.125) in random order: no ties.
    int_dtype, base = _SCORE_BITS[dtype]
    return (torch.randperm(n) + base).to(int_dtype).view(dtype)


def _case(count, extent, dtype, iou_threshold):
    # Clustered boxes with integer corners (exact in every dtype: extent <= 256 for bf16), so
    # that many boxes overlap; boxes whose IoU with an earlier box lies within _MARGIN of the
    # threshold are dropped, hence N is below 'count' (by 5-35% depending on the case).
    size_max = max(8, extent // 16)
    centres = torch.randint(size_max, extent - size_max, (max(1, count // 8), 2))
    cluster = torch.randint(0, centres.shape[0], (count,))
    wh = torch.randint(size_max // 4, size_max + 1, (count, 2))
    jitter = torch.randint(-size_max // 4, size_max // 4 + 1, (count, 2))
    top_left = (centres[cluster] + jitter - wh // 2).clamp(0, extent - 1)
    bottom_right = torch.minimum(top_left + wh, torch.full_like(top_left, extent))
    boxes = torch.cat([top_left, bottom_right], dim=1).double()
    iou = _pairwise_iou(boxes)
    ambiguous = torch.triu((iou - iou_threshold).abs() < _MARGIN, diagonal=1).any(dim=0)
    boxes = boxes[~ambiguous]
    return [boxes.to(dtype), _scores(boxes.shape[0], dtype), iou_threshold]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
