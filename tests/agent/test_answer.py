import pytest

from sage.agent.answer import MalformedAnswer, parse_answer, render_answer

KERNEL = "from sage.npu.ascendc import *\n\ndef forward(x):\n    return x\n"


def test_code_block_and_bare_json():
    text = f"Here it is.\n```python\n{KERNEL}```\n" + '{"adopted": ["E3", "R1", "E3"], "plan": "tile by 4096"}'
    answer = parse_answer(text)
    assert answer.source == KERNEL
    assert answer.adopted == ["E3", "R1"]  # duplicates collapse, order kept
    assert answer.plan == "tile by 4096"


def test_json_in_its_own_fence_and_braces_in_prose():
    text = f"Strides {{1,1,1,8,8,8}} are dense.\n```py\n{KERNEL}```\n```json\n{{\"adopted\": [], \"plan\": \"p\"}}\n```\n"
    assert parse_answer(text).adopted == []


def test_round_trip_of_rendered_answer():
    answer = parse_answer(render_answer(KERNEL, ["E1"], "plan"))
    assert (answer.source.strip(), answer.adopted, answer.plan) == (KERNEL.strip(), ["E1"], "plan")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ('no code at all {"adopted": [], "plan": "p"}', "no fenced ```python block"),
        (f"```python\n{KERNEL}```\n```python\n{KERNEL}```\n" + '{"adopted": [], "plan": "p"}', "2 python code blocks"),
        (f"```python\n{KERNEL}```\n" + "{'adopted': ['E1'], 'plan': 'p'}", "could not be parsed"),
        (f"```python\n{KERNEL}```\n" + '{"adopted": "E1", "plan": "p"}', "adopted: Input should be a valid list"),
        (f"```python\n{KERNEL}```\n" + '{"adopted": [1], "plan": "p"}', "adopted.0: Input should be a valid string"),
        (f"```python\n{KERNEL}```\n" + '{"adopted": []}', "plan: Field required"),
        (f"```python\n{KERNEL}```\nno json here", "no JSON object"),
        (f"```python\n{KERNEL}```\n```json\n[1, 2]\n```", "must be an object"),
    ],
)
def test_malformed_answers_explain_themselves(text, fragment):
    with pytest.raises(MalformedAnswer) as info:
        parse_answer(text)
    assert fragment in str(info.value)
    assert "Reminder of the contract" in str(info.value)
