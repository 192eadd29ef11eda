"""A case on which the task's own reference raises (here: index values out of range of the
tensor they index, as a task file's random int64 inputs can be) is not traced, as the
evaluation does not judge it; when every case raises, the compiler refuses in one line
instead of failing with the reference's exception."""

import pytest

CASES = ["torch.randn(2, 8), torch.tensor([1, 9000])", "torch.randn(2, 8), torch.tensor([7, 0, 3])"]


@pytest.fixture
def task(task_file):
    return task_file("x, idx", "x[:, idx] * 2.0", CASES)


def test_a_case_the_reference_raises_on_is_left_out(task):
    from sage.agent.compiler.compiler import trace_cases

    traced = trace_cases(task)
    assert [tuple(c.case[1].shape) for c in traced] == [(3,)]          # case 0 indexes 9000 of 8


def test_every_case_raising_is_refused_with_the_reference_error(task):
    from sage.agent.compiler.build import Unsupported
    from sage.agent.compiler.compiler import trace_cases

    with pytest.raises(Unsupported) as info:
        trace_cases(task, [0])
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("the reference raises on every case it is judged on: case 0 (")
    assert "IndexError" in message and "9000" in message
