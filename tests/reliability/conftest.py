"""Session fixtures of the reliability tests that run real ``localjudge eval`` processes
(helpers in ``reliability_procs``)."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from reliability_procs import (
    N_CALLS,
    N_RECORDS,
    Env,
    Reference,
    check_complete,
    dataset_lines,
    eval_args,
    rows_of,
    run_to_end,
)


@pytest.fixture(scope="session")
def lj(tmp_path_factory: pytest.TempPathFactory) -> Env:
    exe = shutil.which("localjudge")
    if exe is None:
        pytest.fail("the localjudge entry point is not on PATH (pip install -e .)")
    cache_dir = tmp_path_factory.mktemp("lj-shared-cache")
    env = {k: v for k, v in os.environ.items() if k != "LOCALJUDGE_DEBUG"}
    env["LOCALJUDGE_CACHE_DIR"] = str(cache_dir)
    env["LOCALJUDGE_MODELS"] = str(cache_dir / "no-user-registry.json")
    data = tmp_path_factory.mktemp("lj-data") / "mixed.jsonl"
    data.write_text("\n".join(dataset_lines()) + "\n", "utf-8")
    return Env(exe=exe, env=env, cache_dir=cache_dir, data=data)


@pytest.fixture(scope="session")
def reference(lj: Env, tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """One uninterrupted run of the mixed dataset, with a cache of its own."""
    tmp = tmp_path_factory.mktemp("lj-reference")
    start_t = time.monotonic()
    rc, _, err = run_to_end(lj, eval_args(lj, tmp / "out", tmp / "calls.sqlite3"))
    seconds = time.monotonic() - start_t
    assert rc == 0, err
    rows = rows_of(tmp / "out" / "results.jsonl")
    check_complete(rows, N_RECORDS)
    summary = json.loads((tmp / "out" / "summary.json").read_text("utf-8"))
    assert summary["run"]["judge_calls"] == N_CALLS, summary["run"]
    assert summary["run"]["cache_hits"] == 0
    return Reference(rows=rows, summary=summary, seconds=seconds)
