"""``localjudge eval`` end to end with the default model, one subprocess at a time.

The first run judges all of examples/rag.jsonl (15 items x 3 metrics); the later runs share its
cache file, so they make no judge call and must write the same results byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
N_ITEMS = 15
METRICS = ("recall", "position", "relevance")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


#: the judge of these machinery tests (the default has a focused test of its own)
SMOLLM2 = "smollm2-135m"


def example_run(cache: Path, out: Path, *extra: str) -> tuple[str, ...]:
    """The arguments of ``eval`` on the bundled examples with SmolLM2 and two threads."""
    return ("eval", "examples/rag.jsonl", "-m", SMOLLM2, "--cache", str(cache), "-t", "2",
            "-q", "-o", str(out), *extra)  # fmt: skip


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli")


@pytest.fixture(scope="module")
def first_run(workdir: Path, cli: Any, isolated_env: Path) -> tuple[Any, Path, Path]:
    """The full example set, judged once (the slow part of this module)."""
    cache = workdir / "calls.sqlite3"
    out = workdir / "run1"
    proc = cli(*example_run(cache, out), timeout=400)
    return proc, out, cache


def _examples() -> list[dict[str, Any]]:
    return _rows(Path(__file__).resolve().parents[2] / "examples" / "rag.jsonl")


def _reasons(summary: dict[str, Any]) -> bool:
    """Whether the run asked reasons (eval's default: no), as its summary records it."""
    [reasons] = {m["reasons"] for m in summary["run"]["settings"]["metrics"].values()}
    return bool(reasons)


def test_full_example_run_scores_every_item_and_metric(first_run: Any, count_calls: Any) -> None:
    proc, out, _ = first_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    rows = _rows(out / "results.jsonl")
    assert len(rows) == N_ITEMS * len(METRICS)
    assert {(r["index"], r["metric"]) for r in rows} == {
        (i, m) for i in range(N_ITEMS) for m in METRICS
    }
    for row in rows:
        assert row["error"] is None, row
        assert row["score"] is not None, row
        assert 0.0 <= row["score"] <= 1.0, row
        assert row["reason"], row
        assert row["prompt_tokens"] > 0
        assert row["judge"]["model"] == "smollm2-135m"
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["run"]["n_items"] == N_ITEMS
    # one call per decision (and per reason if the run asked them: it did not, eval's default),
    # and relevance's missing call per item
    assert _reasons(summary) is False
    assert summary["run"]["judge_calls"] == count_calls(_examples(), METRICS, _reasons(summary))
    assert summary["run"]["cache_hits"] == 0
    assert set(summary["metrics"]) == set(METRICS)


def test_verdicts_match_the_pieces_of_each_item(first_run: Any) -> None:
    _, out, _ = first_run
    root = Path(__file__).resolve().parents[2]
    items = _rows(root / "examples" / "rag.jsonl")
    for row in _rows(out / "results.jsonl"):
        n = len(items[row["index"]]["retrieved_contexts"])
        assert row["id"] == items[row["index"]]["id"]
        if row["metric"] in ("position", "relevance"):
            assert [v["index"] for v in row["verdicts"]] == list(range(n)), row
        else:
            assert 1 <= len(row["verdicts"]) <= 8
            assert all(v["attributed"] in (0, 1) for v in row["verdicts"])


def test_second_run_is_served_from_the_cache_byte_identically(
    first_run: Any, workdir: Path, cli: Any, count_calls: Any
) -> None:
    _, out1, cache = first_run
    out2 = workdir / "run2"
    proc = cli(*example_run(cache, out2))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out2 / "summary.json").read_text("utf-8"))
    assert summary["run"]["judge_calls"] == 0
    assert summary["run"]["cache_hits"] == count_calls(_examples(), METRICS, _reasons(summary))
    assert (out2 / "results.jsonl").read_bytes() == (out1 / "results.jsonl").read_bytes()


def test_fail_under_exits_1(first_run: Any, workdir: Path, cli: Any) -> None:
    _, _, cache = first_run
    out3 = workdir / "run3"
    proc = cli(*example_run(cache, out3, "--fail-under", "recall=1.01"))
    assert proc.returncode == 1, proc.stderr
    assert "localjudge: below threshold: recall mean" in proc.stderr
    assert "< 1.01" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert (out3 / "results.jsonl").exists()


def test_a_small_window_gives_overflow_rows_and_exit_0(
    tmp_path: Path, cli: Any, count_calls: Any
) -> None:
    """With -c 2048 a long item overflows: an error row naming both numbers and -c/--n-ctx,
    while the short items are scored."""
    data = tmp_path / "data.jsonl"
    root = Path(__file__).resolve().parents[2]
    short = _rows(root / "examples" / "rag.jsonl")[:2]
    long = {**short[0], "id": "long", "retrieved_contexts": ["Paris. " * 1200, "Tour Eiffel."]}
    data.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (short[0], long, short[1])),
        "utf-8",
    )
    out = tmp_path / "out"
    proc = cli(
        "eval", str(data), "-m", SMOLLM2, "--metric", "position", "-c", "2048", "-t", "1",
        "-q", "--no-cache", "-o", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = _rows(out / "results.jsonl")
    assert [r["id"] for r in rows] == [short[0]["id"], "long", short[1]["id"]]
    assert rows[0]["error"] is None
    assert rows[2]["error"] is None
    error = rows[1]["error"]
    assert rows[1]["score"] is None
    assert error["kind"] == "context_overflow"
    assert "2048" in error["message"]
    assert "-c/--n-ctx" in error["hint"]
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    # the short items' calls; the long item's overflow is not a call
    assert summary["run"]["judge_calls"] == count_calls(short, ["position"], _reasons(summary))


def test_the_pytest_example_runs_and_passes(tmp_path: Path) -> None:
    """examples/test_rag_quality.py, as its docstring says to run it (in a child pytest)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "examples/test_rag_quality.py", "-q",
         "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
