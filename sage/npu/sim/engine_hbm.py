"""HBM bandwidth shared moment by moment among the GM streams of all cores of a launch.

The HBM part of each GM copy is a flow with a cap: the rate it streams at alone (its
path's sustained rate, ``costs.Transfer.rate``). While the caps of the flows active at a
moment add up to no more than the HBM bandwidth, every flow runs at its cap. Beyond that
the bandwidth is split max-min fairly (water-filling): a flow whose cap is below the fair
share gets its cap, the others share what is left equally.

Why max-min fair and not proportional to the caps: the memory system serves the requesting
cores in turn, so a core asking for less than an equal share is served in full and the
cores that ask for more end up with equal shares. (A closed-loop model, where each core
keeps a fixed number of requests in flight, would give shares proportional to the caps
instead.) The two rules agree whenever all active flows have the same cap, which is the
common case: every AIV streaming GM->UB.

Flows with the same cap always get the same rate, so they form one class: per class, the
bytes served to each of its flows since the start (its "service") grow at the class rate,
and a flow that joined at service s with b bytes ends when the service reaches s + b. An
event costs O(log flows + classes), never O(active flows). A flow may stand for ``weight``
identical flows (identical blocks that started together): it counts that many times.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

_TOLERANCE = 1e-6   # bytes: flows this close to their end at an event end with it


class HbmShare:
    def __init__(self, bytes_per_cycle: float):
        self.bandwidth = bytes_per_cycle
        self.now = 0.0
        self.caps: list[float] = []
        self.index: dict[float, int] = {}
        self.order: list[int] = []            # classes by ascending cap
        self.weight: list[int] = []           # flows active in each class (weighted)
        self.rate: list[float] = []           # bytes per cycle of each flow of the class
        self.service: list[float] = []
        self.heaps: list[list[tuple]] = []
        self._seq = 0

    @property
    def active(self) -> bool:
        return any(self.heaps)

    def _class(self, cap: float) -> int:
        k = self.index.get(cap)
        if k is None:
            k = self.index[cap] = len(self.caps)
            for lst, value in ((self.caps, cap), (self.weight, 0), (self.rate, cap), (self.service, 0.0),
                               (self.heaps, [])):
                lst.append(value)
            self.order = sorted(range(len(self.caps)), key=self.caps.__getitem__)
        return k

    def add(self, flow: Any, nbytes: float, cap: float, weight: int) -> None:
        """A flow of `nbytes` starts streaming now."""
        k = self._class(cap)
        self._seq += 1
        heapq.heappush(self.heaps[k], (self.service[k] + nbytes, self._seq, flow, weight))
        self.weight[k] += weight
        self._rerate()

    def advance(self, t: float) -> None:
        dt = t - self.now
        if dt > 0:
            service, rate = self.service, self.rate
            for k, w in enumerate(self.weight):
                if w:
                    service[k] += rate[k] * dt
            self.now = t

    def next_finish(self) -> float:
        """When the first active flow ends at the current rates (inf when none is active)."""
        best = math.inf
        for k, h in enumerate(self.heaps):
            if h:
                t = self.now + (h[0][0] - self.service[k]) / self.rate[k]
                if t < best:
                    best = t
        return best

    def pop_finished(self) -> list[Any]:
        """The flows that have streamed all their bytes by now (after ``advance(next_finish())``)."""
        done = []
        for k, h in enumerate(self.heaps):
            limit = self.service[k] + _TOLERANCE + 1e-12 * self.service[k]
            while h and h[0][0] <= limit:
                done.append(self._pop(k))
        if not done:  # rounding left the earliest flow a hair short: it ends now all the same
            left = [((h[0][0] - self.service[k]) / self.rate[k], k) for k, h in enumerate(self.heaps) if h]
            if left:
                done.append(self._pop(min(left)[1]))
        self._rerate()
        return done

    def _pop(self, k: int) -> Any:
        _, _, flow, w = heapq.heappop(self.heaps[k])
        self.weight[k] -= w
        return flow

    def _rerate(self) -> None:
        caps, weight, rate = self.caps, self.weight, self.rate
        demand = sum(w * c for w, c in zip(weight, caps))
        rate[:] = caps
        if demand <= self.bandwidth:
            return
        left, flows = self.bandwidth, sum(weight)
        for n, k in enumerate(self.order):
            w = weight[k]
            if not w:
                continue
            if caps[k] * flows <= left:
                left -= caps[k] * w
                flows -= w
                continue
            share = left / flows     # every flow from here on asks for more than an equal share
            for k2 in self.order[n:]:
                rate[k2] = share
            return
