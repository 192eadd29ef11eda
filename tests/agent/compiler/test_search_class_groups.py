"""Groups of one class in one case share one schedule (one GroupKey id); the search ranks
and times that schedule on the largest of them, not on whichever it saw last.

level2/06 after the shape-generic merge: a cast of 4 M elements and one of 16 K had one id,
the search ranked the id on the small cast, and the move the per-case search kept on the
large one (tile_len 8192) was never measured (device 88.9 -> 90.2 us)."""

from __future__ import annotations


def test_a_class_shared_by_a_large_and_a_small_group_is_ranked_on_the_large_one(task_file):
    from sage.agent.compiler.compiler import trace_cases
    from sage.agent.compiler.search import SearchState, _estimate, _locate, rank
    from sage.agent.compiler.schedule import Schedule
    from sage.kernels import target_for

    target = target_for("ascend910b2")
    # two casts of the same dtypes and rank: 4096 x 1024 first, then 16 x 1024
    task = task_file("x, y", "(x.float(), y.float())",
                     ["torch.randn(4096, 1024).half(), torch.randn(16, 1024).half()"])
    cases = trace_cases(task)
    (case,) = cases
    big, small = case.plan.groups
    assert case.keys[0].id == case.keys[1].id            # one class: one schedule for both
    prog = case.built.program
    t_big = _estimate(big, prog, Schedule(), target).time_us
    t_small = _estimate(small, prog, Schedule(), target).time_us
    assert t_big > 4 * t_small             # 256 times the elements (a launch costs the same)
    state = SearchState(cases=cases, target=target)
    rank(state, {})
    gid = case.keys[0].id
    assert _locate(state, gid) == (0, 0)
    assert state.decisions[gid].estimated_us == t_big
    assert state.ranked[gid][0][0] <= t_big                # the moves ranked are the large group's
    assert max(t for t, _, _ in state.ranked[gid]) > 4 * t_small
