"""The engine's readings on a real model (SmolLM2): the log-probabilities of a request's marked
span, read while its prompt is evaluated, equal llama-cpp-python's own, whichever sequence
evaluated the span; they survive the cache; the passage calls of an item carry them."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from localjudge import load_judge
from localjudge.judge.protocol import Generation, JudgeRequest, generate_many
from localjudge.metrics.instructions import (
    RELEVANT,
    RELEVANT_QUESTION,
    baseline_ask,
    passage_ask,
    passage_opening,
)

pytestmark = pytest.mark.model

QUESTION = "what is the capital of france?"
PASSAGES = [
    "Paris is the capital and largest city of France.",
    "Bananas are yellow fruits rich in potassium.",
]


def _requests() -> list[JudgeRequest]:
    asks = [baseline_ask(QUESTION)] + [
        passage_ask(passage_opening(QUESTION, p), RELEVANT_QUESTION, RELEVANT, at=i)
        for i, p in enumerate(PASSAGES)
    ]
    return [a.request for a in asks]


def _direct(judge: Any, request: JudgeRequest) -> tuple[float, int]:
    """The span's log-probability from a plain ``Llama`` over the same tokens (logits_all)."""
    from llama_cpp import Llama  # noqa: PLC0415 (the backend loads with a judge)

    prepared = judge.render(
        request.messages, shared_chars=request.shared_chars, read_chars=request.read_chars
    )
    start, end = prepared.read
    llm = Llama(str(judge.model.path), n_ctx=2048, n_threads=2, logits_all=True, verbose=False)
    llm.eval(prepared.tokens[:end])
    total = 0.0
    for p in range(start, end):
        row = np.asarray(llm.scores[p - 1], dtype=np.float64)
        row -= row.max()
        total += row[prepared.tokens[p]] - math.log(np.exp(row).sum())
    return total, end - start


def _readings(outcomes: list[Any]) -> list[Any]:
    assert all(isinstance(o, Generation) for o in outcomes)
    return [o.reading for o in outcomes]


def test_a_reading_is_the_models_own_log_probability_of_the_span(judge: Any) -> None:
    requests = _requests()
    readings = _readings(generate_many(judge, requests))
    for request, reading in zip(requests, readings, strict=True):
        logprob, tokens = _direct(judge, request)
        assert reading.tokens == tokens > 0
        assert reading.logprob == pytest.approx(logprob, abs=1e-6)
    # the passage that answers the question predicts it better than no passage; the other worse
    base, paris, bananas = (r.mean for r in readings)
    assert paris > base > bananas


def test_a_reading_does_not_depend_on_which_sequence_evaluated_the_span(
    judge: Any, isolated_env: Path
) -> None:
    requests = _requests()
    alone = _readings(generate_many(judge, requests))
    # the same openings again: now reused from what the slots hold
    again = _readings(generate_many(judge, requests))
    # a call with the same opening but no span first: its cells hold no readings, so the
    # reading call after it evaluates the span itself
    plain = replace(requests[1], read_chars=None)
    [_, after_plain] = _readings(generate_many(judge, [plain, requests[1]]))
    batched = load_judge("smollm2-135m", n_threads=2, parallel=2, cache=False)
    together = _readings(generate_many(batched, requests))
    assert again == alone
    assert after_plain == alone[1]
    assert [r.logprob for r in together] == pytest.approx([r.logprob for r in alone], abs=1e-4)


def test_the_cache_keeps_readings_and_keys_them(tmp_path: Path) -> None:
    cached = load_judge("smollm2-135m", n_threads=2, cache=tmp_path / "c.sqlite3")
    requests = _requests()
    first = generate_many(cached, requests)
    second = generate_many(cached, requests)
    assert all(o.cached for o in second)
    assert _readings(second) == _readings(first)
    # the same call without its span is another call: no reading
    [plain] = generate_many(cached, [replace(requests[1], read_chars=None)])
    assert not plain.cached
    assert plain.reading is None


def test_the_read_span_is_the_questions_tokens_in_either_layout(
    judge: Any, isolated_env: Path
) -> None:
    request = _requests()[1]
    plain = load_judge("smollm2-135m", n_threads=2, cache=False, chat_template=False)
    for one in (judge, plain):
        p = one.render(
            request.messages, shared_chars=request.shared_chars, read_chars=request.read_chars
        )
        assert p.fixed < p.read[0] < p.read[1] <= p.shared
        assert one.detokenize(p.tokens[p.read[0] : p.read[1]], special=False) == QUESTION
    [out] = generate_many(plain, [request])
    assert isinstance(out, Generation)
    assert out.reading is not None
    assert out.reading.tokens == p.read[1] - p.read[0]
    with pytest.raises(ValueError, match="needs a shared part"):
        plain.render(request.messages, read_chars=request.read_chars)
