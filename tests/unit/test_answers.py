"""A metric finds each answer by what its ask is (Ask.key), never by its place in the list."""

from __future__ import annotations

import random

import pytest

from localjudge.data.item import make_item
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.metrics.asks import Answer, Answers, Ask, AskKey
from localjudge.metrics.instructions import GRADE, RELEVANT_ANSWER, SUPPORTED, USED
from localjudge.metrics.relevance import missing_schema

ITEM = make_item(
    {
        "id": "x",
        "user_input": "Where is the tower?",
        "retrieved_contexts": ["It is in Paris.", "Bananas are yellow.", "Paris is in France."],
        "reference": "It is in Paris. It was built in 1889. It is tall.",
        "response": "It is in Paris.",
    },
    index=0,
)


def answer_to(ask: Ask) -> Answer:
    """A different answer for each ask, chosen by what the ask is."""
    if ask.decision is None:
        return Answer(missing_schema()(missing=["its height"]))
    if ask.baseline:
        return Answer(0, soft=0.0)
    if ask.decision.graded:
        return Answer(3 - ask.at, probs={str(3 - ask.at): 1.0}, soft=float(3 - ask.at))
    yes = ask.at != 1
    return Answer("yes" if yes else "no", soft=0.9 if yes else 0.2)


@pytest.mark.parametrize("metric", [ContextRecall(), ContextPosition(), ContextRelevance()])
def test_a_metric_scores_the_same_whatever_the_order_of_its_answers(metric) -> None:
    asks = metric.build(ITEM)
    assert isinstance(asks, list)
    answers = [answer_to(a) for a in asks]
    expected = metric.finish(ITEM, Answers(asks, answers))
    pairs = list(zip(asks, answers, strict=True))
    for seed in range(3):
        random.Random(seed).shuffle(pairs)
        shuffled = Answers([a for a, _ in pairs], [b for _, b in pairs])
        assert metric.finish(ITEM, shuffled) == expected


def test_each_verdict_is_the_answer_to_its_own_piece() -> None:
    metric = ContextRelevance()
    asks = metric.build(ITEM)
    assert isinstance(asks, list)
    result = metric.finish(ITEM, Answers(asks, [answer_to(a) for a in asks]))
    # grade 3 - at, used unless at == 1: piece by piece, whatever the asks' order
    assert [(v["relevance"], v["used"]) for v in result.verdicts] == [
        ("high", True),
        ("medium", False),
        ("low", True),
    ]
    assert result.details["missing"] == ["its height"]


def test_an_answer_is_found_by_its_decision_and_what_it_is_about() -> None:
    asks = ContextPosition().build(ITEM)
    assert isinstance(asks, list)
    answers = Answers(asks, [Answer(f"#{a.at}") for a in asks])
    assert answers.to(RELEVANT_ANSWER, 2).value == "#2"
    assert answers.baseline is not None
    assert answers.baseline.value == "#-1"
    assert [a.key for a in asks][:2] == [
        AskKey("baseline", None),
        AskKey(RELEVANT_ANSWER.kind, 0),
    ]
    with pytest.raises(KeyError):
        answers.to(SUPPORTED, 0)  # position never asked it


def test_two_asks_that_are_the_same_thing_are_refused() -> None:
    [ask] = [a for a in ContextRelevance().build(ITEM) if a.decision is USED and a.at == 0]
    with pytest.raises(ValueError, match="two asks"):
        Answers([ask, ask], [Answer("yes"), Answer("no")])


def test_a_reason_goes_to_its_own_answer() -> None:
    asks = ContextRelevance().build(ITEM)
    assert isinstance(asks, list)
    answers = Answers(asks, [answer_to(a) for a in asks])
    [grade_1] = [a for a in asks if a.decision is GRADE and a.at == 1]
    explained = answers.with_reason(grade_1, "It is about fruit.")
    assert explained.to(GRADE, 1).reason == "It is about fruit."
    assert answers.to(GRADE, 1).reason is None  # the answers it came from are unchanged
    assert [explained.to(GRADE, i).reason for i in (0, 2)] == [None, None]
