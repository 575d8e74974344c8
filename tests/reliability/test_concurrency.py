"""Two ``localjudge eval`` processes at once, sharing one ``--cache`` file.

README: the cache is "one SQLite file in WAL mode with a busy timeout, so several processes can
read and write it at once". Two runs on overlapping slices of the data start together; both must
complete, the cache must end up holding exactly the union of their judge calls (an overlapping
call stored once) and pass SQLite's integrity check, and running each again must make no judge
call at all.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from reliability_procs import (
    METRICS,
    N_RECORDS,
    REASONS,
    Env,
    Reference,
    cache_rows,
    check_complete,
    eval_args,
    finish,
    judge_calls,
    real_records,
    rows_of,
    run_to_end,
    start,
    untimed,
    wait_for,
)

from localjudge.data.item import make_item
from localjudge.judge.cache.database import Cache
from localjudge.judge.cache.rows import cache_key
from localjudge.judge.protocol import JudgeIdentity
from localjudge.metrics import ContextPosition, ContextRecall
from localjudge.metrics.asks import Answer, reason_request

pytestmark = pytest.mark.model

#: two slices of the six real items that share two items
SLICES = {"a": slice(0, 4), "b": slice(2, 6)}


def expected_keys(
    records: list[dict[str, Any]], rows: list[dict[str, Any]], identity: JudgeIdentity
) -> set[str]:
    """The cache keys of every judge call ``records`` need, computed without a model: each
    decision call from the metric's asks, and, the runs asking reasons (REASONS), each reason
    call from that ask and the verdict the run's ``rows`` hold for it (a reason call's prompt
    shows the verdict)."""
    metrics = {
        "recall": ContextRecall(reasons=REASONS),
        "position": ContextPosition(reasons=REASONS),
    }
    by_item = {(r["index"], r["metric"]): r for r in rows}
    keys = set()
    for i, rec in enumerate(records):
        for name in METRICS:
            asks = metrics[name].build(make_item(rec, index=i))
            assert isinstance(asks, list)
            verdicts = by_item[(i, name)]["verdicts"]
            baseline = [a for a in asks if a.baseline]  # position's: no verdict, no reason
            decided = [a for a in asks if not a.baseline]
            assert len(verdicts) == len(decided)
            requests = [a.request for a in baseline]
            for ask, verdict in zip(decided, verdicts, strict=True):
                requests.append(ask.request)
                if metrics[name].reasons:
                    yes = verdict["attributed"] if name == "recall" else verdict["relevant"]
                    requests.append(reason_request(ask, Answer("yes" if yes else "no")))
            for r in requests:
                keys.add(cache_key(identity, r.messages, r.schema, r.shared_chars, r.read_chars))
    return keys


def test_two_processes_share_one_cache(lj: Env, tmp_path: Path) -> None:
    cache = tmp_path / "shared.sqlite3"
    records = real_records()
    data, outs = {}, {}
    for name, part in SLICES.items():
        data[name] = tmp_path / f"{name}.jsonl"
        data[name].write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records[part]), "utf-8"
        )
        outs[name] = tmp_path / f"out-{name}"

    def run_both(tag: str) -> dict[str, dict[str, Any]]:
        procs = {
            name: start(lj, eval_args(lj, outs[name] / tag, cache, data[name])) for name in SLICES
        }
        summaries = {}
        for name, proc in procs.items():
            rc, _, err = finish(proc)
            assert rc == 0, (name, err)
            assert "locked" not in err, err
            summaries[name] = json.loads((outs[name] / tag / "summary.json").read_text("utf-8"))
        return summaries

    first = run_both("first")
    n_calls = {name: judge_calls(records[part], reasons=REASONS) for name, part in SLICES.items()}
    for name, summary in first.items():
        run = summary["run"]
        assert run["judge_calls"] + run["cache_hits"] == n_calls[name], run
        for metric in METRICS:
            assert summary["metrics"][metric]["n_failed"] == 0

    identity = JudgeIdentity(**first["a"]["run"]["judge"])
    assert first["b"]["run"]["judge"] == identity.as_dict()
    rows = {name: rows_of(outs[name] / "first" / "results.jsonl") for name in SLICES}
    wanted = {
        name: expected_keys(records[part], rows[name], identity) for name, part in SLICES.items()
    }
    assert {name: len(keys) for name, keys in wanted.items()} == n_calls
    union = wanted["a"] | wanted["b"]
    assert len(union) == judge_calls(records, reasons=REASONS)  # the overlap is stored once
    with Cache(cache) as c:
        assert set(c.keys()) == union
        assert len(c) == len(union)
    conn = sqlite3.connect(cache)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == len(union)
    finally:
        conn.close()

    # the shared items get the same verdicts in both runs (same model, settings and item)
    shared = {r["id"] for r in records[2:4]}

    def by_id(name: str) -> list[dict[str, Any]]:
        return untimed(
            [{k: v for k, v in r.items() if k != "index"} for r in rows[name] if r["id"] in shared]
        )

    assert by_id("a") == by_id("b")

    # a third run of each: everything comes from the cache
    again = run_both("again")
    for name, summary in again.items():
        assert summary["run"]["judge_calls"] == 0, summary["run"]
        assert summary["run"]["cache_hits"] == n_calls[name]
        assert untimed(rows_of(outs[name] / "again" / "results.jsonl")) == untimed(rows[name])
    with Cache(cache) as c:
        assert len(c) == len(union)


def test_a_second_run_into_the_same_output_directory_is_refused(
    lj: Env, reference: Reference, tmp_path: Path
) -> None:
    """Two real processes, one ``-o``: while the first writes, the second exits 2 at once with
    one clear line and touches nothing; the first completes with the uninterrupted rows; once
    it is done, the same second command runs (from the cache)."""
    out, cache = tmp_path / "out", tmp_path / "calls.sqlite3"
    first = start(lj, eval_args(lj, out, cache))
    assert wait_for(first, lambda: cache_rows(cache) >= 1), "the first run ended before a call"
    second_t = time.monotonic()
    rc, _, err = run_to_end(lj, eval_args(lj, out, tmp_path / "other.sqlite3"))
    refused_in = time.monotonic() - second_t
    assert rc == 2, err
    assert "in use by another localjudge run" in err
    assert "Traceback" not in err
    assert not (tmp_path / "other.sqlite3").exists()  # refused before opening anything
    rc, _, err = finish(first)
    assert rc == 0, err
    rows = rows_of(out / "results.jsonl")
    check_complete(rows, N_RECORDS)
    assert untimed(rows) == untimed(reference.rows)
    rc, _, err = run_to_end(lj, eval_args(lj, out, cache))
    assert rc == 0, err
    assert untimed(rows_of(out / "results.jsonl")) == untimed(reference.rows)
    assert refused_in < 60, refused_in  # it did not wait for the first run (a loose bound)
