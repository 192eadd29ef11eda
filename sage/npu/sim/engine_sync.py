"""Synchronisation between the cores of one launch: CrossCoreSetFlag/WaitFlag and SyncAll.

Semantics (CANN Ascend C API reference, Atlas A2: CrossCoreSetFlag,
https://www.hiascend.com/document/detail/zh/canncommercial/800/apiref/ascendcopapi/atlasascendc_api_07_0273.html,
CrossCoreWaitFlag ..._0274.html; SyncAll,
https://www.hiascend.com/document/detail/zh/canncommercial/82RC1/API/ascendcopapi/atlasascendc_api_07_0204.html):

- every core has one counter per flag id, starting at 0: a set raises it by one; a wait
  blocks while it is 0, then lowers it by one;
- mode 0: once every core of the setter's type in the launch has run its k-th mode-0 set of
  the flag, the counter of each of those cores goes up (a barrier among same-type cores);
- mode 1: once both AIVs of an AI Core group have run their k-th set, both counters go up;
- mode 2: an AIC's set raises the counters of both AIVs of its group; once both AIVs have
  run their k-th set, the AIC's counter goes up;
- SyncAll: the k-th SyncAll of every taking-part core (every AIV with isAIVOnly, else every
  core) returns once all of them have reached it.

An increment reaches its counter at the engine time of the set's end, so the increments of
a counter are in time order even when several channels feed it; a wait takes the oldest.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from sage.npu.sim.opcodes import AIC, AIV, CROSS_WAIT

if TYPE_CHECKING:
    from sage.npu.sim.engine import Engine, Instance
    from sage.npu.sim.engine_stream import StreamRunner


class SyncHub:
    def __init__(self, engine: Engine, participants: dict[str, int]):
        self.engine = engine
        self.participants = participants                 # streams of each core type in the launch
        self.runners: dict[str, list[StreamRunner]] = {AIV: [], AIC: []}
        self.pairs: dict[tuple, tuple[list, list, list]] = {}
        self.mode0: dict[tuple, list] = {}                # (core type, flag, k) -> [weighted count, latest]
        self.mode0_sets: dict[tuple, int] = {}            # (runner id, flag) -> mode-0 sets so far
        self.barriers: dict[tuple, list] = {}             # (aiv only, k) -> [weighted count, latest, waiters, release]

    def add(self, runner: StreamRunner) -> None:
        self.runners[runner.core_type].append(runner)

    # -- sets ------------------------------------------------------------------------------------
    def on_set(self, runner: StreamRunner, flag: int, mode: int, t: float) -> None:
        inst = runner.inst
        if mode == 2:
            if runner.core_type == AIC:
                for v in inst.aiv:
                    self._deliver(v, flag, t)
            else:
                self._pair(inst, flag, "to AIC", runner.sub, t, [inst.aic])
        elif mode == 1:
            if runner.core_type == AIV:
                self._pair(inst, flag, "AIVs", runner.sub, t, inst.aiv)
        elif mode == 0:
            kind = runner.core_type
            k = self.mode0_sets.get((id(runner), flag), 0)
            self.mode0_sets[(id(runner), flag)] = k + 1
            bucket = self.mode0.setdefault((kind, flag, k), [0, t])
            bucket[0] += runner.weight
            bucket[1] = max(bucket[1], t)
            if bucket[0] == self.participants[kind]:
                for r in self.runners[kind]:
                    self._deliver(r, flag, bucket[1])

    def _pair(self, inst: Instance, flag: int, kind: str, sub: int, t: float, targets: list) -> None:
        """Both AIVs of the group must have run their k-th set before the k-th increment."""
        sets0, sets1, done = self.pairs.setdefault((id(inst), flag, kind), ([], [], [0]))
        (sets0 if sub == 0 else sets1).append(t)
        while done[0] < min(len(sets0), len(sets1)):
            latest = max(sets0[done[0]], sets1[done[0]])
            done[0] += 1
            for target in targets:
                self._deliver(target, flag, latest)

    def _deliver(self, target: StreamRunner | None, flag: int, t: float) -> None:
        if target is not None:
            self.engine.at(t, self._arrive, target, flag, t)

    def _arrive(self, target: StreamRunner, flag: int, t: float) -> None:
        target.counters.setdefault(flag, deque()).append(t)
        self.engine.wake(target)

    # -- waits -----------------------------------------------------------------------------------
    def gate(self, runner: StreamRunner, i: int, rec: tuple, arrival: float) -> float:
        """When a wait or SyncAll record arriving at `arrival` may start; -1 while it must wait."""
        if rec[2] == CROSS_WAIT:
            q = runner.counters.get(rec[8])
            if not q:
                return -1.0
            return max(arrival, q.popleft())
        aiv_only = rec[8] == 1
        barrier = self._barrier(runner, i, aiv_only, arrival)
        return max(arrival, barrier[3]) if barrier[3] >= 0 else -1.0

    def _barrier(self, runner: StreamRunner, i: int, aiv_only: bool, arrival: float) -> list:
        k = runner.sync_alls.get(i)
        if k is not None:
            return self.barriers[(aiv_only, k)]
        k = runner.sync_alls[i] = len(runner.sync_alls)
        barrier = self.barriers.setdefault((aiv_only, k), [0, arrival, [], -1.0])
        if not aiv_only or runner.core_type == AIV:
            barrier[0] += runner.weight
        barrier[1] = max(barrier[1], arrival)
        barrier[2].append(runner)
        if barrier[0] >= self.taking_part(aiv_only):
            barrier[3] = barrier[1]
            for r in barrier[2]:
                self.engine.wake(r)
        return barrier

    def taking_part(self, aiv_only: bool) -> int:
        return self.participants[AIV] + (0 if aiv_only else self.participants[AIC])

    def arrived(self, runner: StreamRunner, i: int, aiv_only: bool) -> int:
        k = runner.sync_alls.get(i)
        return self.barriers[(aiv_only, k)][0] if k is not None else 0
