import torch

DESCRIPTION = "Matrix product a @ b of a (M, K) and b (K, N), accumulated in float32, output in the input dtype."
TAGS = ["matmul"]


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


_CASES = [
    (1024, 1024, 1024, torch.float16),
    (1000, 301, 2117, torch.float32),
    (257, 1024, 301, torch.bfloat16),
    (4096, 512, 77, torch.float16),
]


def _case(m, k, n, dtype):
    # Scaled so that entries of the product are O(1) whatever K is.
    scale = k**-0.25
    return [(torch.randn(m, k) * scale).to(dtype), (torch.randn(k, n) * scale).to(dtype)]


def get_input_groups():
    return [_case(*case) for case in _CASES]


def get_inputs():
    return _case(*_CASES[0])


def get_init_inputs():
    return []
