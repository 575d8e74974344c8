"""Killing ``localjudge eval`` (SIGKILL, SIGINT) at many points and starting it again.

The dataset (see conftest) has 18 records in two runner chunks: the first chunk's rows reach
``results.jsonl.partial`` after its ``N_FIRST_CALLS`` judge calls (one per statement or piece,
and one reason call per decision if the runs ask reasons: ``REASON_ARGS``, none by default), the
second's after the rest. Because the results file
is written a chunk at a time, progress inside a chunk is watched through the cache (each judge
call is committed there as it returns).

Promises checked (README: "an interrupted run resumes where it stopped"):

- a killed run never leaves a ``results.jsonl`` that is incomplete, and leaves its SQLite cache
  readable, intact, and holding every call that finished;
- the run started again with the same command completes, re-judges nothing the cache holds, and
  writes exactly the rows of an uninterrupted run (timing fields aside);
- Ctrl-C (SIGINT) ends the run within seconds with exit code 130 and a line on how to resume.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from reliability_procs import (
    N_CALLS,
    N_FIRST_CALLS,
    N_RECORDS,
    Env,
    Reference,
    cache_rows,
    check_complete,
    eval_args,
    finish,
    gone_within,
    judge_child,
    kill,
    rows_of,
    run_to_end,
    size,
    start,
    untimed,
    wait_for,
)

from localjudge.judge.cache.database import Cache

pytestmark = pytest.mark.model


def check_cache_intact(path: Path, at_least: int) -> int:
    """The cache opens with localjudge's own class, passes SQLite's integrity check, and holds
    at least ``at_least`` calls; returns how many."""
    with Cache(path) as cache:
        n = len(cache)
        keys = cache.keys()
        assert all(cache.get(k) is not None for k in keys)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert n >= at_least, f"cache lost calls: {n} < {at_least}"
    assert n <= N_CALLS
    return n


def check_resumes(lj: Env, args: list[str], out: Path, stored: int, reference: Reference) -> None:
    """The same command again completes, judging exactly what the cache lacks (``stored``
    calls were kept), and writes the rows of the uninterrupted run."""
    rc, _, err = run_to_end(lj, args)
    assert rc == 0, err
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["run"]["cache_hits"] == stored
    assert summary["run"]["judge_calls"] == N_CALLS - stored
    rows = rows_of(out / "results.jsonl")
    check_complete(rows, N_RECORDS)
    assert untimed(rows) == untimed(reference.rows)


def test_sigkill_at_many_points_then_resume_gives_the_uninterrupted_rows(
    lj: Env, reference: Reference, tmp_path: Path
) -> None:
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    args = eval_args(lj, out, cache)
    partial = out / "results.jsonl.partial"
    seed = random.randrange(1 << 30)
    # a call inside the second chunk
    later = random.Random(seed).randint(N_FIRST_CALLS + 1, N_CALLS - 1)
    triggers = [
        ("very early, before any call", None),
        ("after the 1st call", lambda: cache_rows(cache) >= 1),
        ("after the 3rd call", lambda: cache_rows(cache) >= 3),
        ("as the first rows reach the partial file", lambda: size(partial) > 0),
        (f"after call {later} (seed {seed})", lambda: cache_rows(cache) >= later),
    ]
    stored = 0
    log = []
    for what, ready in triggers:
        proc = start(lj, args)
        if ready is None:
            time.sleep(0.3)
            hit = proc.poll() is None
        else:
            # a judge call takes a good fraction of a second; rows are written in a burst
            hit = wait_for(proc, ready, poll=0.002 if "partial" in what else 0.02)
        kill(proc)
        rc, _, err = finish(proc)
        log.append((what, hit, rc, cache_rows(cache)))
        assert rc in (-signal.SIGKILL, 0), (what, rc, err)
        if rc == 0:  # finished before the trigger: nothing left to interrupt
            break
        assert not (out / "results.jsonl").exists(), what  # only a finished run renames it
        stored = check_cache_intact(cache, stored) if cache.exists() else 0
    assert [hit for _, hit, _, _ in log] == [True] * len(triggers), log
    # start the same command again until it completes (it should, the first time)
    before = cache_rows(cache)
    rc, _, err = run_to_end(lj, args)
    assert rc == 0, err
    assert not partial.exists()
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    run = summary["run"]
    # nothing finished before was judged again, nothing was skipped
    assert run["cache_hits"] == before > 0, (run, log)
    assert run["judge_calls"] == N_CALLS - before, (run, log)
    rows = rows_of(out / "results.jsonl")
    check_complete(rows, N_RECORDS)
    assert untimed(rows) == untimed(reference.rows)
    assert summary["metrics"] == reference.summary["metrics"]
    assert check_cache_intact(cache, N_CALLS) == N_CALLS


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_stops_promptly_with_130_and_the_rerun_resumes(
    lj: Env, reference: Reference, tmp_path: Path, sig: signal.Signals
) -> None:
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    args = eval_args(lj, out, cache)
    proc = start(lj, args)
    assert wait_for(proc, lambda: cache_rows(cache) >= 2, poll=0.01), finish(proc)
    sent = time.monotonic()
    proc.send_signal(sig)
    at_signal = cache_rows(cache)
    rc, _, err = finish(proc, timeout=120)
    took = time.monotonic() - sent
    assert rc == 130, err
    # promptly: within 5 s, or (on a machine so loaded that one judge call takes longer) within
    # the time of the call in flight; and no call is started after the signal
    conn = sqlite3.connect(cache)
    try:
        slowest = conn.execute("SELECT MAX(seconds) FROM calls").fetchone()[0]
    finally:
        conn.close()
    assert took < max(5.0, 1.5 * slowest), f"SIGINT took {took:.1f} s (a call: {slowest:.1f} s)"
    assert cache_rows(cache) <= at_signal + 1
    assert "Traceback" not in err, err
    assert any(line.startswith("localjudge:") and "resume" in line for line in err.splitlines()), (
        err
    )
    assert (out / "results.jsonl.partial").exists()
    assert not (out / "results.jsonl").exists()
    check_resumes(lj, args, out, check_cache_intact(cache, 2), reference)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_a_judge_that_dies_by_a_signal_is_one_line_and_the_rerun_completes(
    lj: Env, reference: Reference, tmp_path: Path, sig: signal.Signals
) -> None:
    """What an AMX segfault or the OOM killer does to the judge mid-run: one line naming the
    signal, the item and metric in flight, that results are kept and how to resume; exit code
    128 + N; the rerun re-judges nothing finished and writes the uninterrupted rows."""
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    args = eval_args(lj, out, cache)
    proc = start(lj, args)
    child = judge_child(proc)
    assert wait_for(proc, lambda: cache_rows(cache) >= 3), finish(proc)
    os.kill(child, sig)
    rc, _, err = finish(proc, timeout=60)
    assert rc == 128 + sig, err
    lines = [line for line in err.splitlines() if line.startswith("localjudge: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    line = lines[0]
    assert f"died with {sig.name}" in line
    assert re.search(r"item #\d+ \(id '[^']+'\), metric (recall|position)", line), line
    assert "finished results are kept" in line
    assert "run the same command again to resume" in line
    assert "localjudge doctor" in line
    assert not (out / "results.jsonl").exists()
    check_resumes(lj, args, out, check_cache_intact(cache, 3), reference)


def test_killing_the_cli_process_takes_its_judge_child_with_it(lj: Env, tmp_path: Path) -> None:
    """SIGKILL to the command itself: the judge child must not live on and keep writing."""
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    proc = start(lj, eval_args(lj, out, cache))
    child = judge_child(proc)
    assert wait_for(proc, lambda: cache_rows(cache) >= 1), finish(proc)
    kill(proc)
    finish(proc)
    assert gone_within(child, 10), "the judge child outlived its parent"
