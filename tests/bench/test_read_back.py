"""Data-dependent output sizes: the host side reads a few scalars back (`read_back`), each
read-back charged as a device->host sync of the eager timeline and limited in count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sage.npu.ascendc.host import MAX_READ_BACK_SCALARS
from sage.npu.hardware import load_preset
from sage.npu.sandbox import run_sandboxed

RELU = (Path(__file__).parents[1] / "fixtures/kernels/relu_correct.py").read_text()


def _with_forward(body: str) -> str:
    head, _, _ = RELU.partition("def forward(x):")
    return head + "def forward(x):\n" + body


def test_a_read_back_returns_the_kernel_values_and_costs_one_sync():
    x = np.linspace(-2, 2, 64 * 16, dtype=np.float32).reshape(64, 16)
    plain = run_sandboxed(RELU, [x])
    body = ("    z = empty_like(x)\n    total, block_len, block_dim = split(x)\n"
            "    relu_custom[block_dim](x, z, total, block_len, x.dtype)\n"
            "    first = read_back(z.flatten(), 2)\n"
            "    out = empty((len(first),), x.dtype)\n"
            "    relu_custom[1](z, out, 2, 8, x.dtype)\n"
            "    return out\n")
    run = run_sandboxed(_with_forward(body), [x])
    assert run.error is None, run.error
    assert run.outputs[0].tolist() == [0.0, 0.0]                   # relu of the first two (negative) values
    sync_us = load_preset("ascend910b2").launch.sync_us
    assert (run.profile.syncs, run.profile.sync_us) == (1, pytest.approx(sync_us))
    assert plain.profile.syncs == 0
    # The host waited for the first launch to drain before the second was even dispatched.
    assert run.profile.time_us >= plain.profile.time_us + sync_us


def test_read_backs_are_limited_so_the_host_cannot_do_the_work():
    body = ("    z = empty_like(x)\n    total, block_len, block_dim = split(x)\n"
            "    relu_custom[block_dim](x, z, total, block_len, x.dtype)\n"
            f"    read_back(z.flatten(), {MAX_READ_BACK_SCALARS})\n"
            "    read_back(z.flatten(), 1)\n    return z\n")
    run = run_sandboxed(_with_forward(body), [np.ones((8, 64), np.float32)])
    assert run.error is not None and run.error.type == "LaunchError"
    assert f"more than the {MAX_READ_BACK_SCALARS} allowed" in run.error.message


def test_read_back_is_a_host_call_only():
    source = ("from sage.npu.ascendc import *\n\n@kernel\ndef k(x):\n    read_back(x, 1)\n\n"
              "def forward(x):\n    z = empty_like(x)\n    k[1](x)\n    return z\n")
    run = run_sandboxed(source, [np.ones(8, np.float32)])
    assert run.error is not None and "host call" in run.error.message
