"""localjudge.testing: the public scripted judge and prompt_data, on their own.

Its documented contract, which most of the suite stands on: each scripted output is validated
exactly as the real judge validates generated text (the same parse step, so schema, bounds and
choices fail alike), ``certain`` gives soft verdicts of probability 1 for what the reply chose,
a script that runs out or does not fit the call fails naming it, and the stats the runner reads
are counted from the prompt and the reply."""

from __future__ import annotations

from typing import Literal

import pytest

from localjudge.errors import ConstraintError, ContextOverflowError
from localjudge.judge.protocol import Generation, Judge, JudgeRequest, generate_many
from localjudge.judge.schemas import (
    StrictModel,
    bounded_list,
    budgeted,
    parse_output,
    text,
    worst_case_tokens,
)
from localjudge.metrics.base import chat, delimit
from localjudge.testing import ScriptedJudge, assert_scores, prompt_data


class Answer(StrictModel):
    answer: text(20, ascii_only=True)  # type: ignore[valid-type]


def test_replies_are_consumed_in_order_and_recorded():
    judge = ScriptedJudge(['{"answer":"one"}', {"answer": "two"}])
    first = judge.generate("q1", Answer)
    second = judge.generate([{"role": "user", "content": "q2"}], Answer)
    assert isinstance(judge, Judge)
    assert (first.value.answer, second.value.answer) == ("one", "two")
    assert second.raw == '{"answer":"two"}'  # a mapping is written as compact JSON
    assert [c.messages for c in judge.calls] == [
        [{"role": "user", "content": "q1"}],
        [{"role": "user", "content": "q2"}],
    ]
    assert [c.schema for c in judge.calls] == [Answer, Answer]
    assert first.stats.prompt_tokens == 1
    assert first.cached is False


def test_running_out_of_replies_says_which_call():
    judge = ScriptedJudge([{"answer": "one"}])
    judge.generate("q", Answer)
    with pytest.raises(AssertionError, match="ran out of replies at call 2"):
        judge.generate("q", Answer)


def test_a_callable_answers_every_call_from_the_prompt():
    judge = ScriptedJudge(lambda messages, schema: {"answer": messages[-1]["content"][:20]})
    assert judge.generate("hello", Answer).value.answer == "hello"
    assert judge.generate("again", Answer).value.answer == "again"


@pytest.mark.parametrize(
    "reply",
    [
        '{"answer": "spaced"}',  # not compact: the grammar never emits it
        '{"answer":"x","extra":1}',
        '{"answer":"' + "x" * 21 + '"}',
        '{"answer":"déjà"}',  # not ASCII
        "not json",
    ],
)
def test_a_reply_the_grammar_could_not_produce_fails_like_the_real_judge(reply):
    judge = ScriptedJudge([reply])
    with pytest.raises(ConstraintError, match="does not match schema Answer"):
        judge.generate("q", Answer)
    assert judge.calls == []  # nothing invalid is recorded as a call


def test_n_ctx_refuses_an_overflow_before_consuming_a_reply():
    judge = ScriptedJudge([{"answer": "one"}], n_ctx=worst_case_tokens(Answer) + 2)
    with pytest.raises(ContextOverflowError) as info:
        judge.generate("three words here", Answer)
    assert info.value.needed == 3 + worst_case_tokens(Answer)
    assert judge.generate("two words", Answer).value.answer == "one"  # the reply is still there


def test_identity_names_the_script():
    identity = ScriptedJudge([], model="my-fake", n_ctx=100).identity
    assert (identity.model, identity.backend, identity.sha256) == ("my-fake", "scripted", "0" * 64)
    assert identity.settings == {"n_ctx": 100}


def test_generate_many_answers_in_order_and_reports_each_outcome():
    judge = ScriptedJudge(
        lambda m, s: {"answer": m[-1]["content"]}, n_ctx=worst_case_tokens(Answer) + 1
    )
    requests = [
        JudgeRequest(messages=[{"role": "user", "content": "a"}], schema=Answer),
        JudgeRequest(messages=[{"role": "user", "content": "too many words"}], schema=Answer),
        JudgeRequest(messages=[{"role": "user", "content": "b"}], schema=Answer),
    ]
    seen: list[tuple[int, object]] = []
    outcomes = generate_many(judge, requests, on_outcome=lambda i, o: seen.append((i, o)))
    assert isinstance(outcomes[0], Generation)
    assert isinstance(outcomes[1], ContextOverflowError)
    assert [o.value.answer for o in (outcomes[0], outcomes[2])] == ["a", "b"]
    assert [i for i, _ in seen] == [0, 1, 2]
    assert [o for _, o in seen] == outcomes


def test_prompt_data_reads_the_delimited_blocks_of_the_last_message():
    user = "\n".join([delimit("QUESTION", "q?"), delimit("CONTEXT 0", "a\nb"), "loose text"])
    data = prompt_data(chat("system <<NOT>> here", user))
    assert data == {"QUESTION": "q?", "CONTEXT 0": "a\nb"}


class Verdict(StrictModel):
    relevant: Literal["yes", "no"]
    grade: Literal[0, 1, 2, 3]


class Verdicts(StrictModel):
    verdicts: bounded_list(Verdict, min_items=1, max_items=2)  # type: ignore[valid-type]
    note: text(8)  # type: ignore[valid-type]


class Open(StrictModel):  # a schema we did not write: unbounded, made judge-ready by budgeted
    statements: list[str]
    attributed: int


OPEN = budgeted(Open, 64, max_items=2, max_chars=5, choices={"attributed": (0, 1)})

REPLIES = [
    (Verdict, '{"relevant":"yes","grade":2}'),
    (Verdict, '{"relevant":"maybe","grade":2}'),  # not an allowed value
    (Verdict, '{"relevant":"no","grade":4}'),  # a grade out of range
    (Verdict, '{"relevant":true,"grade":1}'),  # no coercion
    (Verdict, '{"relevant":"no","grade":1.0}'),  # no floats
    (Verdict, '{"relevant":"no"}'),  # a missing key
    (Verdict, '{"grade":1,"relevant":"no"}'),  # keys out of the schema's order are still valid
    (Verdicts, '{"verdicts":[{"relevant":"no","grade":0}],"note":"ok"}'),
    (Verdicts, '{"verdicts":[],"note":"ok"}'),  # under the list's bound
    (Verdicts, '{"verdicts":[' + ",".join(['{"relevant":"no","grade":0}'] * 3) + '],"note":"ok"}'),
    (Verdicts, '{"verdicts":[{"relevant":"no","grade":0}],"note":"too long!"}'),
    (Verdicts, '{"verdicts":[{"relevant":"no","grade":0}],"note":""}'),
    (OPEN, '{"statements":["a","b"],"attributed":1}'),
    (OPEN, '{"statements":["a","b","c"],"attributed":1}'),  # over the budgeted cap
    (OPEN, '{"statements":["abcdef"],"attributed":0}'),  # a string over max_chars
    (OPEN, '{"statements":["a"],"attributed":2}'),  # not one of the choices
    (Answer, '{"relevant":"yes","grade":2}'),  # a reply for another call's schema
]


def _parsed(schema, raw):
    try:
        return ("ok", parse_output(schema, raw).model_dump())
    except ConstraintError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize(("schema", "raw"), REPLIES)
def test_a_reply_is_accepted_or_refused_exactly_as_the_judges_parse_step_does(schema, raw):
    judge = ScriptedJudge([raw])
    try:
        got = ("ok", judge.generate("q", schema).value.model_dump())
    except ConstraintError as exc:
        got = ("error", str(exc))
    assert got == _parsed(schema, raw)
    assert len(judge.calls) == (got[0] == "ok")


def test_the_replies_above_cover_both_outcomes():
    outcomes = [_parsed(schema, raw)[0] for schema, raw in REPLIES]
    assert outcomes.count("ok") == 4
    assert outcomes.count("error") == len(REPLIES) - 4


def test_a_reply_for_another_schema_names_the_schema_asked():
    judge = ScriptedJudge([{"answer": "yes"}])
    with pytest.raises(ConstraintError, match="does not match schema Verdict at"):
        judge.generate("q", Verdict)


def test_certain_gives_each_decision_probability_one_for_the_chosen_value_in_output_order():
    reply = {"verdicts": [{"relevant": "no", "grade": 3}, {"relevant": "yes", "grade": 0}]}
    out = ScriptedJudge([{**reply, "note": "n"}], certain=True).generate("q", Verdicts)
    got = [(d.key, d.chosen, d.probs) for d in out.decisions]
    grades = ("0", "1", "2", "3")
    assert got == [
        ("relevant", '"no"', {'"yes"': 0.0, '"no"': 1.0}),
        ("grade", "3", {g: float(g == "3") for g in grades}),
        ("relevant", '"yes"', {'"yes"': 1.0, '"no"': 0.0}),
        ("grade", "0", {g: float(g == "0") for g in grades}),
    ]


def test_without_certain_a_generation_has_no_soft_verdicts():
    out = ScriptedJudge([{"relevant": "no", "grade": 1}]).generate("q", Verdict)
    assert out.decisions == ()


def test_the_stats_the_runner_reads_count_the_prompt_words_and_the_reply():
    judge = ScriptedJudge([{"relevant": "no", "grade": 1}])
    out = judge.generate(
        [{"role": "system", "content": "be fair"}, {"role": "user", "content": "a b c"}], Verdict
    )
    assert out.stats.prompt_tokens == 5  # one token a whitespace-separated word, every message
    assert out.stats.evaluated_prompt_tokens == 5  # a scripted judge reuses nothing
    assert out.stats.completion_tokens == len(out.raw)
    assert out.stats.seconds >= 0.0


def test_generate_many_records_each_requests_shared_opening():
    judge = ScriptedJudge(lambda m, s: {"answer": "x"})
    requests = [
        JudgeRequest(messages=[{"role": "user", "content": "a"}], schema=Answer, shared_chars=7),
        JudgeRequest(messages=[{"role": "user", "content": "b"}], schema=Answer),
    ]
    generate_many(judge, requests)
    judge.generate("c", Answer)
    assert [c.shared_chars for c in judge.calls] == [7, 0, 0]


def test_a_reply_that_does_not_match_fails_its_request_in_generate_many():
    judge = ScriptedJudge([{"answer": "a"}, {"wrong": 1}])
    requests = [
        JudgeRequest(messages=[{"role": "user", "content": w}], schema=Answer) for w in "ab"
    ]
    with pytest.raises(ConstraintError, match="does not match schema Answer"):
        generate_many(judge, requests)  # only an overflow is an outcome; this is a bug, loudly
    assert [c.raw for c in judge.calls] == ['{"answer":"a"}']


def test_assert_scores_fails_below_a_threshold_and_passes_at_it():
    rows = [
        {"index": 0, "id": "a", "metric": "recall", "score": 1.0, "reason": None, "error": None},
        {"index": 1, "id": "b", "metric": "recall", "score": 0.5, "reason": "r", "error": None},
    ]
    assert_scores(rows, recall=0.75)
    with pytest.raises(AssertionError, match="recall"):
        assert_scores(rows, recall=0.8)
