"""Multi-scale deformable attention forward (Deformable DETR)."""

import torch
import torch.nn.functional as F

DESCRIPTION = (
    "MSDA forward: value [N, S, M, D] (M heads; S = sum over levels of H_l * W_l, level l "
    "stored row-major from level_start_index[l]), spatial_shapes [L, 2] int64 (H_l, W_l), "
    "level_start_index [L] int64, sampling_locations [N, Lq, M, L, P, 2] in [0, 1] as (x, y) "
    "fractions of the level's width and height, attention_weights [N, Lq, M, L, P] "
    "(softmax over L*P). For each query and head: sum over levels and points of "
    "weight * bilinear sample of that level's value map at pixel (x * W_l - 0.5, "
    "y * H_l - 0.5) (grid_sample, align_corners=False, zeros outside). Returns "
    "[N, Lq, M * D] in value's dtype, fp32 math."
)
TAGS = ["attention", "gather", "interpolate", "reduction"]


class Model(torch.nn.Module):
    def forward(self, value, spatial_shapes, level_start_index, sampling_locations,
                attention_weights):
        n, _, m, d = value.shape
        _, lq, _, levels, points, _ = sampling_locations.shape
        grids = 2 * sampling_locations.float() - 1
        sampled = []
        for lid, ((h, w), start) in enumerate(zip(spatial_shapes.tolist(),
                                                   level_start_index.tolist())):
            # [N, H*W, M, D] -> [N*M, D, H, W]
            level_value = value[:, start:start + h * w].float()
            level_value = level_value.flatten(2).transpose(1, 2).reshape(n * m, d, h, w)
            # [N, Lq, M, P, 2] -> [N*M, Lq, P, 2]
            level_grid = grids[:, :, :, lid].transpose(1, 2).flatten(0, 1)
            sampled.append(F.grid_sample(level_value, level_grid, mode="bilinear",
                                         padding_mode="zeros", align_corners=False))
        # [N*M, D, Lq, L*P] weighted by [N*M, 1, Lq, L*P]
        stacked = torch.stack(sampled, dim=-2).flatten(-2)
        weights = attention_weights.float().transpose(1, 2).reshape(n * m, 1, lq, levels * points)
        out = (stacked * weights).sum(dim=-1).view(n, m * d, lq)
        return out.transpose(1, 2).contiguous().to(value.dtype)


def get_init_inputs():
    return []


# (dtype, N, Lq, M, D, level shapes, P)
_CASES = [
    (torch.float32, 1, 5440, 8, 32, [(64, 64), (32, 32), (16, 16), (8, 8)], 4),
    (torch.float16, 2, 300, 8, 32, [(100, 150), (50, 75), (25, 38), (13, 19)], 4),
    (torch.bfloat16, 4, 1000, 8, 32, [(32, 48), (16, 24), (8, 12)], 4),
]


def _case(dtype, n, lq, m, d, shapes, points):
    spatial_shapes = torch.tensor(shapes, dtype=torch.int64)
    sizes = spatial_shapes[:, 0] * spatial_shapes[:, 1]
    level_start_index = torch.cat((torch.zeros(1, dtype=torch.int64), sizes.cumsum(0)[:-1]))
    levels = len(shapes)
    weights = torch.softmax(torch.randn(n, lq, m, levels * points), dim=-1)
    return [
        torch.randn(n, int(sizes.sum()), m, d).to(dtype),
        spatial_shapes,
        level_start_index,
        torch.rand(n, lq, m, levels, points, 2).to(dtype),
        weights.reshape(n, lq, m, levels, points).to(dtype),
    ]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
