"""Soft verdicts through the pipeline (scripted judges): per-verdict probabilities, soft_score
beside score, soft_mean, soft agreement in bench, the cache keeping them, and a batch-variant
judge getting partly cached batches whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pipeline_rules import rule_reply

from localjudge.data.item import make_item
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache
from localjudge.judge.protocol import Generation, SoftDecision, generate_many
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.evaluate.evaluation import evaluate, score
from localjudge.run.evaluate.file_run import eval_file
from localjudge.testing import ScriptedJudge

RECORD = {
    "id": "x",
    "user_input": "question?",
    "retrieved_contexts": ["yes fact.", "noise", "yes other."],
    "reference": "yes fact. unknown.",
    "response": "yes fact.",
}


@pytest.mark.parametrize("metric", [ContextRecall(), ContextPosition(), ContextRelevance()])
def test_a_certain_judge_has_soft_scores_equal_to_its_scores(metric):
    result = score(metric, ScriptedJudge(rule_reply, certain=True), **RECORD)
    assert result.soft_value == pytest.approx(result.value)
    for verdict in result.verdicts:
        for probs in verdict["probs"].values():
            assert sum(probs.values()) == pytest.approx(1.0)
            assert max(probs.values()) == 1.0


def test_a_judge_without_soft_verdicts_has_none():
    result = score(ContextPosition(), ScriptedJudge(rule_reply), **RECORD)
    assert result.soft_value is None
    assert all("probs" not in v for v in result.verdicts)


class Hesitant(ScriptedJudge):
    """The rule judge, but 70% sure of every relevant piece and 80% of every irrelevant one."""

    def generate(self, prompt: Any, schema: Any) -> Any:
        out = super().generate(prompt, schema)
        if schema.__name__ != "RelevantDecision":
            return out  # a reason call: no decision to read
        relevant = out.value.relevant == "yes"
        p_yes = 0.7 if relevant else 0.2
        chosen = '"yes"' if relevant else '"no"'
        decision = SoftDecision("relevant", {'"yes"': p_yes, '"no"': 1 - p_yes}, chosen)
        return Generation(out.value, out.raw, out.stats, decisions=(decision,))


def test_position_soft_score_is_the_expected_score():
    result = score(ContextPosition(scale=2.0), Hesitant(rule_reply), **RECORD)
    # P(relevant) = 0.7, 0.2, 0.7 at ranks 1..3; H_3 = 11/6
    expected = 2.0 * (0.7 + 0.2 / 2 + 0.7 / 3) / (1 + 1 / 2 + 1 / 3)
    assert result.soft_value == pytest.approx(expected)
    assert result.value == pytest.approx(2.0 * (1 + 1 / 3) / (11 / 6))
    assert result.verdicts[1]["probs"] == {"relevant": {"true": 0.2, "false": 0.8}}


def test_soft_scores_reach_the_files_and_the_cache(tmp_path: Path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    cache = Cache(tmp_path / "c.sqlite3")
    judge = CachingJudge(Hesitant(rule_reply), cache)
    metric = ContextPosition()
    first = eval_file(data, tmp_path / "a", judge=judge, metrics=[metric])
    row = json.loads((tmp_path / "a" / "results.jsonl").read_text("utf-8"))
    assert row["soft_score"] == pytest.approx((0.7 + 0.1 + 0.7 / 3) / (11 / 6))
    assert first.summary["metrics"]["position"]["soft_mean"] == pytest.approx(row["soft_score"])
    # served from the cache: the same probabilities, byte for byte
    again = CachingJudge(ScriptedJudge([]), cache)
    eval_file(data, tmp_path / "b", judge=again, metrics=[ContextPosition()])
    assert (tmp_path / "b" / "results.jsonl").read_bytes().replace(b"scripted", b"x") == (
        tmp_path / "a" / "results.jsonl"
    ).read_bytes().replace(b"scripted", b"x")
    # every call came from the cache: the item's baseline call, a decision per piece (and its
    # reason, if asked)
    pieces = len(RECORD["retrieved_contexts"])
    assert again.hits == judge.calls == 1 + (1 + metric.reasons) * pieces


class BatchVariant(ScriptedJudge):
    """A judge whose outputs may depend on their batch: it records every batch it is given."""

    batch_invariant = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[list[str]] = []

    def generate_many(self, requests: Any, *, on_outcome: Any = None) -> Any:
        self.batches.append([r.messages[-1]["content"][:30] for r in requests])
        return super().generate_many(requests, on_outcome=on_outcome)


@pytest.mark.parametrize("reasons", [False, True])  # off is the default
def test_a_batch_variant_judge_gets_a_partly_cached_batch_whole(tmp_path: Path, reasons: bool):
    records = [{**RECORD, "id": f"r{i}", "user_input": f"question {i}?"} for i in range(3)]
    cache = Cache(tmp_path / "c.sqlite3")
    metric = ContextPosition(reasons=reasons)
    pieces = len(RECORD["retrieved_contexts"])
    # per item and pass: the baseline call and a decision per piece, then (if asked) a reason
    # per decision (none for the baseline call)
    per_pass = [1 + pieces, pieces][: 1 + metric.reasons]
    per_item = sum(per_pass)
    # a first run that got through one item only
    list(evaluate(records[:1], [metric], CachingJudge(ScriptedJudge(rule_reply), cache)))
    inner = BatchVariant(rule_reply)
    judge = CachingJudge(inner, cache)
    results = list(evaluate(records, [metric], judge))
    # a batch per pass, each whole, the cached item's calls included
    assert [len(b) for b in inner.batches] == [3 * n for n in per_pass]
    # ... but only the new calls count and are stored
    assert (judge.hits, judge.calls) == (per_item, 2 * per_item)
    assert len(cache) == 3 * per_item
    assert [r.error for r in results] == [None] * 3
    # an invariant judge only gets what is missing
    plain = ScriptedJudge(rule_reply)
    seen: list[int] = []
    more = [{**RECORD, "id": "r3", "user_input": "question 3?"}, *records]
    original = plain.generate_many

    def spy(requests: Any, *, on_outcome: Any = None) -> Any:
        seen.append(len(requests))
        return original(requests, on_outcome=on_outcome)

    plain.generate_many = spy  # type: ignore[method-assign]
    list(evaluate(more, [metric], CachingJudge(plain, cache)))
    assert seen == per_pass


def test_outcomes_reach_on_outcome_as_each_finishes_and_in_order():
    judge = CachingJudge(ScriptedJudge(rule_reply), Cache(":memory:"))
    requests = [ask.request for i in range(3) for ask in ContextPosition().build(_item(i))]
    # per item: its baseline call and a call per piece
    assert len(requests) == 3 * (1 + len(RECORD["retrieved_contexts"]))
    seen: list[int] = []
    out = generate_many(judge, requests, on_outcome=lambda i, o: seen.append(i))
    assert seen == list(range(len(requests)))
    assert all(isinstance(o, Generation) for o in out)


def _item(i: int) -> Any:
    return make_item({**RECORD, "user_input": f"q{i}?"}, index=i)
