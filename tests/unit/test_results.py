"""The results format: rows, compact dumping, summaries, the seeded bootstrap, the table, and
each file kind's writer and reader."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import replace

import pytest

from localjudge.decisions import CLOSE_CALL_MARGINS
from localjudge.errors import ContextOverflowError, DataError, InvalidItemError
from localjudge.judge.protocol import GenerationStats, JudgeIdentity
from localjudge.metrics import MetricResult
from localjudge.run.results import (
    BENCH,
    BENCH_ITEMS,
    FORMAT_VERSION,
    RESULTS,
    SUMMARY,
    ItemResult,
    MetricSummary,
    ResultsWriter,
    dumps_row,
    read_bench,
    read_bench_items,
    read_results,
    result_row,
    write_bench,
)
from localjudge.run.rundir import detect_run
from localjudge.run.summary import (
    CLOSE_CALLS_DOC,
    CLOSE_CALLS_WHY,
    read_summary,
    summarize,
    summary_table,
    write_summary,
)
from localjudge.stats.bootstrap import RESAMPLES as BOOTSTRAP_RESAMPLES
from localjudge.stats.bootstrap import interval
from localjudge.stats.bootstrap import mean_interval as bootstrap_ci

JUDGE = JudgeIdentity(model="tiny.gguf", sha256="ab" * 32, backend="llama.cpp", settings={"x": 1})
STATS = GenerationStats(
    prompt_tokens=120, evaluated_prompt_tokens=30, completion_tokens=45, seconds=0.123456789
)


def scored(value, metric="recall", index=0, stats=STATS, details=None, calls=2):
    """A recall result of one verdict with its reason: a decision call and a reason call."""
    result = MetricResult(
        metric=metric,
        value=value,
        reason="1 of 2 statements.",
        verdicts=[{"statement": "巴黎", "reason": "r", "attributed": 1}],
        stats=stats,
        details=details or {},
        calls=calls,
    )
    return ItemResult(index=index, id=f"i{index}", metric=metric, result=result, error=None)


def failed(error, metric="recall", index=1):
    return ItemResult(index=index, id=f"i{index}", metric=metric, result=None, error=error)


def test_row_for_a_scored_result():
    row = result_row(scored(0.5, details={"missing": ["x"]}), JUDGE, {"scale": 2.0})
    assert row == {
        "format": FORMAT_VERSION,
        "index": 0,
        "id": "i0",
        "metric": "recall",
        "score": 0.5,
        "soft_score": None,  # a result without soft verdicts
        "reason": "1 of 2 statements.",
        "verdicts": [{"statement": "巴黎", "reason": "r", "attributed": 1}],
        "details": {"missing": ["x"]},
        "error": None,
        "judge": {"model": "tiny.gguf", "sha256": "ab" * 32},
        "settings": {"scale": 2.0},
        "seconds": 0.1235,
        "prompt_tokens": 120,
        "evaluated_prompt_tokens": 30,
        "completion_tokens": 45,
    }
    assert list(row)[:6] == ["format", "index", "id", "metric", "score", "soft_score"]
    soft = ItemResult(0, "i0", "recall", replace(scored(0.5).result, soft_value=0.625), None)
    assert result_row(soft, JUDGE, {})["soft_score"] == 0.625


def test_row_without_a_judge_call_has_no_stats_and_empty_details_are_null():
    row = result_row(scored(0.0, metric="position", stats=None), JUDGE, {})
    assert row["score"] == 0.0
    assert row["details"] is None
    for key in ("seconds", "prompt_tokens", "evaluated_prompt_tokens", "completion_tokens"):
        assert row[key] is None


def test_row_for_an_error():
    err = InvalidItemError("item i1: field 'reference' is empty", field="reference", item_id="i1")
    row = result_row(failed(err), JUDGE, {})
    assert row["error"] == {
        "kind": "invalid_item",
        "field": "reference",
        "message": "item i1: field 'reference' is empty",
        "hint": None,
    }
    for key in ("score", "reason", "verdicts", "details", "seconds", "prompt_tokens"):
        assert row[key] is None
    overflow = ContextOverflowError(
        "needs 9000", needed=9000, available=8192, field="retrieved_contexts", hint="use -c 9000"
    )
    row = result_row(failed(overflow), JUDGE, {})
    assert row["error"] == {
        "kind": "context_overflow",
        "field": "retrieved_contexts",
        "message": "needs 9000",
        "hint": "use -c 9000",
    }


def test_dumps_row_is_compact_utf8_and_keeps_key_order():
    row = result_row(scored(0.5), JUDGE, {})
    line = dumps_row(row)
    assert "\n" not in line
    assert ": " not in line
    assert ", " not in line.replace("1 of 2", "")
    assert "巴黎" in line
    assert line.startswith(
        '{"format":2,"index":0,"id":"i0","metric":"recall","score":0.5,"soft_score":null,'
    )
    assert json.loads(line) == row


def test_nan_recall_score_is_written_as_null():
    row = result_row(scored(math.nan), JUDGE, {})
    assert row["score"] is None
    assert '"score":null' in dumps_row(row)


def test_dumps_row_refuses_nan_and_infinity():
    with pytest.raises(ValueError):
        dumps_row({"score": math.nan})
    with pytest.raises(ValueError):
        dumps_row({"score": math.inf})


def test_metric_summary_counts():
    tally = MetricSummary()
    rows = [
        result_row(scored(1.0), JUDGE, {}),
        result_row(scored(0.25, index=2), JUDGE, {}),
        result_row(scored(math.nan, index=3), JUDGE, {}),
        result_row(failed(InvalidItemError("bad", field="reference")), JUDGE, {}),
        result_row(scored(0.5, index=4), JUDGE, {}),
    ]
    for row in rows:
        tally.add(row)
    stats = tally.as_dict()
    assert stats["n_scored"] == 3
    assert stats["n_failed"] == 1
    assert stats["n_undefined"] == 1
    assert stats["mean"] == pytest.approx(statistics.fmean([1.0, 0.25, 0.5]), abs=1e-12)
    assert stats["median"] == 0.5
    assert stats["std"] == pytest.approx(statistics.stdev([1.0, 0.25, 0.5]), abs=1e-12)
    assert stats["ci95"] == bootstrap_ci([1.0, 0.25, 0.5])


def test_empty_and_single_summaries():
    assert MetricSummary().as_dict() == {
        "n_scored": 0,
        "n_failed": 0,
        "n_undefined": 0,
        "close_calls": 0,
        "mean": None,
        "soft_mean": None,
        "median": None,
        "std": None,
        "ci95": None,
    }
    one = MetricSummary(scores=[0.7]).as_dict()
    assert (one["mean"], one["median"], one["std"], one["ci95"]) == (0.7, 0.7, None, None)


def test_bootstrap_ci_is_seeded_and_sane():
    values = [0.1, 0.9, 0.5, 0.3, 1.0, 0.0, 0.6]
    first = bootstrap_ci(values)
    assert first == bootstrap_ci(list(values))
    low, high = first
    assert min(values) <= low < statistics.fmean(values) < high <= max(values)
    narrower = bootstrap_ci(values, confidence=0.5)
    assert low <= narrower[0] <= narrower[1] <= high
    assert BOOTSTRAP_RESAMPLES >= 1000


@pytest.mark.parametrize("values", [[], [0.4]])
def test_bootstrap_ci_needs_two_values(values):
    assert bootstrap_ci(values) is None


def test_bootstrap_ci_of_constant_values():
    assert bootstrap_ci([0.5, 0.5, 0.5]) == [0.5, 0.5]


def test_summarize_keeps_metric_order_and_counts_failures():
    rows = [
        result_row(scored(1.0, metric="position"), JUDGE, {}),
        result_row(failed(InvalidItemError("x"), metric="recall"), JUDGE, {}),
        result_row(scored(0.5, metric="position", index=1), JUDGE, {}),
    ]
    out = summarize(rows, ["recall", "position"])
    assert list(out) == ["recall", "position"]
    assert out["recall"]["n_failed"] == 1
    assert out["recall"]["mean"] is None
    assert out["position"]["n_scored"] == 2
    assert out["position"]["mean"] == 0.75


def test_summary_table():
    summary = {
        "metrics": {
            "recall": {
                "n_scored": 3,
                "n_failed": 1,
                "mean": 0.58333,
                "median": 0.5,
                "ci95": [0.25, 1.0],
            },
            "relevance": {
                "n_scored": 0,
                "n_failed": 2,
                "mean": None,
                "median": None,
                "ci95": None,
            },
        }
    }
    lines = summary_table(summary).splitlines()
    assert lines[0].split() == ["metric", "scored", "failed", "mean", "median", "ci95"]
    assert set(lines[1]) == {"-"}
    assert len(lines[1]) == len(lines[0])
    assert lines[2].split() == ["recall", "3", "1", "0.583", "0.500", "0.250-1.000"]
    assert lines[3].split() == ["relevance", "0", "2", "-", "-", "-"]
    assert len(lines) == 4


def test_close_calls_are_counted_per_decision_and_old_rows_count_none():
    near = round(min(CLOSE_CALL_MARGINS.values()) / 2, 4)
    verdicts = [
        {"index": 0, "relevance": "high", "close_call": {"relevance": near, "used": -near}},
        {"index": 1, "relevance": "none"},
        {"index": 2, "relevance": "low", "close_call": {"used": near}},
    ]
    result = MetricResult("relevance", 0.5, "r", verdicts)
    row = result_row(ItemResult(0, "i0", "relevance", result, None), JUDGE, {})
    old = result_row(scored(1.0, metric="relevance", index=1), JUDGE, {})
    out = summarize([row, old], ["relevance"])
    assert out["relevance"]["close_calls"] == 3
    assert summarize([old], ["relevance"])["relevance"]["close_calls"] == 0


def test_the_summary_table_says_how_many_close_calls_after_the_table():
    stats = {"n_scored": 3, "n_failed": 0, "mean": 0.5, "median": 0.5, "ci95": [0.25, 1.0]}
    summary = {
        "metrics": {
            "recall": {**stats, "close_calls": 1},
            "position": {**stats, "close_calls": 0},
            "relevance": {**stats, "close_calls": 2},
        }
    }
    lines = summary_table(summary).splitlines()
    assert lines[-1] == (
        f"close calls: recall 1, relevance 2 ({CLOSE_CALLS_WHY}; {CLOSE_CALLS_DOC})"
    )
    assert len(lines) == 6
    # none, or a summary written before they were counted: no line
    for counts in ({"close_calls": 0}, {}):
        summary = {"metrics": {"recall": {**stats, **counts}}}
        assert "close calls" not in summary_table(summary)


def test_the_mean_interval_is_the_one_bootstrap_vectorised():
    values = [0.1, 0.9, 0.5, 0.3, 1.0, 0.0, 0.6, 0.25, 0.75]
    by_hand = interval(values, statistics.fmean)
    assert bootstrap_ci(values) == pytest.approx(by_hand, abs=1e-12)
    assert bootstrap_ci(values, seed=3) == pytest.approx(interval(values, statistics.fmean, seed=3))
    assert bootstrap_ci(values, seed=3) != bootstrap_ci(values)


# ---------------------------------------------------------------- file kinds


def _row(index: int, **changes):
    return {**result_row(scored(0.5, index=index), JUDGE, {}), **changes}


def test_results_writer_renames_only_a_complete_run(tmp_path):
    path = tmp_path / "out" / "results.jsonl"
    settings = {"recall": {"truncate": False}}
    first = scored(0.5)
    with ResultsWriter(path, JUDGE, settings) as writer:
        writer.write(first)
        assert not path.exists()
        assert (tmp_path / "out" / "results.jsonl.partial").is_file()
    assert path.is_file()
    assert not (tmp_path / "out" / "results.jsonl.partial").exists()
    assert [r["score"] for r in read_results(path)] == [0.5]
    # the writer counts the result's judge calls, not its rows
    assert first.result.calls > 1
    assert (writer.n_items, writer.calls) == (1, first.result.calls)

    def interrupted() -> None:
        with ResultsWriter(path.with_name("b.jsonl"), JUDGE, settings) as w:
            w.write(scored(0.25))
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert not (tmp_path / "out" / "b.jsonl").exists()
    assert (tmp_path / "out" / "b.jsonl.partial").read_text("utf-8").count("\n") == 1


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"format": 3, "index": 0}\n', "unknown format version 3"),
        ('{"index": 0}\n', "unknown format version None"),
        ("[1, 2]\n", "expected a JSON object"),
        ("{not json\n", "cannot read"),
    ],
)
def test_read_results_checks_every_row(tmp_path, text, words):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(_row(0)) + "\n" + text, "utf-8")
    with pytest.raises(DataError, match=words) as info:
        read_results(path)
    assert "line 2" in info.value.message or "cannot read" in info.value.message


def test_summary_and_bench_files_round_trip_with_their_version(tmp_path):
    summary = {"format": 1, "metrics": {}, "run": {"data": "d"}}
    path = write_summary(tmp_path, summary)
    assert path == tmp_path / SUMMARY.name
    assert read_summary(path) == summary
    report = {"format": 1, "judges": {}}
    bench = write_bench(tmp_path, report, [{"judge": "j", "metric": "recall"}])
    assert read_bench(bench) == report
    assert read_bench_items(tmp_path / BENCH_ITEMS.name) == [{"judge": "j", "metric": "recall"}]
    path.write_text(json.dumps({**summary, "format": 0}), "utf-8")
    with pytest.raises(DataError, match="unknown format version 0"):
        read_summary(path)


def test_detect_run_tells_eval_from_bench_and_explains_an_unfinished_one(tmp_path):
    with pytest.raises(DataError, match="no run directory"):
        detect_run(tmp_path / "none")
    (tmp_path / RESULTS.name).write_text("", "utf-8")
    (tmp_path / SUMMARY.name).write_text("{}", "utf-8")
    assert detect_run(tmp_path) == "eval"
    (tmp_path / BENCH.name).write_text("{}", "utf-8")
    (tmp_path / BENCH_ITEMS.name).write_text("", "utf-8")
    assert detect_run(tmp_path) == "bench"
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "results.jsonl.partial").write_text("", "utf-8")
    with pytest.raises(DataError) as info:
        detect_run(partial)
    assert "did not complete" in info.value.hint


def test_summary_table_shows_the_corrected_means_in_a_second_table():
    est = {"estimate": 0.61, "ci95": [0.5, 0.7], "data_ci95": [0.55, 0.66], "n_labelled": 12,
           "judge_bias": -0.04}  # fmt: skip
    recall = {"n_scored": 3, "n_failed": 0, "mean": 0.5, "median": 0.5, "ci95": [0.25, 1.0]}
    summary = {"metrics": {"recall": {**recall, "ppi": est, "ppi_soft": None}}}
    lines = summary_table(summary).splitlines()
    assert lines[4] == "human-scale mean, corrected by the labelled items (prediction-powered):"
    assert lines[5].split()[:3] == ["metric", "kind", "estimate"]
    assert lines[7].split() == ["recall", "hard", "0.610", "0.500-0.700", "0.550-0.660", "12",
                                "-0.040"]  # fmt: skip
    assert len(lines) == 8  # no soft estimate: no line for it
