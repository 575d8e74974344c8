"""evaluate(): streaming order, per-item failures as data, fatal errors, metric resolution."""

from __future__ import annotations

import re

import pytest
from pipeline_rules import expected_position, expected_recall, rule_reply
from pydantic import BaseModel

from localjudge import ItemResult, evaluate
from localjudge.data.items import make_item
from localjudge.data.records import Record
from localjudge.errors import (
    ConstraintError,
    ContextOverflowError,
    InvalidItemError,
)
from localjudge.judge.schemas import worst_case_bytes
from localjudge.metrics import ContextPosition, ContextRecall
from localjudge.metrics.recall import recall_schema
from localjudge.testing import ScriptedJudge, prompt_data


def record(i, **extra):
    rec = {
        "id": f"r{i}",
        "user_input": f"question number {i}?",
        "retrieved_contexts": [f"yes fact {i}.", f"noise {i}", f"yes other {i}."],
        "reference": f"yes fact {i}. unknown {i}.",
    }
    rec.update(extra)
    return rec


RECORDS = [record(i) for i in range(5)]
RECORDS[1]["retrieved_contexts"] = ["noise only", "yes fact 1. unknown 1."]
RECORDS[3]["retrieved_contexts"] = ["nothing here"]


def question_of(call):
    return prompt_data(call.messages)["QUESTION"]


# ---------------------------------------------------------------- order and streaming


def test_results_stream_in_item_then_metric_order_across_chunks():
    judge = ScriptedJudge(rule_reply)
    metrics = [ContextRecall(), ContextPosition()]
    results = list(evaluate(RECORDS, metrics, judge, chunk_size=2))
    assert [(r.index, r.id, r.metric) for r in results] == [
        (i, f"r{i}", m) for i in range(5) for m in ("recall", "position")
    ]
    assert all(isinstance(r, ItemResult) for r in results)
    assert all(r.error is None for r in results)
    for r in results:
        rec = RECORDS[r.index]
        want = expected_recall(rec) if r.metric == "recall" else expected_position(rec)
        assert abs(r.result.value - want) < 1e-9, (r.index, r.metric)
        assert r.result.metric == r.metric
    # spot-check the independent numbers
    assert [r.result.value for r in results if r.metric == "recall"] == [0.5, 1.0, 0.5, 0.0, 0.5]
    assert abs(results[1].result.value - (1 + 1 / 3) / (1 + 1 / 2 + 1 / 3)) < 1e-9


def test_within_a_chunk_an_items_metrics_are_asked_together_item_by_item():
    """An item's requests reach the judge next to each other (so that it evaluates their shared
    question and contexts once), the chunk's items in order, all in one batch per chunk."""
    judge = ScriptedJudge(rule_reply)
    batches: list[int] = []
    many = judge.generate_many

    def counted(requests, **kwargs):
        batches.append(len(requests))
        return many(requests, **kwargs)

    judge.generate_many = counted  # type: ignore[method-assign]
    list(evaluate(RECORDS, [ContextRecall(), ContextPosition()], judge, chunk_size=2))
    order = [
        ("recall" if c.schema.__name__.startswith("RecallVerdicts") else "position", question_of(c))
        for c in judge.calls
    ]
    q = [f"question number {i}?" for i in range(5)]
    assert order == [(m, q[i]) for i in range(5) for m in ("recall", "position")]
    assert batches == [4, 4, 2]
    assert all(c.shared_chars > 0 for c in judge.calls)


def test_evaluate_is_lazy_and_yields_chunk_by_chunk():
    pulled = []

    def source():
        for rec in RECORDS:
            pulled.append(rec["id"])
            yield rec

    judge = ScriptedJudge(rule_reply)
    stream = evaluate(source(), [ContextRecall(), ContextPosition()], judge, chunk_size=2)
    assert pulled == []
    assert judge.calls == []
    first = next(stream)
    assert (first.index, first.metric) == (0, "recall")
    assert pulled == ["r0", "r1"]
    assert len(judge.calls) == 4
    for _ in range(3):  # the rest of the first chunk comes without judging more
        next(stream)
    assert len(judge.calls) == 4
    assert pulled == ["r0", "r1"]
    nxt = next(stream)
    assert (nxt.index, nxt.metric) == (2, "recall")
    assert pulled == ["r0", "r1", "r2", "r3"]
    assert len(judge.calls) == 8
    assert len(list(stream)) == 5
    assert len(judge.calls) == 10


def test_on_result_is_called_once_per_item_and_metric_before_the_chunk_is_yielded():
    seen = []
    judge = ScriptedJudge(rule_reply)
    stream = evaluate(
        RECORDS,
        [ContextRecall(), ContextPosition()],
        judge,
        chunk_size=2,
        on_result=seen.append,
    )
    first = next(stream)
    assert len(seen) == 4  # the whole first chunk has finished
    assert first in seen
    results = [first, *stream]
    assert len(seen) == 10
    assert sorted((r.index, r.metric) for r in seen) == sorted((r.index, r.metric) for r in results)
    assert len({(r.index, r.metric) for r in seen}) == 10
    # on_result sees the very same objects the iterator yields
    assert {id(r) for r in seen} == {id(r) for r in results}


# ---------------------------------------------------------------- per-item failures


def test_per_item_failures_become_error_rows_and_others_still_score():
    records = [
        record(0),
        record(1, reference=None),  # recall cannot score it; position can
        record(2, user_input=""),  # no metric can
        ["not", "an", "object"],  # not a record at all
        record(4, retrieved_contexts="yes a string, not a list"),
        record(5),
    ]
    judge = ScriptedJudge(rule_reply)
    results = list(evaluate(records, [ContextRecall(), ContextPosition()], judge))
    table = {(r.index, r.metric): r for r in results}
    assert len(results) == 12

    def err(i, metric):
        r = table[(i, metric)]
        assert r.result is None
        assert isinstance(r.error, InvalidItemError)
        return r.error

    assert err(1, "recall").field == "reference"
    assert err(1, "recall").item_id == "r1"
    assert "'reference' is missing" in err(1, "recall").message
    assert table[(1, "position")].error is None
    assert abs(table[(1, "position")].result.value - expected_position(records[1])) < 1e-9
    for metric in ("recall", "position"):
        assert err(2, metric).field == "user_input"
        assert "'user_input' is empty" in err(2, metric).message
        assert err(3, metric).field is None
        assert err(3, metric).message == "item #3: a record must be a JSON object, got list"
        assert table[(3, metric)].id == "#3"
        assert err(4, metric).field == "retrieved_contexts"
        assert "got str" in err(4, metric).message
    for i in (0, 5):
        assert table[(i, "recall")].result.value == 0.5
        assert table[(i, "position")].error is None
    # only the scorable item x metric pairs reached the judge
    assert len(judge.calls) == 5


def test_context_overflow_becomes_an_error_row_with_both_numbers():
    long_item = record(1, user_input=" ".join(["word"] * 600) + "?")
    records = [record(0), long_item, record(2)]
    # words of the short items' prompt, plus the recall schema's worst case, fit; the long one
    # does not
    worst = worst_case_bytes(recall_schema(2)) + 1
    probe = ScriptedJudge(rule_reply)
    list(evaluate([record(0)], [ContextRecall()], probe))
    short_words = sum(len(m["content"].split()) for m in probe.calls[0].messages)
    n_ctx = short_words + worst + 100

    judge = ScriptedJudge(rule_reply, n_ctx=n_ctx)
    results = list(evaluate(records, [ContextRecall()], judge))
    assert [r.error is None for r in results] == [True, False, True]
    error = results[1].error
    assert isinstance(error, ContextOverflowError)
    assert error.kind == "context_overflow"
    assert error.item_id == "r1"
    long_words = sum(
        len(m["content"].split())
        for m in ContextRecall().build(make_item(long_item, index=1)).messages
    )
    assert error.needed == long_words + worst
    assert error.available == n_ctx
    assert error.message == (
        f"prompt ({long_words} tokens) plus worst-case output ({worst} tokens) needs "
        f"{long_words + worst} tokens but the context window holds {n_ctx}"
    )
    assert f"n_ctx={long_words + worst}" in error.hint
    assert len(judge.calls) == 2


def test_a_non_item_error_from_the_judge_propagates():
    judge = ScriptedJudge([{"statements": []}])  # violates one verdict per statement
    with pytest.raises(ConstraintError):
        list(evaluate([record(0), record(1)], [ContextRecall()], judge))


def test_an_unexpected_exception_from_the_judge_propagates():
    class Broken(ScriptedJudge):
        def generate(self, prompt, schema):
            raise RuntimeError("GPU on fire")

    judge = Broken([])
    with pytest.raises(RuntimeError, match="GPU on fire"):
        list(evaluate([record(0)], [ContextRecall()], judge))


# ---------------------------------------------------------------- metrics and records


def test_metrics_given_by_name_with_judge():
    judge = ScriptedJudge(rule_reply)
    recs = [record(0, response="yes fact 0.")]
    results = list(evaluate(recs, ["recall", "position", "relevance"], judge))
    assert [r.metric for r in results] == ["recall", "position", "relevance"]
    assert results[0].result.value == 0.5
    # relevance: two 'high' pieces, the first used: base 2/3, one unused high: -0.1
    assert abs(results[2].result.value - (2 / 3 - 0.1)) < 1e-9
    assert len(judge.calls) == 3


def test_metric_classes_and_instances_can_be_mixed():
    judge = ScriptedJudge(rule_reply)
    results = list(evaluate([record(0)], [ContextRecall, ContextPosition(scale=2)], judge))
    assert [r.metric for r in results] == ["recall", "position"]
    assert abs(results[1].result.value - 2 * expected_position(record(0))) < 1e-9


@pytest.mark.parametrize(
    ("metrics", "judge", "words"),
    [
        (["recall", "precision"], True, "unknown metric 'precision'"),
        (["recall"], False, "needs a judge"),
        (["recall", "recall"], True, "metrics repeated"),
    ],
)
def test_bad_metric_lists_fail_before_any_item(metrics, judge, words):
    pulled = []

    def source():
        pulled.append(1)
        yield record(0)

    with pytest.raises(ValueError, match=re.escape(words)):
        next(evaluate(source(), metrics, ScriptedJudge([]) if judge else None))
    assert pulled == []


def test_duplicate_ids_are_kept_apart_by_index():
    a = record(0, id="dup")
    b = record(1, id="dup", retrieved_contexts=["nothing"])
    judge = ScriptedJudge(rule_reply)
    results = list(evaluate([a, b], [ContextRecall()], judge))
    assert [(r.index, r.id) for r in results] == [(0, "dup"), (1, "dup")]
    assert [r.result.value for r in results] == [0.5, 0.0]


def test_records_may_be_models_items_or_read_errors_and_aliases_and_mapping_apply():
    class Row(BaseModel):
        question: str
        contexts: list[str]

    mapping = {"user_input": "question", "retrieved_contexts": "contexts"}
    records = [
        Row(question="q0?", contexts=["yes a"]),
        {"question": "q1?", "contexts": ["no", "yes"]},
        make_item({"input": "q2?", "context": ["yes", "no"]}, index=2),
        # a line the reader could not parse: a Record with its error
        Record(index=3, line=4, data=None, error="line 4: invalid JSON: Expecting value"),
        {"input": "q4?", "context": ["x"]},  # Mastra aliases still apply under a mapping
    ]
    judge = ScriptedJudge(rule_reply)
    results = list(evaluate(records, [ContextPosition()], judge, mapping=mapping))
    assert [(r.index, r.id) for r in results] == [
        (0, "#0"),
        (1, "#1"),
        (2, "#2"),
        (3, "line 4"),
        (4, "#4"),
    ]
    values = [r.result.value if r.result else None for r in results]
    assert values[:3] == [1.0, pytest.approx((1 / 2) / (3 / 2)), pytest.approx(1 / (3 / 2))]
    assert values[3] is None
    assert results[3].error.message.startswith("line 4: invalid JSON")
    assert values[4] == 0.0
    assert [question_of(c) for c in judge.calls] == ["q0?", "q1?", "q2?", "q4?"]


def test_empty_input_yields_nothing():
    judge = ScriptedJudge([])
    assert list(evaluate([], [ContextRecall()], judge)) == []
    assert judge.calls == []


@pytest.mark.parametrize("chunk_size", [1, 3, 16])
def test_results_do_not_depend_on_the_chunk_size(chunk_size):
    judge = ScriptedJudge(rule_reply)
    reference = list(evaluate(RECORDS, ["recall", "position"], judge, chunk_size=2))
    other = list(evaluate(RECORDS, ["recall", "position"], judge, chunk_size=chunk_size))
    assert [(r.index, r.metric, r.result.value, r.result.reason) for r in other] == [
        (r.index, r.metric, r.result.value, r.result.reason) for r in reference
    ]


# ---------------------------------------------------------------- opt-in truncation


def prompt_words(messages):
    """The scripted judge's token count: whitespace-separated words."""
    return sum(len(m["content"].split()) for m in messages)


def test_truncate_trims_the_longest_context_until_the_prompt_fits():
    long_piece = "yes fact 0. " + " ".join(f"w{i}" for i in range(800))
    rec = record(0, retrieved_contexts=[long_piece, "short noise"])
    worst = worst_case_bytes(recall_schema(2)) + 1
    full_words = prompt_words(ContextRecall().build(make_item(rec, index=0)).messages)
    n_ctx = full_words + worst - 300  # 300 words too many

    strict = ScriptedJudge(rule_reply, n_ctx=n_ctx)
    [failed] = list(evaluate([rec], [ContextRecall()], strict))
    assert isinstance(failed.error, ContextOverflowError)

    judge = ScriptedJudge(rule_reply, n_ctx=n_ctx)
    metric = ContextRecall()
    assert metric.settings() == {"reasons": True}  # truncation is the runner's, not the metric's
    [res] = list(evaluate([rec], [metric], judge, truncate=True))
    assert res.error is None
    assert len(judge.calls) == 1  # overflowing attempts never reach the script
    final = judge.calls[0]
    assert prompt_words(final.messages) + worst <= n_ctx
    data = prompt_data(final.messages)
    # the question and the reference are never cut; the short piece is left alone
    assert data["QUESTION"] == rec["user_input"]
    assert [data["STATEMENT 0"], data["STATEMENT 1"]] == ["yes fact 0.", "unknown 0."]
    assert data["CONTEXT 1"] == "short noise"
    kept = data["CONTEXT 0"]
    assert kept.endswith(" [...]")
    assert long_piece.startswith(kept.removesuffix(" [...]"))
    truncated = res.result.details["truncated"]
    assert truncated == {
        "policy": "trim-longest-contexts",
        "original_chars": [len(long_piece), len("short noise")],
        "kept_chars": [len(kept), len("short noise")],
        "pieces": [0],
    }
    # the verdicts are those of the trimmed item: 'yes fact 0.' survived the cut
    assert res.result.value == 0.5


def test_truncate_cannot_shorten_the_question():
    rec = record(0, user_input=" ".join(["word"] * 6000) + "?")
    judge = ScriptedJudge(rule_reply, n_ctx=5000)
    [res] = list(evaluate([rec], [ContextRecall()], judge, truncate=True))
    assert isinstance(res.error, ContextOverflowError)
    assert res.error.available == 5000
    assert judge.calls == []
