"""A file system that fills up mid-run (README, "Reliability"): one clear error (exit 6), the
partial results file ends at its last complete row, the cache stays a sound SQLite file, and
the same command, run again once space is freed, resumes and writes the rows of a run that was
never interrupted.

The small file system is a real tmpfs (``mount -t tmpfs -o size=...``), which needs root on
Linux: where that is impossible the test says so and is skipped (CI runs as root)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pipeline_rules import rule_reply

from localjudge.cli import main
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache
from localjudge.run.settings import open_cache
from localjudge.testing import ScriptedJudge

N_RECORDS = 120


def calls_per_item(reasons: bool) -> int:
    """The judge calls of one item: recall and position each a decision per statement (two) or
    piece (two); relevance per piece a grade and whether it was used, and one list of what is
    missing; with ``reasons`` on, a reason per decision (not for used nor missing); and the
    item's baseline call (no passage, no reason), which position and relevance share, so it is
    asked once."""
    return (1 + reasons) * (2 + 2 + 2) + 2 + 1 + 1


@pytest.fixture
def small_fs(tmp_path: Path) -> Any:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("SKIPPED LOUDLY: the full-disk test mounts a small tmpfs, which needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def records() -> list[dict[str, Any]]:
    return [
        {
            "id": f"item-{i}",
            "user_input": f"question {i}? " + "detail " * 30,
            "retrieved_contexts": [f"yes fact {i}. " + "padding " * 60, f"noise {i}"],
            "reference": f"yes fact {i}. unknown {i}.",
            "response": f"yes fact {i}.",
        }
        for i in range(N_RECORDS)
    ]


def run(data: Path, out: Path, cache: Path) -> Any:
    def factory(settings: Any) -> Any:
        return CachingJudge(ScriptedJudge(rule_reply), open_cache(settings.cache))

    args = ["eval", str(data), "-o", str(out), "--cache", str(cache), "-q"]
    return CliRunner().invoke(main, args, obj={"open_judge": factory}, catch_exceptions=False)


def untimed(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def fill(mount: Path, leave: int) -> Path:
    """Fill ``mount`` up to ``leave`` free bytes with one file; returns it (delete to free)."""
    filler = mount / "filler"
    with filler.open("wb") as f:
        while (free := os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize) > leave:
            f.write(b"\0" * min(65536, free - leave))
            f.flush()
    return filler


@pytest.mark.parametrize(("where", "leave"), [("output", 60_000), ("cache", 300_000)])
def test_a_full_disk_stops_the_run_cleanly_and_the_rerun_resumes(small_fs, tmp_path, where, leave):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records()), "utf-8")
    assert run(data, tmp_path / "ref", tmp_path / "ref.sqlite3").exit_code == 0
    # the run's settings (eval's defaults) say whether it asked reasons
    ref_summary = json.loads((tmp_path / "ref" / "summary.json").read_text("utf-8"))
    [reasons] = {m["reasons"] for m in ref_summary["run"]["settings"]["metrics"].values()}
    n_calls = N_RECORDS * calls_per_item(reasons)
    with Cache(tmp_path / "ref.sqlite3") as ref:
        assert len(ref) == n_calls  # every call a different prompt
    out = small_fs / "out" if where == "output" else tmp_path / "out"
    cache = small_fs / "calls.sqlite3" if where == "cache" else tmp_path / "calls.sqlite3"
    filler = fill(small_fs, leave=leave)  # less than the run needs

    first = run(data, out, cache)
    assert first.exit_code == 6, first.output
    errors = [line for line in first.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert len(errors) == 1, first.stderr
    assert "no space left on the device" in errors[0]
    assert "Traceback" not in first.stderr
    assert "run the same command again to resume" in first.stderr
    assert not (out / "results.jsonl").exists()
    partial = out / "results.jsonl.partial"
    text = partial.read_text("utf-8")
    assert text == "" or text.endswith("\n")
    complete = untimed(partial)  # every line a whole row
    assert complete == untimed(tmp_path / "ref" / "results.jsonl")[: len(complete)]
    conn = sqlite3.connect(cache)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    stored = conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    conn.close()
    assert 0 < stored < n_calls  # it stopped mid-run, with calls kept

    filler.unlink()
    second = run(data, out, cache)
    assert second.exit_code == 0, second.output
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["run"]["cache_hits"] >= stored
    assert untimed(out / "results.jsonl") == untimed(tmp_path / "ref" / "results.jsonl")
    with Cache(cache) as reopened:
        assert reopened.set_aside is None
        assert len(reopened) == n_calls
