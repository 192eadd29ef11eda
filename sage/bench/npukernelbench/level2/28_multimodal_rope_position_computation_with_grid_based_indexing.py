"""3-D (temporal, height, width) rotary position ids for mixed text/image sequences
(Qwen2-VL M-RoPE get_rope_index)."""

import torch

DESCRIPTION = (
    "input_ids [B, S] int64, image_grid_thw [I, 3] int64 (t, h, w patch grid of each image, "
    "in order of appearance over the batch, row-major), image_token_id, spatial_merge_size m. "
    "Each maximal run of image_token_id in a row is the next image and has t*(h/m)*(w/m) "
    "tokens. Walking a row with a running start st = 0: a text span of length n gets "
    "positions st + arange(n) on all three axes, then st += n; an image gets t-, h- and "
    "w-indices of its (t, h/m, w/m) grid (row-major) plus st, then st = max + 1. Returns "
    "position_ids [3, B, S] int64."
)
TAGS = ["index", "rope", "scan", "multimodal"]


def _runs(is_image):
    """(start, end, image?) for each maximal run of equal is_image values."""
    change = torch.nonzero(is_image[1:] != is_image[:-1]).flatten() + 1
    bounds = [0] + change.tolist() + [len(is_image)]
    return [(a, b, bool(is_image[a])) for a, b in zip(bounds[:-1], bounds[1:])]


class Model(torch.nn.Module):
    def forward(self, input_ids, image_grid_thw, image_token_id: int, spatial_merge_size: int):
        b, s = input_ids.shape
        positions = torch.empty(3, b, s, dtype=torch.int64)
        grids = image_grid_thw.tolist()
        image = 0
        for row in range(b):
            start = 0
            for a, e, is_image in _runs(input_ids[row] == image_token_id):
                if not is_image:
                    positions[:, row, a:e] = start + torch.arange(e - a)
                    start += e - a
                    continue
                t, h, w = grids[image]
                image += 1
                gh, gw = h // spatial_merge_size, w // spatial_merge_size
                idx = torch.arange(t * gh * gw)
                grid_pos = torch.stack((idx // (gh * gw), idx // gw % gh, idx % gw)) + start
                positions[:, row, a:e] = grid_pos
                start = int(grid_pos.max()) + 1
        return positions


def get_init_inputs():
    return []


# (B, S, merge, image_token_id, vocab)
_CASES = [
    (2, 1024, 2, 151655, 151643),
    (4, 301, 2, 151655, 151643),
    (1, 4096, 2, 151655, 151643),
]


def _row(s, merge, image_token_id, vocab):
    """Token ids of one row and the grids of its images: text and images alternate."""
    ids, grids = [], []
    while len(ids) < s:
        ids += torch.randint(0, vocab, (int(torch.randint(1, 40, (1,))),)).tolist()
        t = 2 if torch.rand(1) < 0.25 else 1  # some "videos" with two frames
        h = merge * int(torch.randint(2, 12, (1,)))
        w = merge * int(torch.randint(2, 12, (1,)))
        count = t * (h // merge) * (w // merge)
        if len(ids) + count + 1 > s:
            break
        ids += [image_token_id] * count
        grids.append((t, h, w))
    ids += torch.randint(0, vocab, (max(0, s - len(ids)),)).tolist()
    return ids[:s], grids  # only trailing text is ever cut


def _case(b, s, merge, image_token_id, vocab):
    rows, grids = [], []
    for _ in range(b):
        ids, row_grids = _row(s, merge, image_token_id, vocab)
        rows.append(ids)
        grids += row_grids
    grid_tensor = torch.tensor(grids, dtype=torch.int64).reshape(-1, 3)
    return [torch.tensor(rows, dtype=torch.int64), grid_tensor, image_token_id, merge]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
