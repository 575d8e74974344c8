"""``localjudge bench`` end to end: two real judges (SmolLM2 135M and Gemma 3 270M) on the first
three items of examples/labelled.jsonl, one llama.cpp process at a time, one thread each.

The first run judges 2 judges x 3 metrics x 3 items; the rerun shares its cache file, so it makes
no judge call and must report the same agreement numbers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from localjudge.run.results import BENCH

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
DATA = "examples/labelled.jsonl"
JUDGES = ("smollm2-135m", "gemma3-270m")
METRICS = ("recall", "position", "relevance")
LIMIT = 3
CLI_ERROR = "localjudge: error:"
SHA256 = re.compile(r"[0-9a-f]{64}")


def _localjudge() -> str:
    exe = shutil.which("localjudge")
    if exe is None:
        pytest.skip("the localjudge console script is not installed")
    return exe


def _bench(*args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    """``localjudge ARGS...`` with this module's environment (the session's cache directory, no
    user registry, no debug tracebacks: set by conftest's ``isolated_env``)."""
    env = dict(os.environ)
    assert env.get("LOCALJUDGE_CACHE_DIR"), "conftest's isolated_env must be active"
    return subprocess.run(
        [_localjudge(), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def _bench_args(out: Path, cache: Path) -> list[str]:
    models = [arg for name in JUDGES for arg in ("-m", name)]
    run = ["--limit", str(LIMIT), "-t", "1", "-o", str(out), "--cache", str(cache)]
    return ["bench", DATA, *models, *run]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _agreement(report: dict[str, Any]) -> dict[str, Any]:
    return {name: judge["metrics"] for name, judge in report["judges"].items()}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="module")
def first_run(workdir: Path, isolated_env: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Both judges on 3 items (the slow part of this module)."""
    out = workdir / "out"
    proc = _bench(*_bench_args(out, workdir / "c.sqlite3"))
    return proc, out


@pytest.fixture(scope="module")
def first_report(first_run: Any) -> dict[str, Any]:
    proc, out = first_run
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "bench.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def second_run(
    first_run: Any, first_report: dict[str, Any], workdir: Path
) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, Any], dict[str, bytes]]:
    """The identical command again, into the same directory, after saving the first outputs."""
    _, out = first_run
    before = {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name in ("results.jsonl", "bench_items.jsonl")
    }
    proc = _bench(*_bench_args(out, workdir / "c.sqlite3"), timeout=600)
    return proc, out, first_report, before


def test_bench_exits_0_and_prints_the_table(first_run: Any) -> None:
    proc, out = first_run
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:2] == ["judge", "metric"]
    rows = [line.split() for line in lines[2 : 2 + len(JUDGES) * len(METRICS)]]
    assert [(r[0], r[1]) for r in rows] == [(j, m) for j in JUDGES for m in METRICS]
    assert all(r[2] == str(LIMIT) and r[3] == "0" for r in rows), proc.stdout
    assert f"bench: {out / 'bench.json'}" in proc.stdout
    for name in JUDGES:
        assert f"judging with {name} ..." in proc.stderr


def _labelled() -> list[dict[str, Any]]:
    return _jsonl(ROOT / DATA)[:LIMIT]


def _reasons(judge: dict[str, Any]) -> bool:
    """Whether a judge's run asked reasons (bench's default: no), as the summary.json beside
    its results records it."""
    summary = json.loads((Path(judge["results"]).parent / "summary.json").read_text("utf-8"))
    [reasons] = {m["reasons"] for m in summary["run"]["settings"]["metrics"].values()}
    return bool(reasons)


def test_bench_json_has_both_judges_and_every_metric(
    first_report: dict[str, Any], count_calls: Any
) -> None:
    report = first_report
    assert report["format"] == BENCH.version
    assert report["n_labelled"] == LIMIT
    assert report["metrics"] == list(METRICS)
    assert SHA256.fullmatch(report["data_sha256"])
    assert list(report["judges"]) == list(JUDGES)
    shas = set()
    for name, judge in report["judges"].items():
        identity = judge["identity"]
        assert identity["model"] == name
        assert SHA256.fullmatch(identity["sha256"]), identity
        shas.add(identity["sha256"])
        assert judge["load_seconds"] > 0
        assert judge["wall_seconds"] > 0
        assert judge["peak_rss_mb"] > 50
        assert _reasons(judge) is False  # bench's default
        assert judge["judge_calls"] == count_calls(_labelled(), METRICS, _reasons(judge))
        assert judge["cache_hits"] == 0
        assert set(judge["metrics"]) == set(METRICS)
        for metric, m in judge["metrics"].items():
            assert m["n_items"] == LIMIT, (name, metric)
            assert m["n_common"] == LIMIT, (name, metric)
            assert m["n_failed"] == 0, (name, metric, m["failed_ids"])
            assert m["failed_ids"] == []
            assert m["scores"]["n_items"] == LIMIT
            assert m["seconds_per_item"] > 0
            assert m["tokens_per_s"] > 0
            mae = m["scores"]["mae"]["value"]
            assert 0.0 <= mae <= 1.0
        # per-verdict agreement for the metrics with per-piece labels
        assert set(judge["metrics"]["position"]["verdicts"]) == {"relevant"}
        assert set(judge["metrics"]["relevance"]["verdicts"]) == {"levels", "used", "relevant"}
        assert judge["metrics"]["recall"]["verdicts"] == {}
        levels = judge["metrics"]["relevance"]["verdicts"]["levels"]
        assert levels["confusion"]["labels"] == ["none", "low", "medium", "high"]
        # 3 items of 2, 3 and 2 pieces
        assert levels["n_verdicts"] == 7
        assert sum(map(sum, levels["confusion"]["matrix"])) == 7
    assert len(shas) == len(JUDGES)  # two different models


def test_bench_items_has_a_row_per_judge_metric_and_item(first_run: Any) -> None:
    _, out = first_run
    rows = _jsonl(out / "bench_items.jsonl")
    assert len(rows) == len(JUDGES) * len(METRICS) * LIMIT
    assert {(r["judge"], r["metric"], r["index"]) for r in rows} == {
        (j, m, i) for j in JUDGES for m in METRICS for i in range(LIMIT)
    }
    errors = [r["abs_error"] for r in rows]
    assert all(e is not None for e in errors)
    assert errors == sorted(errors, reverse=True)
    for row in rows:
        assert row["error"] is None
        assert row["abs_error"] == pytest.approx(abs(row["human_score"] - row["judge_score"]))


def test_each_judge_has_its_own_eval_run(first_run: Any, first_report: dict[str, Any]) -> None:
    _, out = first_run
    for n, name in enumerate(JUDGES):
        run_dir = out / "judges" / f"{n}-{name}"
        results = run_dir / "results.jsonl"
        assert Path(first_report["judges"][name]["results"]) == results
        rows = _jsonl(results)
        assert len(rows) == LIMIT * len(METRICS)
        assert {(r["index"], r["metric"]) for r in rows} == {
            (i, m) for i in range(LIMIT) for m in METRICS
        }
        assert all(r["error"] is None and r["judge"]["model"] == name for r in rows)
        summary = json.loads((run_dir / "summary.json").read_text("utf-8"))
        assert summary["run"]["n_items"] == LIMIT
        assert summary["run"]["judge"]["model"] == name


def test_rerun_makes_no_judge_call_and_agrees(second_run: Any, count_calls: Any) -> None:
    proc, out, before_report, before_files = second_run
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "bench.json").read_text("utf-8"))
    for name in JUDGES:
        judge = report["judges"][name]
        assert judge["judge_calls"] == 0, name
        assert judge["cache_hits"] == count_calls(_labelled(), METRICS, _reasons(judge)), name
        assert judge["identity"] == before_report["judges"][name]["identity"]
    # the same agreement numbers (cached rows keep the original call's stats, so all of it)
    assert _agreement(report) == _agreement(before_report)
    after_files = {name: (out / name).read_bytes() for name in before_files}
    assert after_files == before_files
    assert len(before_files) == 1 + len(JUDGES)


def test_bad_model_is_one_error_line_and_exit_4(workdir: Path, isolated_env: Path) -> None:
    out = workdir / "bad"
    proc = _bench(
        "bench", DATA, "-m", "/nonexistent.gguf", "--limit", "1", "-t", "1", "-o", str(out),
        "--cache", str(workdir / "bad.sqlite3"), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    lines = proc.stderr.splitlines()
    errors = [line for line in lines if line.startswith(CLI_ERROR)]
    assert len(errors) == 1, proc.stderr
    assert "/nonexistent.gguf" in errors[0]
    assert "Traceback" not in proc.stderr
    # besides the announcement, only the CLI's own lines (error, optional hint)
    other = [line for line in lines if not line.startswith("judging with ")]
    assert all(line.startswith("localjudge: ") for line in other), proc.stderr
    assert proc.stdout == ""
    assert not (out / "bench.json").exists()
