"""evaluate(): streaming order, per-item failures as data, fatal errors, metric resolution."""

from __future__ import annotations

import re

import pytest
from pipeline_rules import EXPECTED, expected_position, expected_recall, rule_records, rule_reply
from pydantic import BaseModel

from localjudge import ItemResult, evaluate
from localjudge.data.item import make_item
from localjudge.data.raw_records import Record
from localjudge.decisions import Cutoffs
from localjudge.errors import (
    ConstraintError,
    ContextOverflowError,
    InvalidItemError,
)
from localjudge.judge.protocol import Generation, SoftDecision
from localjudge.judge.schemas import worst_case_tokens
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.metrics.instructions import GRADE, NO_PASSAGE
from localjudge.metrics.statements import split_statements
from localjudge.run.results import result_row
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


def decision_calls(rec, metrics=("recall", "position")):
    """The decision calls of a record (test_runner's records have no response): one per
    reference statement for recall, one per piece for position."""
    n = 0
    if "recall" in metrics:
        n += len(split_statements(rec["reference"]))
    if "position" in metrics:
        n += len(rec["retrieved_contexts"])
    return n


def baseline_calls(metrics=("recall", "position")):
    """The item's baseline call (no passage, no reason), asked first for position: one."""
    return int("position" in metrics)


def all_calls(records, metrics=("recall", "position"), *, reasons):
    """Decision calls plus, with ``reasons`` on, one reason call per decision, and each item's
    baseline call."""
    return sum(
        (1 + reasons) * decision_calls(r, metrics) + baseline_calls(metrics) for r in records
    )


def subject_of(call):
    """What a call is about: the STATEMENT of a recall call, the QUESTION and PASSAGE of a
    position call (NO_PASSAGE for the item's baseline call); a reason call is told by its
    schema."""
    data = prompt_data(call.messages)
    if "STATEMENT" in data:
        return ("recall", data["STATEMENT"])
    return ("position", data["QUESTION"], data["PASSAGE"])


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


def test_within_a_chunk_calls_are_grouped_by_instructions_then_by_shared_opening():
    """A chunk's calls reach the judge grouped by their instructions (recall's, then the
    passage calls'), then by what they share (an item's contexts, a passage and question; an
    item's baseline call, no passage and its question, first of its position calls), so the
    judge evaluates each shared opening once; the decisions in one batch per chunk, then the
    reasons in another, in the same order (the baseline call has none)."""
    judge = ScriptedJudge(rule_reply)
    batches: list[int] = []
    many = judge.generate_many

    def counted(requests, **kwargs):
        batches.append(len(requests))
        return many(requests, **kwargs)

    judge.generate_many = counted  # type: ignore[method-assign]
    metrics = [ContextRecall(reasons=True), ContextPosition(reasons=True)]
    list(evaluate(RECORDS, metrics, judge, chunk_size=2))
    expected = []
    for chunk in (RECORDS[0:2], RECORDS[2:4], RECORDS[4:5]):
        recall = [("recall", s) for rec in chunk for s in split_statements(rec["reference"])]
        position = [
            ("position", rec["user_input"], piece)
            for rec in chunk
            for piece in [NO_PASSAGE, *rec["retrieved_contexts"]]
        ]
        explained = [p for p in recall + position if p[-1] != NO_PASSAGE]
        expected += [(p, False) for p in recall + position] + [(p, True) for p in explained]
    seen = [(subject_of(c), c.schema.__name__ == "Reason") for c in judge.calls]
    assert seen == expected
    # per chunk: its decisions (and an item's baseline call) in one batch, then their reasons
    # in another
    assert batches == [9 + 2, 9, 8 + 2, 8, 5 + 1, 5]
    assert sum(batches) == all_calls(RECORDS, reasons=True)
    assert all(c.shared_chars > 0 for c in judge.calls)


def test_evaluate_is_lazy_and_yields_chunk_by_chunk():
    pulled = []

    def source():
        for rec in RECORDS:
            pulled.append(rec["id"])
            yield rec

    judge = ScriptedJudge(rule_reply)
    metrics = [ContextRecall(), ContextPosition()]
    reasons = metrics[0].reasons  # the default, the same for both
    assert metrics[1].reasons == reasons
    stream = evaluate(source(), metrics, judge, chunk_size=2)
    assert pulled == []
    assert judge.calls == []
    first = next(stream)
    assert (first.index, first.metric) == (0, "recall")
    assert pulled == ["r0", "r1"]
    assert len(judge.calls) == all_calls(RECORDS[:2], reasons=reasons)
    for _ in range(3):  # the rest of the first chunk comes without judging more
        next(stream)
    assert len(judge.calls) == all_calls(RECORDS[:2], reasons=reasons)
    assert pulled == ["r0", "r1"]
    nxt = next(stream)
    assert (nxt.index, nxt.metric) == (2, "recall")
    assert pulled == ["r0", "r1", "r2", "r3"]
    assert len(judge.calls) == all_calls(RECORDS[:4], reasons=reasons)
    assert len(list(stream)) == 5
    assert len(judge.calls) == all_calls(RECORDS, reasons=reasons)


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
    metrics = [ContextRecall(), ContextPosition()]
    reasons = metrics[0].reasons  # the default, the same for both
    assert metrics[1].reasons == reasons
    results = list(evaluate(records, metrics, judge))
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
    assert len(judge.calls) == (
        all_calls([records[0], records[5]], reasons=reasons)
        + all_calls([records[1]], metrics=("position",), reasons=reasons)
    )
    subjects = {subject_of(c)[:2] for c in judge.calls}
    assert subjects == {
        ("recall", "yes fact 0."),
        ("recall", "unknown 0."),
        ("recall", "yes fact 5."),
        ("recall", "unknown 5."),
        ("position", "question number 0?"),
        ("position", "question number 1?"),
        ("position", "question number 5?"),
    }


def call_tokens(call):
    """What the scripted judge's window check counts for a call: its words, plus the
    worst-case output of its schema."""
    return prompt_words(call.messages) + worst_case_tokens(call.schema)


def test_context_overflow_becomes_an_error_row_with_both_numbers():
    long_item = record(1, user_input=" ".join(["word"] * 600) + "?")
    records = [record(0), long_item, record(2)]
    # every call of the short items (decisions, and reasons if asked) fits; the long one's do not
    probe = ScriptedJudge(rule_reply)
    list(evaluate([record(0)], [ContextPosition()], probe))
    n_ctx = max(call_tokens(c) for c in probe.calls) + 100

    judge = ScriptedJudge(rule_reply, n_ctx=n_ctx)
    results = list(evaluate(records, [ContextPosition()], judge))
    assert [r.error is None for r in results] == [True, False, True]
    error = results[1].error
    assert isinstance(error, ContextOverflowError)
    assert error.kind == "context_overflow"
    assert error.item_id == "r1"
    # every call shows the long QUESTION; the error names the one that needs the most (a
    # passage's call, not the shorter baseline call), so its n_ctx lets the whole item run
    asks = ContextPosition().build(make_item(long_item, index=1))
    assert asks[0].baseline
    largest = max(asks[1:], key=lambda a: prompt_words(a.request.messages))
    long_words = prompt_words(largest.request.messages)
    worst = worst_case_tokens(largest.request.schema)
    assert long_words + worst > prompt_words(asks[0].request.messages) + worst_case_tokens(
        GRADE.schema()
    )
    assert error.needed == long_words + worst
    assert error.available == n_ctx
    assert error.message == (
        f"prompt ({long_words} tokens) plus worst-case output ({worst} tokens) needs "
        f"{long_words + worst} tokens but the context window holds {n_ctx}"
    )
    assert f"n_ctx={long_words + worst}" in error.hint
    reasons = ContextPosition().reasons  # the default
    assert len(judge.calls) == all_calls(
        [record(0), record(2)], metrics=("position",), reasons=reasons
    )
    assert {question_of(c) for c in judge.calls} == {
        record(0)["user_input"],
        record(2)["user_input"],
    }


def test_a_non_item_error_from_the_judge_propagates():
    judge = ScriptedJudge([{"supported": "maybe"}])  # not one of the decision's values
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
    # names get each metric's default settings: a reason per decision only if those ask it
    explain = {m.name: int(m().reasons) for m in (ContextRecall, ContextPosition, ContextRelevance)}
    # recall: a decision (and a reason) per statement (2); position: per piece (3); relevance:
    # per piece a grade (and its reason) and 'used' (3), and one 'missing' call; and the item's
    # baseline call, the same for position and relevance, asked once
    assert len(judge.calls) == (
        (1 + explain["recall"]) * 2
        + (1 + explain["position"]) * 3
        + ((2 + explain["relevance"]) * 3 + 1)
        + 1
    )


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
    decisions = [c for c in judge.calls if c.schema.__name__ == "RelevantDecision"]
    # one call per piece: q0 and q4 have one piece, q1 and q2 two
    assert [question_of(c) for c in decisions] == ["q0?", "q1?", "q1?", "q2?", "q2?", "q4?"]


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


LONG_PIECE = "yes fact 0. " + " ".join(f"w{i}" for i in range(800))


def window_300_short(rec, metric):
    """A window 300 words too small for the largest of ``metric``'s calls on ``rec``."""
    probe = ScriptedJudge(rule_reply)
    list(evaluate([rec], [metric], probe))
    return max(call_tokens(c) for c in probe.calls) - 300


def test_truncate_trims_the_longest_context_until_the_prompt_fits():
    rec = record(0, retrieved_contexts=[LONG_PIECE, "short noise"])
    metric = ContextRecall(reasons=False)
    n_ctx = window_300_short(rec, metric)

    strict = ScriptedJudge(rule_reply, n_ctx=n_ctx)
    [failed] = list(evaluate([rec], [metric], strict))
    assert isinstance(failed.error, ContextOverflowError)

    judge = ScriptedJudge(rule_reply, n_ctx=n_ctx)
    assert metric.settings() == {"reasons": False}  # truncation is the runner's, not the metric's
    [res] = list(evaluate([rec], [metric], judge, truncate=True))
    assert res.error is None
    # one decision per statement, of the trimmed item: overflowing attempts never reach the
    # script
    assert len(judge.calls) == 2
    assert all(call_tokens(c) <= n_ctx for c in judge.calls)
    datas = [prompt_data(c.messages) for c in judge.calls]
    # the reference is never cut; the short piece is left alone
    assert [d["STATEMENT"] for d in datas] == ["yes fact 0.", "unknown 0."]
    assert all(d["CONTEXT 1"] == "short noise" for d in datas)
    kept = datas[0]["CONTEXT 0"]
    assert all(d["CONTEXT 0"] == kept for d in datas)
    assert kept.endswith(" [...]")
    assert LONG_PIECE.startswith(kept.removesuffix(" [...]"))
    truncated = res.result.details["truncated"]
    assert truncated == {
        "policy": "trim-longest-contexts",
        "original_chars": [len(LONG_PIECE), len("short noise")],
        "kept_chars": [len(kept), len("short noise")],
        "pieces": [0],
    }
    # the verdicts are those of the trimmed item: 'yes fact 0.' survived the cut
    assert res.result.value == 0.5


#: a piece whose decision call fits a window that its reason call (longer) does not
NEAR_PIECE = "yes fact 0. " + " ".join(f"w{i}" for i in range(300))


@pytest.mark.parametrize("truncate", [False, True])
def test_a_reason_call_too_long_for_the_window_moves_no_decision(truncate):
    rec = record(0, retrieved_contexts=[NEAR_PIECE, "noise 0"])
    probe = ScriptedJudge(rule_reply, certain=True)
    list(evaluate([rec], [ContextPosition(reasons=True)], probe))
    reasons = sorted(call_tokens(c) for c in probe.calls if c.schema.__name__ == "Reason")
    n_ctx = max(call_tokens(c) for c in probe.calls if c.schema.__name__ != "Reason")
    # every decision call fits; the short piece's reason call does, the long piece's does not
    assert reasons[0] <= n_ctx < reasons[1]
    runs = {}
    for on in (False, True):
        judge = ScriptedJudge(rule_reply, n_ctx=n_ctx, certain=True)
        [res] = list(evaluate([rec], [ContextPosition(reasons=on)], judge, truncate=truncate))
        assert res.error is None
        runs[on] = (res.result, judge)
    (off, _), (explained, judge) = runs[False], runs[True]
    # decision by decision, as with reasons off: nothing trimmed, nothing asked again
    assert without_reasons(explained.verdicts) == off.verdicts
    assert [v["relevant"] for v in off.verdicts] == [True, False]
    assert (explained.value, explained.soft_value) == (off.value, off.soft_value)
    assert explained.reason == off.reason
    decisions = [c for c in judge.calls if c.schema.__name__ != "Reason"]
    assert [prompt_data(c.messages)["PASSAGE"] for c in decisions] == [
        NO_PASSAGE,  # the item's baseline call
        NEAR_PIECE,
        "noise 0",
    ]
    # the reason that did not fit is dropped, and the row says so
    assert [v.get("reason") for v in explained.verdicts] == [None, "rule"]
    skipped = {"count": 1, "why": "the reason call did not fit the context window"}
    assert explained.details == {**off.details, "reasons_skipped": skipped}
    row = result_row(ItemResult(0, "r0", "position", explained, None), judge.identity, {})
    assert row["details"] == {"reasons_skipped": skipped}
    assert len(judge.calls) == 4  # the baseline, two decisions and the one reason that fits


def test_truncate_cannot_shorten_the_question():
    # position shows the QUESTION in every call (recall shows only the contexts and a statement)
    rec = record(0, user_input=" ".join(["word"] * 6000) + "?")
    judge = ScriptedJudge(rule_reply, n_ctx=5000)
    [res] = list(evaluate([rec], [ContextPosition()], judge, truncate=True))
    assert isinstance(res.error, ContextOverflowError)
    assert res.error.available == 5000
    assert judge.calls == []


# ---------------------------------------------------------------- one decision per call


def without_reasons(verdicts):
    return [{k: v for k, v in verdict.items() if k != "reason"} for verdict in verdicts]


def test_reasons_never_move_a_decision():
    """With the rule judge, ``reasons=False`` and ``reasons=True`` give the same scores, soft
    scores and verdicts but for the "reason" keys; a reason call shows the verdict made."""
    records = rule_records(3)
    runs = {}
    judges = {}
    for reasons in (False, True):
        judge = ScriptedJudge(rule_reply, certain=True)
        metrics = [
            ContextRecall(reasons=reasons),
            ContextPosition(reasons=reasons),
            ContextRelevance(reasons=reasons),
        ]
        runs[reasons] = list(evaluate(records, metrics, judge))
        judges[reasons] = judge
    plain, explained = runs[False], runs[True]
    assert [(r.index, r.metric) for r in plain] == [(r.index, r.metric) for r in explained]
    for a, b in zip(plain, explained, strict=True):
        assert (
            a.result.value == b.result.value == pytest.approx(EXPECTED[a.metric](records[a.index]))
        )
        assert a.result.soft_value == b.result.soft_value
        assert a.result.details == b.result.details
        assert all("reason" not in v for v in a.result.verdicts)
        assert all(v["reason"] == "rule" for v in b.result.verdicts)
        assert a.result.verdicts == without_reasons(b.result.verdicts)
    assert not any(c.schema.__name__ == "Reason" for c in judges[False].calls)
    # each reason call is its decision's prompt, then the verdict already made
    decisions = {
        c.messages[-1]["content"]: c for c in judges[True].calls if c.schema.__name__ != "Reason"
    }
    reason_calls = [c for c in judges[True].calls if c.schema.__name__ == "Reason"]
    assert len(reason_calls) == sum(
        len(v) for v in [r.result.verdicts for r in explained]
    )  # one per verdict: relevance's 'used' and 'missing' get none
    for call in reason_calls:
        content = call.messages[-1]["content"]
        prompt, _, rest = content.partition("\nVERDICT: ")
        decision = decisions[prompt]
        assert rest.startswith(decision.raw + "\n")
        assert call.messages[0] == decision.messages[0]
        assert call.shared_chars == decision.shared_chars


GRADE_PROBS = {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.4}  # expected grade 2.0


class SoftJudge(ScriptedJudge):
    """The rule judge, but hesitant: 30% sure a statement is supported (it chooses "no"), and
    a passage's grade spread over 0-3 by ``GRADE_PROBS`` (it chooses 3); certain of the rest."""

    def __init__(self):
        super().__init__(soft_reply, certain=True)

    def generate(self, prompt, schema):
        name = schema.__name__
        if name == "SupportedDecision":
            out = super().generate(prompt, schema)
            verdict = SoftDecision("supported", {'"yes"': 0.3, '"no"': 0.7}, '"no"')
        elif name == "GradeDecision":
            out = super().generate(prompt, schema)
            verdict = SoftDecision("grade", dict(GRADE_PROBS), "3")
        else:
            return super().generate(prompt, schema)
        return Generation(out.value, out.raw, out.stats, decisions=(verdict,))


def soft_reply(messages, schema):
    if schema.__name__ == "SupportedDecision":
        return {"supported": "no"}
    if schema.__name__ == "GradeDecision":
        return {"grade": 3}
    return rule_reply(messages, schema)


@pytest.mark.parametrize(
    ("cutoffs", "attributed"),
    [
        (None, 0),  # the scripted judge has no cut-offs of its own: the baseline, P(yes) 0.3
        (Cutoffs(), 0),
        (Cutoffs.from_json({"recall.supported": 0.2}, "test"), 1),
        (Cutoffs.from_json({"recall.supported": 0.3}, "test"), 1),  # at the cut-off is yes
        (Cutoffs.from_json({"recall.supported": 0.4}, "test"), 0),
        (Cutoffs.from_json({"position.relevant": 0.1}, "test"), 0),  # another kind's cut-off
    ],
)
def test_cutoffs_turn_a_soft_value_into_the_decision(cutoffs, attributed):
    judge = SoftJudge()
    ev = evaluate(rule_records(1), [ContextRecall()], judge, cutoffs=cutoffs)
    [res] = list(ev)
    verdicts = res.result.verdicts
    assert [v["attributed"] for v in verdicts] == [attributed] * 2
    assert res.result.value == attributed
    assert all(v["probs"]["attributed"] == pytest.approx({"1": 0.3, "0": 0.7}) for v in verdicts)
    assert res.result.soft_value == pytest.approx(0.3)
    settings = ev.settings_by_metric["recall"]
    mine = {k: v for k, v in (cutoffs or Cutoffs()).as_json().items() if k.startswith("recall.")}
    assert settings["cutoffs"] == mine
    assert settings["cutoffs_source"] == dict.fromkeys(mine, "test")


@pytest.mark.parametrize(
    ("cuts", "level"),
    [
        (None, "medium"),  # no cut-offs: the expected grade 2.0, rounded (the judge chose 3)
        ([0.5, 1.5, 2.5], "medium"),  # expected grade 2.0 reaches two cut-offs
        ([0.5, 1.0, 2.0], "high"),  # ... all three (at a cut-off counts)
        ([0.5, 2.1, 2.5], "low"),
        ([2.1, 2.2, 2.3], "none"),
    ],
)
def test_graded_cutoffs_map_the_expected_grade_to_a_level(cuts, level):
    cutoffs = Cutoffs.from_json({"relevance.grade": cuts} if cuts else {}, "test")
    judge = SoftJudge()
    ev = evaluate(rule_records(1), [ContextRelevance()], judge, cutoffs=cutoffs)
    [res] = list(ev)
    assert [p["relevance"] for p in res.result.verdicts] == [level, level]
    for piece in res.result.verdicts:
        assert piece["probs"]["relevance"] == pytest.approx(
            {"none": 0.1, "low": 0.2, "medium": 0.3, "high": 0.4}
        )
    settings = ev.settings_by_metric["relevance"]
    assert settings["cutoffs"] == ({"relevance.grade": cuts} if cuts else {})
    assert settings["cutoffs_source"] == ({"relevance.grade": "test"} if cuts else {})


def test_the_settings_record_each_metrics_own_cutoffs():
    cutoffs = Cutoffs.from_json(
        {"recall.supported": 0.2, "position.relevant": 0.6, "relevance.grade": [1, 2, 2.5]},
        "mine",
    )
    ev = evaluate([], ["recall", "position", "relevance"], ScriptedJudge([]), cutoffs=cutoffs)
    got = {m: (s["cutoffs"], s["cutoffs_source"]) for m, s in ev.settings_by_metric.items()}
    assert got == {
        "recall": ({"recall.supported": 0.2}, {"recall.supported": "mine"}),
        "position": ({"position.relevant": 0.6}, {"position.relevant": "mine"}),
        "relevance": ({"relevance.grade": [1.0, 2.0, 2.5]}, {"relevance.grade": "mine"}),
    }
    none = evaluate([], ["recall"], ScriptedJudge([]), cutoffs=Cutoffs())
    assert none.settings_by_metric["recall"]["cutoffs"] == {}
    assert none.settings_by_metric["recall"]["cutoffs_source"] == {}


def opening_of(call):
    return call.messages[0]["content"], call.messages[-1]["content"][: call.shared_chars]


def assert_runs_are_contiguous(keys):
    """Each key's positions in ``keys`` form one unbroken run."""
    seen = []
    for key in keys:
        if seen and seen[-1] == key:
            continue
        assert key not in seen, f"{key!r} comes back after other calls"
        seen.append(key)
    return seen


def test_calls_that_share_an_opening_are_adjacent():
    """Position's and relevance's calls about the same passage (same PASSAGE and QUESTION)
    reach the judge next to each other, and an item's recall calls (same CONTEXT passages)
    too, though the runner builds the asks metric by metric; the item's baseline call, the
    same for position and relevance, is asked once."""
    records = rule_records(3)
    judge = ScriptedJudge(rule_reply)
    metrics = [cls(reasons=True) for cls in (ContextRecall, ContextPosition, ContextRelevance)]
    list(evaluate(records, metrics, judge))
    decisions = [c for c in judge.calls if c.schema.__name__ != "Reason"]
    reasons = [c for c in judge.calls if c.schema.__name__ == "Reason"]
    assert judge.calls == decisions + reasons  # one chunk: its decisions, then its reasons
    for calls in (decisions, reasons):
        groups = assert_runs_are_contiguous([opening_of(c) for c in calls])
        assert len(groups) > 1
    # every passage's opening holds its position call and relevance's grade and used calls
    passage_groups = {}
    baselines = []
    for c in decisions:
        if c.schema.__name__ in ("RelevantDecision", "GradeDecision", "RepeatsDecision"):
            if prompt_data(c.messages)["PASSAGE"] == NO_PASSAGE:
                baselines.append(c)
                continue
            passage_groups.setdefault(opening_of(c), []).append(c.schema.__name__)
    # one baseline call per item (a grade), its opening its own
    assert sorted(question_of(c) for c in baselines) == [r["user_input"] for r in records]
    assert all(c.schema.__name__ == "GradeDecision" for c in baselines)
    assert len({opening_of(c) for c in baselines}) == len(records)
    assert not {opening_of(c) for c in baselines} & set(passage_groups)
    assert len(passage_groups) == sum(len(r["retrieved_contexts"]) for r in records)
    for names in passage_groups.values():
        assert sorted(names) == ["GradeDecision", "RelevantDecision", "RepeatsDecision"]
