"""The result object evaluate() returns: the same statistics and rows as eval_file's files,
DataFrames, and threshold failures that name the worst items."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from pipeline_rules import rule_reply

from localjudge import ContextPosition, ContextRecall, evaluate
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.outcome import ThresholdError
from localjudge.testing import ScriptedJudge, assert_scores

RECORDS = [
    {
        "id": f"r{i}",
        "user_input": f"question {i}?",
        "retrieved_contexts": [f"yes fact {i}.", f"noise {i}"],
        "reference": f"yes fact {i}." + (f" unknown {i}." if i % 2 else ""),
    }
    for i in range(6)
] + [{"id": "broken", "user_input": "q?", "retrieved_contexts": []}]


def run():
    return evaluate(RECORDS, [ContextRecall(), ContextPosition()], ScriptedJudge(rule_reply))


def test_summary_and_rows_are_those_eval_file_writes(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    outcome = eval_file(
        data, tmp_path / "o", judge=ScriptedJudge(rule_reply),
        metrics=[ContextRecall(), ContextPosition()],
    )  # fmt: skip
    ev = run()
    assert ev.summary() == outcome.summary["metrics"]
    written = ev.to_jsonl(tmp_path / "lib" / "results.jsonl")

    def untimed(path: Path) -> list[dict]:
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert untimed(written) == untimed(tmp_path / "o" / "results.jsonl")
    assert not (tmp_path / "lib" / "results.jsonl.partial").exists()


def test_iterating_consumes_like_a_generator_but_the_methods_see_everything() -> None:
    ev = run()
    first = next(ev)
    assert (first.index, first.metric) == (0, "recall")
    recall = ev.summary()["recall"]  # runs the rest
    assert recall["n_scored"] + recall["n_failed"] == len(RECORDS)
    rest = list(ev)
    assert len(rest) == len(RECORDS) * 2 - 1  # what next() took is not given again
    assert len(ev.results()) == len(RECORDS) * 2
    assert ev.summary()["recall"]["n_failed"] == 1


@pytest.mark.parametrize("names", ["localjudge", "ragas"])
def test_to_pandas_has_one_row_per_item_and_columns_per_metric(names: str) -> None:
    frame = run().to_pandas(names=names)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["id"]) == [r["id"] for r in RECORDS]
    recall, position = ("recall", "position") if names == "localjudge" else (
        "context_recall", "context_position")  # fmt: skip
    for metric in (recall, position):
        for suffix in ("", "_soft", "_reason", "_error"):
            assert f"{metric}{suffix}" in frame.columns
    assert frame.loc[frame["id"] == "r1", recall].item() == pytest.approx(0.5)
    broken = frame[frame["id"] == "broken"]
    assert pd.isna(broken[recall].item())
    assert "retrieved_contexts" in broken[f"{recall}_error"].item()


def test_thresholds_pass_or_fail_naming_the_worst_items() -> None:
    ev = run()
    ev.assert_thresholds({"position": 0.5})
    with pytest.raises(ThresholdError) as info:
        ev.assert_thresholds({"recall": 0.9, "position": 0.5})
    text = str(info.value)
    assert "recall: mean 0.750 < 0.900 (6 scored, 1 failed)" in text
    assert "position" not in text
    assert "#1 id 'r1': 0.500" in text  # a worst item, with its reason
    assert "#6 id 'broken': error:" in text
    with pytest.raises(ValueError, match="relevance"):
        ev.assert_thresholds({"relevance": 0.5})


def test_assert_scores_reads_results_lists_and_rows(tmp_path: Path) -> None:
    results = list(run())
    assert_scores(results, position=0.5)
    with pytest.raises(AssertionError, match=re.escape("recall: mean 0.750 < 0.800")):
        assert_scores(results, recall=0.8)
    path = run().to_jsonl(tmp_path / "results.jsonl")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    with pytest.raises(AssertionError, match=re.escape("#3 id 'r3': 0.500")):
        assert_scores(rows, recall=0.8)


def test_keep_false_is_a_pure_stream() -> None:
    ev = evaluate(RECORDS, [ContextRecall()], ScriptedJudge(rule_reply), keep=False)
    assert len(list(ev)) == len(RECORDS)
    assert ev.results() == []  # nothing memorised: memory does not grow with the data
