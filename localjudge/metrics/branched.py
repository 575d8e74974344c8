"""Protocols 2 and 3's prompts and layout: each passage read once for the decisions that weigh
an answer, every decision continuing from a reading it shares.

Protocol 1 (:mod:`localjudge.metrics.instructions`) reads a passage once per kind of call and
an item's EXPECTED ANSWER and RESPONSE once per passage and kind. Protocol 2 lays an item's
asks out as paths down a tree whose nodes are branch points (``JudgeRequest.branch_chars``):
the judge evaluates each node once and keeps its state for every ask that continues from it,
in any order. Three system texts, each the same for every item, so evaluated once and stored
beside the judge's cache (the fixed text: instructions, the grades' definitions, the answer
format): :data:`ANSWER_SYSTEM`, :data:`SYSTEM` and :data:`CONTEXT_SYSTEM`, one per path below
(the paths share no other node, so a text of each costs nothing). Under them:

- under :data:`ANSWER_SYSTEM`, **the item's opening** (:func:`item_opening`: its EXPECTED
  ANSWER, the reference, and its RESPONSE, where it has them; read once per item), then per
  passage that PASSAGE and the QUESTION (read once per passage), then the short ending of each
  decision that weighs an answer: position's (does the PASSAGE state the EXPECTED ANSWER, or
  the RESPONSE's answer?) and relevance's ``used``;
- under :data:`SYSTEM`, per passage, that PASSAGE and the QUESTION, its QUESTION's tokens read
  (how well the passage predicts the QUESTION, against the item's baseline ask,
  :func:`baseline_ask`, which shows no passage), then the grade's ending, and position's on
  the QUESTION alone. Not under the opening: shown the answer first, the default judge graded
  every passage alike (Spearman 0.52 against people's levels on the README's 31 passages, 0.85
  without it) and the QUESTION's reading lost its signal (the answer already predicts the
  QUESTION). An item with no answer and no response has no opening: its passages have this
  one reading;
- under :data:`CONTEXT_SYSTEM`, every CONTEXT passage and the QUESTION (once per item), then
  recall's STATEMENT and question, or relevance's missing information. Not under the opening
  either: a statement of the reference shown in the EXPECTED ANSWER would read as supported.

Protocol 3 is protocol 2 with no path under :data:`ANSWER_SYSTEM`: every decision about a
passage continues from its one reading under :data:`SYSTEM` (the QUESTION's tokens read), and
the decisions that weigh an answer end on it in protocol 1's words
(:func:`~localjudge.metrics.instructions.answer_ending`, with the EXPECTED ANSWER;
:func:`~localjudge.metrics.instructions.used_ending`, with the RESPONSE); position on the
QUESTION alone and the grade are protocol 2's. So a passage is read once per judge, and the
answer once per passage. Why: protocol 2's support decision, shown the answer first, agreed
with people less than protocol 1's on XQuAD's sentences (``fitting/compare.py``: kappa 0.678
against 0.785 on the validation part, paired difference -0.107 [-0.174, -0.047]).

A passage's verdicts so depend on the QUESTION, that passage and the item's EXPECTED ANSWER or
RESPONSE, never on its neighbours. With reasons on, each explained decision also marks its own
end (:func:`reason_point`): its reason (:func:`~localjudge.metrics.asks.reason_request`)
continues from the decision's state and reads only the verdict and the reason question.
"""

from __future__ import annotations

import itertools

from localjudge.data.item import Item
from localjudge.judge.protocol import JudgeRequest
from localjudge.metrics.asks import REASON_QUESTION, Ask, Decision
from localjudge.metrics.base import DATA_RULE, PromptCopies, chat, delimit
from localjudge.metrics.instructions import COPIES as PROTOCOL_1_COPIES
from localjudge.metrics.instructions import (
    GRADE,
    MAX_MISSING,
    NO_PASSAGE,
    RELEVANT,
    RELEVANT_ANSWER,
    RELEVANT_TARGET_QUESTION,
    SUPPORTED,
    USED_QUESTION,
    answer_ending,
    contexts_opening,
    delimit_question,
    passage_opening,
    question_span,
)

__all__ = [
    "COPIES",
    "COPIES_3",
    "GRADE_ENDING",
    "MISSING_ENDING",
    "SYSTEM",
    "USED_ENDING",
    "baseline_ask",
    "context_ask",
    "copies_of",
    "item_opening",
    "passage_ask",
    "position_ending",
    "reason_point",
    "statement_ending",
]

SYSTEM = f"""You judge one PASSAGE that a search system retrieved for a QUESTION.
{DATA_RULE}
Grades of a passage:
3: the passage is dedicated to the QUESTION and contains the exact answer.
2: the passage answers the QUESTION, but the answer is unclear or buried among other information.
1: the passage is on the topic of the QUESTION but does not answer it.
0: the passage has nothing to do with the QUESTION.
Answer the one question asked at the end, in the JSON format asked."""

ANSWER_SYSTEM = f"""You judge what a search system retrieved for a QUESTION. You may see the \
EXPECTED ANSWER to the QUESTION and a RESPONSE that a system wrote; then one PASSAGE; then the \
QUESTION; then one question for you.
{DATA_RULE}
Judge only by the data shown, never by your own knowledge.
Grades of a PASSAGE:
3: the passage is dedicated to the QUESTION and contains the exact answer.
2: the passage answers the QUESTION, but the answer is unclear or buried among other information.
1: the passage is on the topic of the QUESTION but does not answer it.
0: the passage has nothing to do with the QUESTION.
A PASSAGE answers the QUESTION, or states an answer, only if its own text says it: a passage on \
the same subject that does not say it does not.
Answer yes or no where asked, in the JSON format asked."""

CONTEXT_SYSTEM = f"""You are a careful fact checker. You get CONTEXT passages and the QUESTION \
they were retrieved for, then one STATEMENT from a reference answer or a request to list what \
is missing.
Decide whether the CONTEXT passages support every part of the STATEMENT. Answer "yes" only if \
the passages state it or clearly imply it. Answer "no" if any part of it is missing from the \
passages or contradicts them, even when it is true: use only the CONTEXT, never your own \
knowledge.
{DATA_RULE}
Missing information: up to {MAX_MISSING} short pieces of information the QUESTION needs that no \
passage gives, each in a few words; an empty list when the passages give everything it needs.
Answer in the JSON format asked."""

#: position, the QUESTION alone (``position.relevant``)
RELEVANT_ENDING = "Does the PASSAGE answer the QUESTION? Answer yes or no."
#: position, with the reference (``position.relevant_answer``)
ANSWER_ENDING = "Does the PASSAGE state the EXPECTED ANSWER?"
#: position, with a response and no reference (``position.relevant_answer``)
RESPONSE_ANSWER_ENDING = "Does the PASSAGE state the answer the RESPONSE gives?"
#: relevance's grade (``relevance.grade``; also the baseline ask's)
GRADE_ENDING = "Grade the PASSAGE: 0, 1, 2 or 3?"
#: relevance's ``used`` (``relevance.used``)
USED_ENDING = "Does the RESPONSE repeat information from the PASSAGE? Answer yes or no."
#: recall's question, after the STATEMENT (``recall.supported``)
SUPPORTED_ENDING = "Do the CONTEXT passages support every part of the STATEMENT? Answer yes or no."
#: relevance's missing information (a generated list)
MISSING_ENDING = "What information does the QUESTION need that no CONTEXT passage gives?"

#: tells verdict text that repeats protocol 2's instructions from text about the item
COPIES = PromptCopies(
    "\n".join(
        [
            SYSTEM,
            ANSWER_SYSTEM,
            CONTEXT_SYSTEM,
            RELEVANT_ENDING,
            ANSWER_ENDING,
            RESPONSE_ANSWER_ENDING,
            GRADE_ENDING,
            USED_ENDING,
            SUPPORTED_ENDING,
            MISSING_ENDING,
            REASON_QUESTION,
        ]
    )
)


#: the same for protocol 3 (its answer, position and ``used`` endings are protocol 1's texts)
COPIES_3 = PromptCopies(
    "\n".join(
        [
            SYSTEM,
            CONTEXT_SYSTEM,
            RELEVANT_ENDING,
            RELEVANT_TARGET_QUESTION,
            GRADE_ENDING,
            USED_QUESTION,
            SUPPORTED_ENDING,
            MISSING_ENDING,
            REASON_QUESTION,
        ]
    )
)


def copies_of(protocol: str) -> PromptCopies:
    """What tells verdict text that repeats the instructions of ``protocol`` (protocol 1's:
    :data:`localjudge.metrics.instructions.COPIES`; protocol 2's: :data:`COPIES`; protocol
    3's: :data:`COPIES_3`)."""
    return {"1": PROTOCOL_1_COPIES, "3": COPIES_3}.get(protocol, COPIES)


def item_opening(item: Item) -> str:
    """What the asks of ``item`` that weigh an answer begin with: its EXPECTED ANSWER (the
    reference) and its RESPONSE, each on lines of its own where the item has one ('' when it
    has neither)."""
    blocks = [
        delimit(tag, text)
        for tag, text in (
            ("EXPECTED ANSWER", item.optional_text("reference")),
            ("RESPONSE", item.optional_text("response")),
        )
        if text
    ]
    return "".join(f"{block}\n" for block in blocks)


def position_ending(item: Item, protocol: str = "2") -> tuple[Decision, str, bool]:
    """Position's decision about a passage of ``item`` under ``protocol``, its ending and
    whether it weighs the item's opening (the kinds of protocol 1's same choice,
    :func:`localjudge.metrics.position.decision_for`). Protocol 2: whether the PASSAGE states
    the EXPECTED ANSWER (the reference), else the RESPONSE's answer, after the item's opening,
    else whether it answers the QUESTION (:data:`RELEVANT_ENDING`, after the passage's
    reading under :data:`SYSTEM`). Protocol 3: every one of them continues from that reading,
    with an answer by protocol 1's text
    (:func:`~localjudge.metrics.instructions.answer_ending`)."""
    target = item.optional_text("reference") or item.optional_text("response")
    if protocol == "3" and target:
        return RELEVANT_ANSWER, answer_ending(target), False
    if protocol == "2" and item.optional_text("reference"):
        return RELEVANT_ANSWER, ANSWER_ENDING, True
    if protocol == "2" and item.optional_text("response"):
        return RELEVANT_ANSWER, RESPONSE_ANSWER_ENDING, True
    return RELEVANT, RELEVANT_ENDING, False


def statement_ending(statement: str) -> str:
    """Recall's ending for one statement of the reference."""
    return f"{delimit('STATEMENT', statement)}\n{SUPPORTED_ENDING}"


def reason_point(content: str, *, explain: bool, reasons: bool) -> tuple[int, ...]:
    """The branch point an ask marks at its own end: ``(len(content),)`` for a decision whose
    reason is asked (``explain``, with reasons on), so the reason continues from it; none
    otherwise (keeping a state nothing continues from would only cost memory)."""
    return (len(content),) if explain and reasons else ()


def _request(
    system: str,
    parts: tuple[str, ...],
    ending: str,
    schema: type,
    *,
    read: bool,
    end: tuple[int, ...],
) -> JudgeRequest:
    """A request of the tree: ``system``, then ``parts`` (each a branch point where it ends:
    the item's opening, a passage or the contexts with the QUESTION, its QUESTION's tokens read
    when ``read``) and ``ending``; a branch point at ``end`` too."""
    shared = "".join(parts)
    points = tuple(itertools.accumulate(len(p) for p in parts if p))
    return JudgeRequest(
        messages=chat(system, shared + ending),
        schema=schema,
        shared_chars=len(shared),
        read_chars=question_span(shared) if read else None,
        branch_chars=(*points, *end),
    )


def passage_ask(
    item: Item,
    piece: str,
    ending: str,
    decision: Decision,
    *,
    at: int,
    answered: bool,
    explain: bool = True,
    reasons: bool = False,
) -> Ask:
    """A decision about one passage: that PASSAGE and the QUESTION, then ``ending``. One that
    weighs an answer (``answered``: position's with one, ``used``) begins with the item's
    opening; one that does not (the grade, position's on the QUESTION alone) reads the
    QUESTION's tokens, as the item's baseline ask does (:func:`baseline_ask`)."""
    opening = item_opening(item) if answered else ""
    middle = passage_opening(item.text("user_input"), piece)
    end = reason_point(opening + middle + ending, explain=explain, reasons=reasons)
    system = ANSWER_SYSTEM if answered else SYSTEM
    request = _request(
        system, (opening, middle), ending, decision.schema(), read=not answered, end=end
    )
    return Ask(request, decision, at, explain)


def baseline_ask(item: Item) -> Ask:
    """The item's baseline ask: a passage's layout with no passage (:data:`NO_PASSAGE`), the
    QUESTION read; the same for position and relevance (asked once). Its grade is not used."""
    middle = passage_opening(item.text("user_input"), NO_PASSAGE)
    request = _request(SYSTEM, (middle,), GRADE_ENDING, GRADE.schema(), read=True, end=())
    return Ask(request, GRADE, -1, explain=False, baseline=True)


def context_ask(
    item: Item,
    contexts: list[str],
    ending: str,
    decision: Decision | None,
    schema: type,
    *,
    at: int,
    explain: bool = True,
    reasons: bool = False,
) -> Ask:
    """An ask about all the contexts (recall's statement, ``decision`` SUPPORTED; relevance's
    missing information, ``decision`` None and its generated ``schema``): :data:`CONTEXT_SYSTEM`,
    the numbered CONTEXT passages and the QUESTION, then ``ending``. Not the item's opening: a
    statement of the reference shown in its EXPECTED ANSWER would read as supported."""
    middle = f"{contexts_opening(contexts)}{delimit_question(item.text('user_input'))}"
    end = reason_point(middle + ending, explain=explain, reasons=reasons)
    request = _request(CONTEXT_SYSTEM, (middle,), ending, schema, read=False, end=end)
    return Ask(request, decision, at, explain)


def supported_ask(
    item: Item, contexts: list[str], statement: str, *, at: int, reasons: bool
) -> Ask:
    """Recall's decision about one statement (:data:`SUPPORTED`)."""
    ending = statement_ending(statement)
    return context_ask(
        item, contexts, ending, SUPPORTED, SUPPORTED.schema(), at=at, reasons=reasons
    )
