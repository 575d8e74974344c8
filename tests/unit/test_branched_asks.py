"""Protocol 2's layout (:mod:`localjudge.metrics.branched`): every ask of an item is a path
down one tree, the item's opening, then one passage (or every context), then a short ending,
each node a branch point the judge reads once; a passage's asks show that passage alone."""

from __future__ import annotations

from typing import Any

import pytest

from localjudge.data.item import make_item
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance, branched
from localjudge.metrics.asks import Answer, Ask, reason_request
from localjudge.metrics.instructions import (
    GRADE,
    NO_PASSAGE,
    answer_ending,
    passage_opening,
    used_ending,
)

QUESTION = "Which is the highest mountain in Japan?"
PASSAGES = [
    "富士山は標高3776メートルで、日本の最高峰です。",
    "東京は日本の首都です。",
    "Paris est en France.",
]
RECORD = {
    "id": "fuji",
    "user_input": QUESTION,
    "retrieved_contexts": PASSAGES,
    "reference": "Mount Fuji. It is 3,776 m high.",
    "response": "Mount Fuji.",
}


def _asks(record: dict[str, Any], *, reasons: bool = False, protocol: str = "2") -> list[Ask]:
    item = make_item(record, index=0)
    out: list[Ask] = []
    for metric in (
        ContextPosition(reasons=reasons, protocol=protocol),
        ContextRelevance(reasons=reasons, protocol=protocol),
        ContextRecall(reasons=reasons, protocol=protocol),
    ):
        built = metric.build(item)
        assert isinstance(built, list)
        out.extend(built)
    return out


def _content(ask: Ask) -> str:
    return ask.request.messages[-1]["content"]


def _opening(ask: Ask, k: int) -> str:
    """The ask's content up to its k-th branch point."""
    return _content(ask)[: ask.request.branch_chars[k]]


def _passage_asks(asks: list[Ask], i: int) -> list[Ask]:
    return [a for a in asks if a.at == i and a.decision and a.decision.kind != "recall.supported"]


def test_the_asks_that_weigh_an_answer_begin_with_the_items_opening_read_once():
    asks = _asks(RECORD)
    opening = branched.item_opening(make_item(RECORD, index=0))
    assert opening.startswith("<<EXPECTED ANSWER>>\nMount Fuji. It is 3,776 m high.")
    assert opening.endswith("<<RESPONSE>>\nMount Fuji.\n<</RESPONSE>>\n")
    answered = [a for a in asks if a.decision and a.decision.kind in WEIGH_AN_ANSWER]
    assert len(answered) == 2 * len(PASSAGES)
    for ask in answered:
        assert ask.request.messages[0] == {"role": "system", "content": branched.ANSWER_SYSTEM}
        assert _opening(ask, 0) == opening  # one node of the tree, for every passage
        assert ask.request.read_chars is None  # after the answer, the QUESTION reads alike
    others = [a for a in asks if a not in answered]
    assert all(not _content(a).startswith(opening) for a in others)
    for ask in others:
        system = ask.request.messages[0]["content"]
        assert system == (branched.SYSTEM if ask.request.read_chars else branched.CONTEXT_SYSTEM)


WEIGH_AN_ANSWER = {"position.relevant_answer", "relevance.used"}


@pytest.mark.parametrize("i", range(len(PASSAGES)))
def test_a_passage_is_read_once_per_path_and_shows_no_neighbour(i):
    passage = PASSAGES[i]
    mine = _passage_asks(_asks(RECORD), i)
    assert {a.decision.kind for a in mine if a.decision} == {
        "position.relevant_answer",
        "relevance.grade",
        "relevance.used",
    }
    answered = [a for a in mine if a.decision and a.decision.kind in WEIGH_AN_ANSWER]
    readings = {_opening(a, 1) for a in answered}
    assert len(readings) == 1  # position's and used continue from one reading of the passage
    (grade,) = [a for a in mine if a not in answered]
    for ask, reading in [(a, _opening(a, 1)) for a in answered] + [(grade, _opening(grade, 0))]:
        assert passage in reading
        assert all(p not in reading for p in PASSAGES if p != passage)
        assert reading.endswith(f"<<QUESTION>>\n{QUESTION}\n<</QUESTION>>\n")
        ending = _content(ask)[len(reading) :]  # the decision's own short ending
        assert ending in {branched.ANSWER_ENDING, branched.GRADE_ENDING, branched.USED_ENDING}
    # the grade sees no answer and reads the QUESTION after the passage, as the baseline does
    start, end = grade.request.read_chars or (0, 0)
    assert _content(grade)[start:end] == QUESTION
    assert "EXPECTED ANSWER" not in _content(grade)
    assert "RESPONSE" not in _content(grade)


def test_the_baseline_shows_no_passage_and_no_answer():
    asks = [a for a in _asks(RECORD) if a.baseline]
    assert len(asks) == 1  # relevance's: position's asks with an answer read no QUESTION
    reading = _opening(asks[0], 0)
    assert reading.startswith(f"<<PASSAGE>>\n{NO_PASSAGE}\n<</PASSAGE>>")
    assert all(p not in reading for p in PASSAGES)
    assert asks[0].request.read_chars is not None


def test_without_an_answer_position_and_the_grade_share_the_passages_reading():
    record = {k: v for k, v in RECORD.items() if k != "reference"}
    bare = {k: v for k, v in record.items() if k != "response"}
    alone = ContextPosition(protocol="2").build(make_item(bare, index=0))
    graded = ContextRelevance(protocol="2").build(make_item(record, index=0))
    assert isinstance(alone, list)
    assert isinstance(graded, list)
    for i in range(len(PASSAGES)):
        (position,) = [a for a in alone if a.at == i]
        (grade,) = [a for a in graded if a.at == i and a.decision is GRADE]
        assert _opening(position, 0) == _opening(grade, 0)  # one reading: the same node
        assert position.request.read_chars == grade.request.read_chars
    baselines = [a.request for a in [*alone, *graded] if a.baseline]
    assert len(baselines) == 2
    assert baselines[0] == baselines[1]


def test_recall_and_missing_continue_from_one_reading_of_every_context():
    asks = _asks(RECORD)
    whole = [a for a in asks if a.decision is None or a.decision.kind == "recall.supported"]
    assert len(whole) == 3  # two statements and the missing information
    for ask in whole:
        assert ask.request.messages[0]["content"] == branched.CONTEXT_SYSTEM
    readings = {_opening(a, 0) for a in whole}
    assert len(readings) == 1
    (reading,) = readings
    assert reading.startswith("<<CONTEXT 0>>\n")
    assert reading.endswith(f"<<QUESTION>>\n{QUESTION}\n<</QUESTION>>\n")
    assert all(p in reading for p in PASSAGES)
    assert "EXPECTED ANSWER" not in reading  # a statement shown in it would read as supported
    statements = [_content(a)[len(reading) :] for a in whole if a.decision is not None]
    assert statements == [
        branched.statement_ending("Mount Fuji."),
        branched.statement_ending("It is 3,776 m high."),
    ]


def test_a_passage_ask_is_the_same_whatever_its_neighbours():
    item = make_item({**RECORD, "retrieved_contexts": [PASSAGES[1]]}, index=0)
    alone = ContextPosition(protocol="2").build(item)
    listed = _asks(RECORD)
    assert isinstance(alone, list)
    (single,) = alone
    (same,) = [a for a in listed if a.at == 1 and a.decision == single.decision]
    assert same.request == single.request


@pytest.mark.parametrize(
    ("fields", "kind", "ending"),
    [
        ({}, "position.relevant", branched.RELEVANT_ENDING),
        ({"response": "Fuji."}, "position.relevant_answer", branched.RESPONSE_ANSWER_ENDING),
        ({"reference": "Fuji."}, "position.relevant_answer", branched.ANSWER_ENDING),
    ],
)
def test_position_asks_by_what_the_item_gives(fields, kind, ending):
    record = {"user_input": QUESTION, "retrieved_contexts": PASSAGES[:1], **fields}
    built = ContextPosition(protocol="2").build(make_item(record, index=0))
    assert isinstance(built, list)
    (ask,) = [a for a in built if not a.baseline]
    assert ask.decision is not None
    assert ask.decision.kind == kind
    assert _content(ask).endswith(ending)
    # no opening when the item has neither an answer nor a response: the passage comes first
    assert len(ask.request.branch_chars) == (1 if not fields else 2)
    assert (ask.request.read_chars is None) == bool(fields)
    assert any(a.baseline for a in built) == (not fields)


def test_with_reasons_a_reason_continues_from_its_decisions_own_state():
    off, on = _asks(RECORD), _asks(RECORD, reasons=True)
    for quiet, loud in zip(off, on, strict=True):
        assert quiet.request.messages == loud.request.messages  # the same tokens either way
        content = _content(loud)
        if loud.explain and loud.decision is not None and not loud.baseline:
            assert loud.request.branch_chars == (*quiet.request.branch_chars, len(content))
            reason = reason_request(loud, Answer(loud.decision.values[0]))
            assert reason.branch_chars == loud.request.branch_chars
            after = reason.messages[-1]["content"][len(content) :]
            assert after.startswith("\nVERDICT: ")  # all a reason reads past its decision
            assert all(p not in after for p in PASSAGES)
        else:
            assert loud.request.branch_chars == quiet.request.branch_chars


# --------------------------------------------------------------------------- protocol 3


@pytest.mark.parametrize("i", range(len(PASSAGES)))
def test_protocol_3_reads_a_passage_once_for_every_decision_about_it(i):
    mine = _passage_asks(_asks(RECORD, protocol="3"), i)
    assert {a.decision.kind for a in mine if a.decision} == {
        "position.relevant_answer",
        "relevance.grade",
        "relevance.used",
    }
    (reading,) = {_opening(a, 0) for a in mine}  # one node of the tree for all three
    assert reading == passage_opening(QUESTION, PASSAGES[i])
    endings = {a.decision.kind: _content(a)[len(reading) :] for a in mine if a.decision}
    assert endings == {
        "position.relevant_answer": answer_ending(RECORD["reference"]),
        "relevance.grade": branched.GRADE_ENDING,
        "relevance.used": used_ending(RECORD["response"]),
    }
    for ask in mine:
        assert ask.request.messages[0] == {"role": "system", "content": branched.SYSTEM}
        start, end = ask.request.read_chars or (0, 0)
        assert _content(ask)[start:end] == QUESTION  # each reads the QUESTION after it
    assert all(
        branched.ANSWER_SYSTEM not in str(a.request.messages) for a in _asks(RECORD, protocol="3")
    )


def test_protocol_3_asks_as_protocol_1_or_2_did_each_decision():
    """What lets rows judged under protocol 1 or 2 stand for protocol 3's (fitting/carry.py):
    each of its asks is one of theirs but for where the branch points lie."""

    def what(ask: Ask) -> tuple[Any, ...]:
        r = ask.request
        return (ask.at, ask.decision, str(r.messages), r.schema, r.read_chars, ask.baseline)

    for record in (
        RECORD,
        {k: v for k, v in RECORD.items() if k != "reference"},
        {k: v for k, v in RECORD.items() if k not in ("reference", "response")},
    ):
        earlier = {what(a) for p in ("1", "2") for a in _asks_of_some(p, record)}
        for ask in _asks_of_some("3", record):
            kind = ask.decision.kind if ask.decision else "missing"
            assert what(ask) in earlier, (kind, ask.at)


def _asks_of_some(protocol: str, record: dict[str, Any]) -> list[Ask]:
    """The asks of the metrics ``record`` can be scored by."""
    item = make_item(record, index=0)
    metrics: list[Any] = [ContextPosition(protocol=protocol)]
    if "response" in record:
        metrics.append(ContextRelevance(protocol=protocol))
    if "reference" in record:
        metrics.append(ContextRecall(protocol=protocol))
    out: list[Ask] = []
    for metric in metrics:
        built = metric.build(item)
        assert isinstance(built, list)
        out.extend(built)
    return out


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({}, "position.relevant"),
        ({"response": "Fuji."}, "position.relevant_answer"),
        ({"reference": "Fuji.", "response": "Mount Fuji."}, "position.relevant_answer"),
    ],
)
def test_protocol_3_position_asks_by_what_the_item_gives(fields, kind):
    record = {"user_input": QUESTION, "retrieved_contexts": PASSAGES[:1], **fields}
    built = ContextPosition(protocol="3").build(make_item(record, index=0))
    assert isinstance(built, list)
    baseline, ask = built  # the QUESTION is always read: the baseline comes first
    assert baseline.baseline
    assert ask.decision is not None
    assert ask.decision.kind == kind
    target = fields.get("reference") or fields.get("response")
    ending = answer_ending(target) if target else branched.RELEVANT_ENDING
    assert _content(ask) == passage_opening(QUESTION, PASSAGES[0]) + ending
    assert ask.request.branch_chars == (len(passage_opening(QUESTION, PASSAGES[0])),)
