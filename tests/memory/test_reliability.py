"""Concurrent writers lose no update; a killed process leaves no half episode; export/import round-trips."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time

import pytest

from sage.memory import ImportFormatError, Memory, MemoryStoreError

from .helpers import WIN, adopt_repeatedly, finish_and_hang, run_episode, seed_experiences

SPAWN = multiprocessing.get_context("spawn")  # no inherited database connections in the children


def test_two_processes_finishing_at_once_lose_no_update(open_memory, memory_url) -> None:
    memory = open_memory()
    item = seed_experiences(memory)[0]
    per_worker = 12
    start = SPAWN.Barrier(2)
    workers = [SPAWN.Process(target=adopt_repeatedly, args=(memory_url, item, per_worker, w, start)) for w in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert [w.exitcode for w in workers] == [0, 0]
    got = memory.show(item).experience
    n = 2 * per_worker
    assert (got.retrieved, got.adopted, got.adopted_succeeded) == (n, n, n)
    # Every update had the same reward, so the order does not matter: n ATU steps from 0.
    assert got.utility == pytest.approx(WIN_REWARD * (1 - 0.7**n), rel=1e-12)
    assert memory.stats().episodes == 1 + n
    assert len(memory.show(item).history) == n


WIN_REWARD = 0.7615941559557649  # tanh(1)


def test_a_process_killed_inside_finish_leaves_no_trace(open_memory, memory_url, tmp_path) -> None:
    memory = open_memory()
    item = seed_experiences(memory)[0]
    before = memory.export_data()
    marker = tmp_path / "marker"
    child = SPAWN.Process(target=finish_and_hang, args=(memory_url, item, str(marker)))
    child.start()
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline and child.is_alive():
        time.sleep(0.05)
    assert marker.exists(), "the child never reached finish()"
    os.kill(child.pid, signal.SIGKILL)
    child.join(10)
    assert child.exitcode == -signal.SIGKILL

    assert memory.export_data() == before  # not one row of the episode, its credit or its experience
    _, _, report = run_episode(memory, task="after", mode="atu", adopt=[item])  # and the lock is free again
    assert report.credited[item][0] == 0.0


def test_export_reset_import_round_trips(open_memory, tmp_path) -> None:
    memory = open_memory(rule_cap=2)
    ids = seed_experiences(memory)
    for task in ("softmax", "layer_norm", "rms_norm"):
        run_episode(memory, task=task, mode="sage", adopt=[ids[0]])
    assert memory.resident_rules()
    exported = memory.export_data()
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(exported))
    memory.reset()
    assert memory.is_empty() and memory.resident_rules() == []
    counts = memory.import_data(json.loads(path.read_text()))
    assert counts["experience"] == 3 and counts["rule"] == 1
    assert memory.export_data() == exported
    # New rows continue after the imported ids.
    _, _, report = run_episode(memory, task="softmax", mode="sage")
    assert report.episode_id == max(e["id"] for e in exported["tables"]["episode"]) + 1


def test_import_refuses_bad_files_and_a_non_empty_memory(open_memory) -> None:
    memory = open_memory()
    seed_experiences(memory)
    good = memory.export_data()
    with pytest.raises(MemoryStoreError, match="not empty"):
        memory.import_data(good)
    memory.reset()
    with pytest.raises(ImportFormatError, match="not a sage memory export"):
        memory.import_data({"hello": 1})
    bad = json.loads(json.dumps(good))
    bad["tables"]["experience"][0]["utility"] = "very useful"
    with pytest.raises(ImportFormatError, match=r"tables\.experience\[0\]\.utility"):
        memory.import_data(bad)
    dangling = json.loads(json.dumps(good))
    dangling["tables"]["retrieval"] = [{"id": 1, "episode_id": 999, "experience_id": 1, "query_index": 0, "rank": 1, "score": 1.0}]
    with pytest.raises(ImportFormatError, match="inconsistent"):
        memory.import_data(dangling)
    assert memory.is_empty()  # a failed import changes nothing
    memory.import_data(good, replace=True)
    assert memory.export_data() == good


def test_bad_urls_give_clear_errors(tmp_path) -> None:
    from sage.memory import MemoryURLError

    with pytest.raises(MemoryURLError, match="not a database URL"):
        Memory("definitely not a url")
    with pytest.raises(MemoryURLError, match="unsupported memory URL"):
        Memory("nosuchdb://x/y")
    with pytest.raises(MemoryURLError, match="cannot open"):
        Memory("postgresql+psycopg://nobody:wrong@127.0.0.1:1/none")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(MemoryURLError, match="cannot create the folder"):
        Memory(f"sqlite:///{blocker}/sub/memory.db")


def test_items_deleted_mid_episode_are_reported_stale_not_crashing(open_memory) -> None:
    memory = open_memory()
    e1, e2, _ = seed_experiences(memory)
    episode = memory.start_episode(task="softmax", op_tags=["softmax"], model="test", mode="atu", seed=0)
    episode.retrieve("softmax rows", ["softmax"])
    episode.declare_adopted([e1], attempt=1)
    open_memory().reset()  # another process wipes the memory meanwhile
    report = episode.finish(WIN)
    assert report.stale == sorted([e1, e2]) and report.credited == {}
    assert memory.stats().episodes == 1 and memory.stats().adoptions == 0
