"""Stopping ``localjudge bench`` from outside: its judge's process killed by a signal (what an
AMX segfault or the OOM killer does), and the command stopped with SIGTERM or SIGINT.

Each bench runs two real judges one after another (SmolLM2 135M, then Gemma 3 270M), position
only, on the first items of examples/labelled.jsonl, one thread each, with a private cache
file. The promises (README, "bench"): a judge that dies is one line naming it, the signal, the
item and metric in flight, exit 128 + N within seconds and never a hang; a stop is exit 130 and
leaves no process behind; the other judge's finished run is kept, and the same command again
completes with the rows and agreement of an uninterrupted bench.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from reliability_procs import (
    ROOT,
    Env,
    cache_rows,
    finish,
    gone_within,
    judge_child,
    rows_of,
    start,
    untimed,
    wait_for,
)

pytestmark = pytest.mark.model

JUDGES = ("smollm2-135m", "gemma3-270m")
LIMIT = 5
#: fields of a bench report's metric entry that depend on timing, not on the verdicts
TIMED = ("seconds_per_item", "tokens_per_s")


def bench_args(lj: Env, out: Path, cache: Path) -> list[str]:
    models = [a for name in JUDGES for a in ("-m", name)]
    data = str(ROOT / "examples" / "labelled.jsonl")
    run = ["--metric", "position", "--limit", str(LIMIT), "-t", "1", "-q"]
    return [lj.exe, "bench", data, *models, *run, "--cache", str(cache), "-o", str(out)]


def judge_dirs(out: Path) -> list[Path]:
    return [out / "judges" / f"{n}-{name}" for n, name in enumerate(JUDGES)]


def agreement(out: Path) -> dict[str, Any]:
    """bench.json's agreement figures per judge and metric, timing left out."""
    report = json.loads((out / "bench.json").read_text("utf-8"))
    return {
        name: {
            metric: {k: v for k, v in m.items() if k not in TIMED}
            for metric, m in judge["metrics"].items()
        }
        for name, judge in report["judges"].items()
    }


def judge_rows(out: Path) -> list[list[dict[str, Any]]]:
    return [untimed(rows_of(d / "results.jsonl")) for d in judge_dirs(out)]


@pytest.fixture(scope="module")
def uninterrupted(lj: Env, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bench-reference")
    out = tmp / "out"
    rc, _, err = finish(start(lj, bench_args(lj, out, tmp / "calls.sqlite3")))
    assert rc == 0, err
    first = json.loads((judge_dirs(out)[0] / "summary.json").read_text("utf-8"))
    return {
        "agreement": agreement(out),
        "rows": judge_rows(out),
        "first_calls": first["run"]["judge_calls"],
    }


def slowest_call(cache: Path) -> float:
    conn = sqlite3.connect(cache)
    try:
        return float(conn.execute("SELECT MAX(seconds) FROM calls").fetchone()[0] or 0.0)
    finally:
        conn.close()


def check_rerun_completes(lj: Env, args: list[str], out: Path, reference: dict[str, Any]) -> None:
    rc, _, err = finish(start(lj, args))
    assert rc == 0, err
    assert judge_rows(out) == reference["rows"]
    assert agreement(out) == reference["agreement"]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL])
def test_a_judge_that_dies_by_a_signal_ends_the_bench_with_one_line_and_128_plus_n(
    lj: Env, uninterrupted: dict[str, Any], tmp_path: Path, sig: signal.Signals
) -> None:
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    args = bench_args(lj, out, cache)
    first, second = judge_dirs(out)
    proc = start(lj, args)
    # the first judge has finished its run and the second has made a call of its own
    started = uninterrupted["first_calls"] + 1
    ready = wait_for(
        proc, lambda: (first / "results.jsonl").exists() and cache_rows(cache) >= started
    )
    assert ready, finish(proc)
    child = judge_child(proc)
    os.kill(child, sig)
    killed = time.monotonic()
    rc, _, err = finish(proc, timeout=60)
    assert time.monotonic() - killed < 30, "the bench did not notice its judge's death"
    assert rc == 128 + sig, err
    lines = [line for line in err.splitlines() if line.startswith("localjudge: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    line = lines[0]
    assert f"judge {JUDGES[1]}" in line
    assert f"died with {sig.name}" in line
    assert re.search(r"item #\d+ \(id '[^']+'\), metric position", line), line
    assert f"the runs of {JUDGES[0]}" in line
    assert "run the same command again to resume" in line
    assert (first / "results.jsonl").exists()  # the other judge's finished run is kept
    assert not (second / "results.jsonl").exists()
    assert not (out / "bench.json").exists()
    check_rerun_completes(lj, args, out, uninterrupted)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_bench_exits_130_leaves_no_process_and_resumes(
    lj: Env, uninterrupted: dict[str, Any], tmp_path: Path, sig: signal.Signals
) -> None:
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    args = bench_args(lj, out, cache)
    proc = start(lj, args)
    child = judge_child(proc)
    assert wait_for(proc, lambda: cache_rows(cache) >= 2), finish(proc)
    sent = time.monotonic()
    proc.send_signal(sig)
    rc, _, err = finish(proc, timeout=120)
    took = time.monotonic() - sent
    assert rc == 130, err
    # promptly: within 5 s, or within the time of the call in flight on a loaded machine
    assert took < max(5.0, 1.5 * slowest_call(cache)), f"took {took:.1f} s"
    assert gone_within(child, 10), "the judge process outlived the stopped bench"
    assert "Traceback" not in err
    assert any(line.startswith("localjudge:") and "resume" in line for line in err.splitlines())
    assert not (out / "bench.json").exists()
    check_rerun_completes(lj, args, out, uninterrupted)


def test_a_bench_killed_outright_takes_its_judge_process_with_it(lj: Env, tmp_path: Path) -> None:
    """SIGKILL to the command itself (nothing can be passed on): the judge must not live on."""
    cache, out = tmp_path / "calls.sqlite3", tmp_path / "out"
    proc = start(lj, bench_args(lj, out, cache))
    child = judge_child(proc)
    assert wait_for(proc, lambda: cache_rows(cache) >= 1), finish(proc)
    proc.kill()
    finish(proc)
    assert gone_within(child, 10), "the judge process outlived its bench"
