"""A verdict about the passage, not its neighbours: position's and relevance's hard and soft
verdicts on a passage are a function of the QUESTION, that passage, the EXPECTED ANSWER or
response the metric reads, the judge and its cut-offs; never of the other passages, their
number or their order. Checked with a scripted judge whose probabilities and readings follow
each passage's text, under every bundled judge's shipped cut-offs and a fitted combination, and
under every protocol (each lays a passage's asks out its own way)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localjudge.decisions import Combination, Cutoffs, builtin_cutoffs, read_shipped
from localjudge.judge.protocol import Generation, SoftDecision
from localjudge.metrics import ContextPosition, ContextRelevance
from localjudge.metrics.base import PROTOCOL_NAMES
from localjudge.metrics.instructions import NO_PASSAGE
from localjudge.run.evaluate.evaluation import score
from localjudge.testing import ScriptedJudge, prompt_data, says_no

QUESTION = "Who was the first person to walk on the Moon?"
PASSAGE = "Neil Armstrong stepped onto the lunar surface on 20 July 1969."
OTHERS = [
    "On 20 July 1969 Neil Armstrong became the first human to set foot on the Moon.",
    "Bananas are rich in potassium.",
    "The Apollo program was run by NASA.",
    "Paris is the capital of France.",
    "Buzz Aldrin followed Armstrong onto the surface.",
]


def _unit(text: str, salt: str) -> float:
    """A number in (0, 1) that depends on ``text`` only."""
    digest = hashlib.sha256(f"{salt}:{text}".encode()).digest()
    return (int.from_bytes(digest[:4], "big") + 1) / (2**32 + 2)


class ByText(ScriptedJudge):
    """Every answer, probability and reading follows the passage's text alone."""

    def __init__(self) -> None:
        super().__init__(says_no, reading=self.read)

    @staticmethod
    def read(messages: list[dict[str, str]], span: str) -> float:
        passage = prompt_data(messages).get("PASSAGE", "")
        return -4.0 if passage == NO_PASSAGE else -4.0 + 3.0 * _unit(passage, "read")

    def generate(self, prompt: Any, schema: Any) -> Generation[Any]:
        out = super().generate(prompt, schema)
        data = prompt_data(list(prompt))
        text = "|".join(data.get(k, "") for k in ("PASSAGE", "STATEMENT", "EXPECTED ANSWER"))
        key = next(iter(schema.model_fields))
        p = _unit(text, schema.__name__)
        if schema.__name__ == "GradeDecision":
            rest = (1.0 - p) / 3
            decisions = (SoftDecision(key, {"0": rest, "1": rest, "2": rest, "3": p}, "0"),)
        elif key in ("relevant", "used", "repeats", "supported"):
            decisions = (SoftDecision(key, {'"yes"': p, '"no"': 1 - p}, '"no"'),)
        else:
            decisions = ()
        return Generation(out.value, out.raw, out.stats, decisions=decisions, reading=out.reading)


def _fitted() -> Cutoffs:
    """A combination of every reading, for both position kinds and the grade."""
    weights = {"judged": 0.7, "question": 1.5, "question_alone": 0.4}
    return Cutoffs(
        values={"position.relevant": (0.45,), "position.relevant_answer": (0.5,)},
        combinations={
            "position.relevant": Combination(weights, (0.1,)),
            "position.relevant_answer": Combination(weights, (-0.2,)),
            "relevance.grade": Combination(weights, (-0.5, 0.4, 1.2)),
        },
    )


#: the cut-offs checked: a fitted combination of every reading, and each bundled judge's
NAMES = ["fitted", *(j.alias for j in read_shipped().judges)]


def cutoffs_of(name: str) -> Cutoffs:
    if name == "fitted":
        return _fitted()
    return builtin_cutoffs(next(j.sha256 for j in read_shipped().judges if j.alias == name))


NEIGHBOURS = st.lists(st.sampled_from(OTHERS), max_size=4, unique=True)


def _verdict(metric: Any, cutoffs: Cutoffs, passages: list[str], at: int, **fields: Any) -> Any:
    result = score(metric, ByText(), cutoffs=cutoffs, user_input=QUESTION,
                   retrieved_contexts=passages, **fields)  # fmt: skip
    verdict = dict(result.verdicts[at])
    verdict.pop("index")
    return verdict


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "fields",
    [{}, {"reference": "Neil Armstrong."}, {"response": "Armstrong, in 1969."}],
    ids=["alone", "answer", "response"],
)
@settings(max_examples=15, deadline=None)
@given(neighbours=NEIGHBOURS, where=st.integers(0, 4))
def test_position_verdict_does_not_move_with_the_neighbours(
    protocol, name, fields, neighbours, where
):
    cutoffs = cutoffs_of(name)
    metric = ContextPosition(protocol=protocol)
    alone = _verdict(metric, cutoffs, [PASSAGE], 0, **fields)
    at = min(where, len(neighbours))
    listed = [*neighbours[:at], PASSAGE, *neighbours[at:]]
    assert _verdict(metric, cutoffs, listed, at, **fields) == alone


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None)
@given(neighbours=NEIGHBOURS, where=st.integers(0, 4))
def test_relevance_verdict_does_not_move_with_the_neighbours(protocol, name, neighbours, where):
    cutoffs = cutoffs_of(name)
    response = "Neil Armstrong was first."
    metric = ContextRelevance(protocol=protocol)
    alone = _verdict(metric, cutoffs, [PASSAGE], 0, response=response)
    at = min(where, len(neighbours))
    listed = [*neighbours[:at], PASSAGE, *neighbours[at:]]
    assert _verdict(metric, cutoffs, listed, at, response=response) == alone
