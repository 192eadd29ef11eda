"""The lane-group retry forgery and its variants (issue: integrity, round 2).

A kernel that computes its whole output in a lane-group try and then forces the launch to be
tried again (a printf, a branch on the block index, an error) used to be judged on that try's
GM writes while only the retry's records were timed; the retry told itself apart from the
first try by probing the mode (`isinstance(range(b, b + 1), range)` was False in a group) or
by state it had left. Relu on 1024 x 4096 fp32: honest 1.16x device, the forgery 5.84x.

Every forgery here starts from the honest kernel in forgeries/relu_template.py; each must
end incorrect, refused, or correct at no more than the honest kernel's speed, and never as an
error of sage's own. The honest kernel is timed in the same process for the comparison.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sage.bench.evaluate import TaskEvaluation, evaluate_kernel
from sage.bench.tasks import load_task
from sage.npu.sandbox import Limits

HERE = Path(__file__).resolve().parent
TEMPLATE = (HERE / "forgeries" / "relu_template.py").read_text(encoding="utf-8")
TASK = HERE / "tasks" / "relu_wide.py"
LIMITS = Limits(cpu_seconds=60, memory_mb=2048, wall_seconds=90)

IN_GROUP = "not isinstance(range(b, b + 1), range)"  # the probe the red team used
FORGERIES = {
    # (probe, what follows the honest work in the first try)
    "probe_then_printf": (IN_GROUP, 'printf("again\\n")'),
    "probe_then_divergence": (IN_GROUP, "if b == 0:\n            PipeBarrier(PIPE_V)"),
    "probe_then_zero_division": (IN_GROUP, "b = 1 // 0"),
    "repr_probe_then_printf": ('repr(range(b, b + 1)) != "range(" + str(b) + ", " + str(b + 1) + ")"',
                               'printf("again\\n")'),
    "module_state_then_divergence": ("len(SEEN) == 0", "SEEN.append(1)\n        if b == 0:\n"
                                                        "            PipeBarrier(PIPE_V)"),
    "host_object_state": ("len(SEEN) == 0", "HOLDER.done = 1\n        SEEN.append(b)"),
    "unhashable_divergence": ("True", "if b * [0]:\n            PipeBarrier(PIPE_V)"),
    "identity_probe": ("not (b is b)", 'printf("again\\n")'),
}


def source(probe: str, after: str) -> str:
    return TEMPLATE.replace("if PROBE:", f"if {probe}:").replace("        AFTER\n", f"        {after}\n")


def evaluate(src: str) -> TaskEvaluation:
    return evaluate_kernel(load_task(TASK), src, cases=1, filename="forgery.py", limits=LIMITS)


@pytest.fixture(scope="module")
def honest() -> TaskEvaluation:
    ev = evaluate(source("True", "pass"))
    assert ev.correct, (ev.status, ev.error, ev.reason)
    return ev


def test_the_template_is_the_honest_kernel(honest):
    assert honest.cases[0].profile.launches == 1 and honest.device_speedup > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forced_retry_gains_nothing(name, honest):
    ev = evaluate(source(*FORGERIES[name]))
    assert not (ev.error and ev.error.message.startswith("internal simulator error")), ev.error
    if ev.correct:  # only by doing the honest work, timed as such
        assert ev.cases[0].times.device_us >= 0.98 * honest.cases[0].times.device_us, (name, ev.device_speedup,
                                                                           honest.device_speedup)
    else:
        assert ev.status in ("incorrect", "error"), (ev.status, ev.reason)


def test_a_probe_of_the_mode_sees_a_range(honest):
    """The red team's probe now answers as block by block: the first try does the honest work
    and the printf makes no difference to what is judged."""
    ev = evaluate(source(IN_GROUP, 'printf("again\\n")'))
    # the probe is False in both modes, so every block pads and the output is never written
    assert not ev.correct and ev.status == "incorrect", (ev.status, ev.reason)
