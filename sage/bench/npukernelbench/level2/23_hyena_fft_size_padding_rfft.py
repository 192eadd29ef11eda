"""Hyena long-convolution front end: zero-pad to the FFT size and take the real FFT."""

import torch

DESCRIPTION = (
    "u [B, D, L]. fft_size = the smallest power of two >= 2L (zero padding makes the "
    "circular convolution of the Hyena FFT conv a linear one). U = rfft(u zero-padded to "
    "fft_size) along the last axis, unnormalised: U[k] = sum_n u[n] exp(-2 pi i k n / "
    "fft_size), k = 0..fft_size/2. Returns the real and imaginary parts as "
    "[B, D, fft_size/2 + 1, 2] (torch.view_as_real layout) in u's dtype, computed in fp32."
)
TAGS = ["fft", "padding", "spectral"]


class Model(torch.nn.Module):
    def forward(self, u: torch.Tensor) -> torch.Tensor:
        length = u.shape[-1]
        fft_size = 1 << (2 * length - 1).bit_length()
        spectrum = torch.fft.rfft(u.float(), n=fft_size, dim=-1)
        return torch.view_as_real(spectrum).to(u.dtype)


def get_init_inputs():
    return []


# (dtype, B, D, L)
_CASES = [
    (torch.float32, 2, 64, 1024),
    (torch.float16, 1, 128, 301),
    (torch.bfloat16, 4, 32, 2117),
]


def _case(dtype, b, d, length):
    return [torch.randn(b, d, length).to(dtype)]


def get_inputs():
    return _case(*_CASES[0])


def get_input_groups():
    return [_case(*c) for c in _CASES]
