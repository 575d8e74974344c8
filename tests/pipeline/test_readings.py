"""The question reading through the pipeline (scripted judges): the baseline call asked once per
item, each passage's reading against it kept beside the call's own soft value, a fitted
combination deciding where the cut-offs hold one (recorded with the run), content not place,
and a cached rerun giving the same rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_rules import rule_reply

from localjudge.decisions import Combination, Cutoffs
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache
from localjudge.metrics import ContextPosition, ContextRelevance
from localjudge.metrics.instructions import NO_PASSAGE
from localjudge.run.evaluate.evaluation import evaluate
from localjudge.run.evaluate.file_run import eval_file
from localjudge.testing import ScriptedJudge, prompt_data

RECORD = {
    "id": "x",
    "user_input": "question?",
    "retrieved_contexts": ["yes fact.", "noise", "odd yes"],
    "response": "yes fact.",
}
#: how well each passage predicts the question (mean log-probability per token)
LIKELIHOOD = {NO_PASSAGE: -3.0, "yes fact.": -1.0, "noise": -2.5, "odd yes": -4.0}


def reading(messages: list[dict[str, str]], span: str) -> float:
    assert span == "question?"  # the QUESTION's text is what is read
    return LIKELIHOOD[prompt_data(messages)["PASSAGE"]]


def _judge() -> ScriptedJudge:
    return ScriptedJudge(rule_reply, certain=True, reading=reading)


def test_each_piece_keeps_its_reading_against_the_items_baseline() -> None:
    judge = _judge()
    [pos, rel] = [
        r.result for r in evaluate([RECORD], [ContextPosition(), ContextRelevance()], judge)
    ]
    assert pos is not None
    assert rel is not None
    expected = [2.0, 0.5, -1.0]  # LIKELIHOOD[passage] - LIKELIHOOD[no passage]
    assert [v["readings"]["relevant"]["question"] for v in pos.verdicts] == expected
    assert [v["readings"]["relevance"]["question"] for v in rel.verdicts] == expected
    # the call's own soft value beside it: a certain judge's log-odds, clipped
    assert [v["readings"]["relevant"]["judged"] for v in pos.verdicts] == [10.0, -10.0, 10.0]
    # one baseline call for the item, though both metrics ask it
    baselines = [c for c in judge.calls if prompt_data(c.messages).get("PASSAGE") == NO_PASSAGE]
    assert len(baselines) == 1
    assert baselines[0].read_chars is not None


COMBINED = Cutoffs(
    {"relevance.grade": (0.5, 1.5, 2.5)},
    combinations={
        "position.relevant": Combination({"question": 4.0}, (-2.0,)),
        "relevance.grade": Combination({"question": 3.0}, (-1.0, 1.0, 4.0)),
    },
)


def test_a_combination_decides_where_the_cutoffs_hold_one() -> None:
    question_only = {k: v for k, v in RECORD.items() if k != "response"}
    [res] = list(evaluate([question_only], [ContextPosition()], _judge(), cutoffs=COMBINED))
    assert res.result is not None
    # the call says yes, no, yes; the reading (2.0, 0.5, -1.0) through sigmoid(4q - 2) says
    # yes, yes (0.5 exactly: >= the baseline cut), no
    assert [v["relevant"] for v in res.result.verdicts] == [True, True, False]
    p = [v["probs"]["relevant"]["true"] for v in res.result.verdicts]
    assert p[0] > 0.99
    assert p[1] == pytest.approx(0.5)
    assert p[2] < 0.01
    # an item with a response is asked the EXPECTED ANSWER phrasing, another kind: no
    # combination for it here, so its calls decide
    [res] = list(evaluate([RECORD], [ContextPosition()], _judge(), cutoffs=COMBINED))
    assert res.result is not None
    assert [v["relevant"] for v in res.result.verdicts] == [True, False, True]


def test_the_run_records_the_combination_and_reversal_moves_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    reversed_record = {
        **RECORD,
        "id": "r",
        "retrieved_contexts": RECORD["retrieved_contexts"][::-1],
    }
    data.write_text("".join(json.dumps(r) + "\n" for r in (RECORD, reversed_record)), "utf-8")
    out = tmp_path / "out"
    eval_file(data, out, judge=_judge(), metrics=[ContextRelevance()], cutoffs=COMBINED)
    settings = (out / "summary.json").read_text("utf-8")
    assert '"combinations"' in settings
    assert '"relevance.grade"' in settings
    lines = (out / "results.jsonl").read_text("utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    forward, backward = (r["verdicts"] for r in rows)
    assert [v["relevance"] for v in forward] == [v["relevance"] for v in backward[::-1]]
    assert [v["probs"] for v in forward] == [v["probs"] for v in backward[::-1]]
    assert [v["readings"] for v in forward] == [v["readings"] for v in backward[::-1]]


def test_a_cached_rerun_gives_the_same_readings(tmp_path: Path) -> None:
    def run(name: str) -> str:
        judge = CachingJudge(_judge(), Cache(tmp_path / "cache.sqlite3"))
        data = tmp_path / "data.jsonl"
        data.write_text(json.dumps(RECORD) + "\n", "utf-8")
        eval_file(data, tmp_path / name, judge=judge, metrics=[ContextPosition()], cutoffs=COMBINED)
        return (tmp_path / name / "results.jsonl").read_text("utf-8")

    first = run("one")
    assert '"question"' in first
    assert run("two") == first
