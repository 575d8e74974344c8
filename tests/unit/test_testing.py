"""localjudge.testing: the public scripted judge and prompt_data, on their own."""

from __future__ import annotations

import pytest

from localjudge.errors import ConstraintError, ContextOverflowError
from localjudge.judge.protocol import Generation, Judge, JudgeRequest, generate_many
from localjudge.judge.schemas import StrictModel, text, worst_case_tokens
from localjudge.metrics.base import chat, delimit
from localjudge.testing import ScriptedJudge, prompt_data


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
