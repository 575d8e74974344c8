"""One label check (localjudge.run.labels) for bench, eval --labels and calibrate: a file one of
them accepts the others accept, read the same whichever spelling it uses, and a refused spelling
is refused by all three with the same message, before anything is judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pipeline_rules import rule_records, rule_reply

from localjudge.errors import DataError, LocalJudgeError, UsageError
from localjudge.judge.protocol import Judge
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.bench.runner import bench_file
from localjudge.run.calibrate.calibration import check_labels
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.settings import JudgeSettings
from localjudge.stats import agreement
from localjudge.testing import ScriptedJudge

#: one item's labels, in the names and in the numbers
NAMED = {"recall": 1, "relevant": [True, False], "levels": ["high", "none"], "used": [True, False]}
NUMBERED = {"recall": 1, "relevant": [1, 0], "levels": [3, 0], "used": [1, 0]}


def labelled(labels: dict[str, Any], n: int = 24) -> list[dict[str, Any]]:
    """``n`` items of the rule judge, every one with ``labels`` (24 questions: enough decisions
    and groups for calibrate to fit)."""
    return [{**r, "labels": labels} for r in rule_records(n)]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def open_judge(settings: JudgeSettings) -> Judge:
    return ScriptedJudge(rule_reply, model=settings.name)


@pytest.fixture
def fast_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agreement, "RESAMPLES", 50)


def bench(path: Path, out: Path) -> dict[str, Any]:
    outcome = bench_file(path, out, judges=[JudgeSettings(model="rule")], open_judge=open_judge)
    report = dict(outcome.report)
    return {k: report[k] for k in ("n_labelled", "metrics")} | {
        "judges": {
            name: {m: {**v, "seconds_per_item": None, "tokens_per_s": None}
                   for m, v in judge["metrics"].items()}
            for name, judge in report["judges"].items()
        }
    }  # fmt: skip


def eval_labels(data: Path, labels: Path, out: Path) -> dict[str, Any]:
    metrics = [ContextRecall(), ContextPosition(), ContextRelevance()]
    outcome = eval_file(data, out, judge=ScriptedJudge(rule_reply), metrics=metrics, labels=labels)
    return {name: m["ppi"] for name, m in outcome.summary["metrics"].items()}


@pytest.mark.usefixtures("fast_bootstrap")
def test_numbers_and_names_are_one_file_for_bench_eval_and_calibrate(tmp_path: Path) -> None:
    data = write(tmp_path / "data.jsonl", rule_records(3))
    named = write(tmp_path / "named.jsonl", labelled(NAMED))
    numbered = write(tmp_path / "numbered.jsonl", labelled(NUMBERED))
    # calibrate accepts both and can fit every kind the labels give
    for path in (named, numbered):
        records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        check = check_labels(records, path=str(path))
        assert "relevance.grade" not in check.unfit
        assert "relevance.used" not in check.unfit
        assert "position.relevant_answer" not in check.unfit
    # bench and eval --labels read both alike
    assert bench(numbered, tmp_path / "b2") == bench(named, tmp_path / "b1")
    got = eval_labels(data, numbered, tmp_path / "e2")
    assert got == eval_labels(data, named, tmp_path / "e1")
    assert all(got[m] is not None for m in ("recall", "position", "relevance"))


REFUSED = [
    ({"relevant": ["yes", "no"]}, 'labels.relevant[0] is "yes"; expected true, false, 1 or 0'),
    ({"used": [2, 0]}, "labels.used[0] is 2; expected true, false, 1 or 0"),
    ({"levels": ["hgh", "none"]}, 'labels.levels[0] is "hgh"; expected high, medium, low, none'),
    ({"levels": [3, 4]}, "labels.levels[1] is 4; expected high, medium, low, none or 3, 2, 1, 0"),
    ({"levels": [True, False]}, "labels.levels[0] is true; expected high, medium, low, none"),
    ({"relevant": [True]}, "labels.relevant has 1 entries for 2 retrieved_contexts"),
    ({"recall": 2}, "labels.recall must be a number in [0, 1], got 2"),
    ({"recall": True}, "labels.recall must be a number in [0, 1], got true"),
]


def refusal(call: Any, error: type[LocalJudgeError]) -> str:
    """What ``call`` refused, past the file's name."""
    with pytest.raises(error) as caught:
        call()
    assert "accepted labels:" in caught.value.hint
    return str(caught.value).split(": ", 1)[1]


@pytest.mark.parametrize(("labels", "problem"), REFUSED)
def test_a_refused_spelling_is_refused_alike_by_all_three(
    tmp_path: Path, labels: dict[str, Any], problem: str
) -> None:
    records = labelled(NAMED, 3)
    for n in (1, 2):
        records[n] = {**records[n], "labels": {**NAMED, **labels}}
    path = write(tmp_path / "labels.jsonl", records)
    data = write(tmp_path / "data.jsonl", rule_records(1))
    judge = ScriptedJudge(rule_reply)
    by_bench = refusal(lambda: bench(path, tmp_path / "b"), DataError)
    by_eval = refusal(
        lambda: eval_file(
            data, tmp_path / "e", judge=judge, metrics=[ContextRecall()], labels=path
        ),
        DataError,
    )
    by_calibrate = refusal(
        lambda: check_labels(records, lines=[1, 2, 3], path=str(path)), UsageError
    )
    assert by_bench == by_eval == by_calibrate
    assert by_bench.startswith('item "r1" (line 2): ' + problem)
    assert " (and 1 more) (accepted labels: " in by_bench  # the second one, on line 3
    assert judge.calls == []
