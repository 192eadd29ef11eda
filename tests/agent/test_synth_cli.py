"""`sage synth` end to end with the offline synthesizer: fresh memory, real suite tasks,
a correct kernel faster than the reference, and learning carried to the next operator.

Each run evaluates one case of the task (`--case`), the float16 one where the vendor's
float32 arithmetic leaves room (on float32 cases both kernels sit at the copy roofline).
"""

import json

import pytest
from typer.testing import CliRunner

from sage.cli import app

pytestmark = pytest.mark.slow


def _synth(tmp_path, op: str, case: int, memory: str, *extra: str) -> dict:
    out = tmp_path / f"{op}_kernel.py"
    result = CliRunner().invoke(app, ["synth", "--op", op, "--case", str(case), "--memory-url", memory,
                                      "--out", str(out), "--json", *extra])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{"):])
    assert payload["status"] == "correct"
    assert payload["kernel_path"] == str(out) and "def forward(" in out.read_text()
    return payload


@pytest.mark.parametrize("op, case", [("gelu", 1), ("rms_norm", 1)])
def test_fresh_memory_gives_a_kernel_faster_than_the_reference(tmp_path, op, case):
    payload = _synth(tmp_path, op, case, f"sqlite:///{tmp_path / 'memory.db'}")
    assert payload["backend"] == "offline"
    assert payload["speedup"] > 1.0
    # the kept kernel's three times and torch_npu's; the speedup is the end-to-end one
    mine, ref = payload["times"], payload["reference_times"]
    assert 0 < mine["kernel_us"] < mine["device_us"] < mine["end_to_end_us"]
    assert payload["speedup"] == pytest.approx(ref["end_to_end_us"] / mine["end_to_end_us"], rel=1e-6)


def test_fresh_memory_matmul_keeps_up_with_the_vendor(tmp_path):
    # torch_npu's matmul is calibrated to public figures (docs/calibration.md): 1024^3 fp16 takes
    # 17 us (device events, L2 flushed) to 21.9 us (a host loop) on two pages that disagree; the
    # model, fitted to both, says 15.2 us on the device, under both. One tiled cube kernel keeps
    # within about 1.3x of it end to end (0.76 since the refit of issue 25; 1.0 before, when a
    # shared operand made the vendor's second read an L2 hit); the eager launch is the same for both.
    payload = _synth(tmp_path, "matmul", 0, f"sqlite:///{tmp_path / 'memory.db'}")
    assert payload["backend"] == "offline"
    assert payload["speedup"] > 0.7


def test_softmax_then_layer_norm_learn_from_each_other(tmp_path):
    from sage.memory import Memory

    url = f"sqlite:///{tmp_path / 'memory.db'}"
    first = _synth(tmp_path, "softmax", 1, url)
    assert first["speedup"] > 1.0 and first["adopted"] == []      # a fresh memory has nothing to adopt
    assert first["new_experiences"], "the changes that paid are remembered"
    with Memory(url) as memory:
        before = {e.id: e.utility for e in memory.experiences()}

    second = _synth(tmp_path, "layer_norm", 1, url)
    assert second["speedup"] > 1.0
    # Whether layer_norm adopts softmax's lessons depends on what paid on softmax (the compiler
    # stores the kept schedule; a default one changes nothing and is not claimed): the credit
    # rule below holds either way.
    with Memory(url) as memory:
        after = {e.id: (e.utility, e.adopted) for e in memory.experiences()}
    # Exactly the adopted items were credited; the others kept their utility.
    assert set(second["utilities"]) == set(second["adopted"])
    for item, u in before.items():
        if item in second["adopted"]:
            assert after[item][0] == pytest.approx(second["utilities"][item][1]) and after[item][1] == 1
        else:
            assert after[item][0] == u
    assert len(second["turns"]) <= len(first["turns"])
