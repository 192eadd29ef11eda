"""UGC: both gates, the resident set's budget and cap, rules credited by ATU."""

from __future__ import annotations

import math

import pytest

from sage.memory import Outcome

from .helpers import CRASH, run_episode, seed_experiences

R_WIN = math.tanh(1.0)


def _u_after(n: int, r: float = R_WIN, alpha: float = 0.3) -> float:
    return r * (1 - (1 - alpha) ** n)  # n ATU steps towards r from 0


def test_promotes_only_when_utility_and_breadth_gates_pass(open_memory) -> None:
    memory = open_memory()
    e1, e2, _ = seed_experiences(memory)
    # Three wins on ONE operator: U passes τ, breadth (1 operator) does not.
    for _ in range(3):
        *_, report = run_episode(memory, task="softmax", mode="sage", adopt=[e1])
        assert report.promoted == {}
    assert memory.show(e1).experience.utility == pytest.approx(_u_after(3))
    # Two more operators whose adoption of e2 fails: breadth passes for e2, utility does not.
    for task in ("layer_norm", "rms_norm", "log_softmax"):
        *_, report = run_episode(memory, task=task, mode="sage", adopt=[e2], outcome=Outcome(executed=True, correct=True, speedup=1.0))
        assert report.promoted == {}
    # A second and a third operator adopt e1 with success: both gates pass, it becomes R1.
    *_, report = run_episode(memory, task="layer_norm", mode="sage", adopt=[e1])
    assert report.promoted == {}
    shown, rules, report = run_episode(memory, task="rms_norm", mode="sage", adopt=[e1])
    assert report.promoted == {e1: "R1"}
    rule = memory.show("R1").rule
    assert rule.status == "resident" and rule.sources == [e1]
    assert rule.utility == pytest.approx(_u_after(5))
    assert rule.tokens > 0 and "Double-buffer the softmax rows" in rule.text
    assert memory.show(e1).experience.status == "consolidated"

    # Now R1 is resident and E1 is no longer retrieved; adopting R1 credits the rule by ATU.
    shown, rules, report = run_episode(memory, task="softmax", mode="sage", adopt=["R1"], outcome=CRASH)
    assert rules == ["R1"] and e1 not in shown
    before = _u_after(5)
    assert report.credited == {"R1": (pytest.approx(before), pytest.approx(before + 0.3 * (-1 - before)))}
    # In atu mode the rule is not shown, so the consolidated experience is retrievable again.
    shown, rules, _ = run_episode(memory, task="softmax", mode="atu", adopt=[])
    assert rules == [] and e1 in shown




def test_budget_demotes_the_lowest_utility_rule(open_memory) -> None:
    drafts = [dict(title=f"Tip {name}", advice=f"Advice {name} for the kernel.", tags=[name], hints={name: 1})
              for name in ("alpha", "beta", "gamma")]
    memory = open_memory(rule_cap=2)
    ea, eb, ec = seed_experiences(memory, drafts)
    ops = ["op1", "op2", "op3"]

    def adopt(item: str, speedup: float) -> dict:
        report = None
        for task in ops:
            episode = memory.start_episode(task=task, op_tags=[item_tag], model="test", mode="sage", seed=0)
            episode.retrieve(item_tag, [item_tag])
            episode.declare_adopted([item], attempt=1)
            report = episode.finish(Outcome(executed=True, correct=True, speedup=speedup))
        return report

    item_tag = "alpha"
    assert adopt(ea, 4.0).promoted == {ea: "R1"}  # U = tanh(2)·(1 − 0.7³) ≈ 0.63
    item_tag = "beta"
    assert adopt(eb, 2.0).promoted == {eb: "R2"}  # ≈ 0.50
    item_tag = "gamma"
    report = adopt(ec, 8.0)  # ≈ 0.65: beats the lowest resident (R2), which is demoted
    assert report.promoted == {ec: "R3"} and report.demoted == ["R2"]
    assert [r.id for r in memory.resident_rules()] == ["R1", "R3"]
    assert memory.show("R2").rule.status == "demoted"
    back = memory.show(eb).experience
    assert back.status == "active" and back.utility == pytest.approx(memory.show("R2").rule.utility)


def test_token_budget_is_hard_and_a_weaker_newcomer_waits(open_memory) -> None:
    drafts = [dict(title=f"Tip {name}", advice=f"Advice {name} for the kernel.", tags=[name], hints={name: 1})
              for name in ("alpha", "beta")]
    memory = open_memory(token_budget=50)  # one template rule here is 31 tokens: two do not fit
    ea, eb = seed_experiences(memory, drafts)
    for tag, item, speedup in (("alpha", ea, 4.0), ("beta", eb, 2.0)):
        for task in ("op1", "op2", "op3"):
            episode = memory.start_episode(task=task, op_tags=[tag], model="test", mode="sage", seed=0)
            episode.retrieve(tag, [tag])
            episode.declare_adopted([item], attempt=1)
            report = episode.finish(Outcome(executed=True, correct=True, speedup=speedup))
    resident = memory.resident_rules()
    assert [r.id for r in resident] == ["R1"] and resident[0].tokens == 31
    assert report.promoted == {} and memory.show(eb).experience.status == "active"
    assert memory.stats().resident_tokens == resident[0].tokens


class _ProbingAbstractor:
    """Writes through a second Memory while abstracting: that only works if no write lock is held."""

    def __init__(self, url: str) -> None:
        self.url, self.calls = url, []

    def abstract(self, experience, operators: list[str]) -> str:
        from sage.memory import Memory

        self.calls.append((experience.id, round(experience.utility, 6), tuple(operators)))
        other = Memory(self.url)
        run_episode(other, task="probe", mode="atu", adopt=[])
        other.close()
        return f"Always: {experience.title}."


@pytest.mark.timeout(60)  # if the abstractor ran under the write lock, the probe would wait for ever
def test_a_pluggable_abstractor_runs_outside_the_write_transaction(memory_url) -> None:
    from sage.memory import Memory, MemoryConfig

    abstractor = _ProbingAbstractor(memory_url)
    memory = Memory(memory_url, config=MemoryConfig(), abstractor=abstractor)
    e1, *_ = seed_experiences(memory)
    reports = [run_episode(memory, task=task, mode="sage", adopt=[e1])[2] for task in ("softmax", "layer_norm", "rms_norm")]
    assert [r.promoted for r in reports] == [{}, {}, {e1: "R1"}]
    # Called once, before the third episode's transaction, with the utility and operators it was about to have.
    assert abstractor.calls == [(e1, round(_u_after(3), 6), ("layer_norm", "rms_norm", "softmax"))]
    assert memory.show("R1").rule.text == "Always: Double-buffer the softmax rows."
    memory.close()
