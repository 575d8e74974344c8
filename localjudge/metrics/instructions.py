"""The judge's instructions: one text for every metric, so that an item's metrics share a prefix.

Every prompt is laid out the same way (:func:`item_request`):

1. the system message: these instructions, the same for every item and every metric, so the
   judge evaluates them once (and stores the result beside its cache, for the next process);
2. the user message's opening: the item's QUESTION and numbered CONTEXT passages, the same for
   each of the item's metrics, so it is evaluated once per item and copied to each metric's
   request (``JudgeRequest.shared_chars`` marks where it ends);
3. the metric's tail: its own data (the reference's statements, the expected answer, the
   response) and the TASK line that says which of the tasks below to do.

The worked examples are invented (:class:`~localjudge.metrics.base.WorkedExample`), so a verdict
that repeats one is told from a verdict about the item (:data:`COPIES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from pydantic import BaseModel

from localjudge.metrics.base import (
    DATA_RULE,
    JudgeRequest,
    PromptCopies,
    WorkedExample,
    chat,
    delimit,
    numbered_contexts,
    reason_line,
)

__all__ = [
    "COPIES",
    "EXAMPLES",
    "MAX_MISSING",
    "POSITION_EXAMPLE",
    "RECALL_EXAMPLE",
    "RELEVANCE_EXAMPLE",
    "instructions",
    "item_request",
]

#: the most pieces of missing information relevance lists
MAX_MISSING = 3

RECALL_EXAMPLE = WorkedExample(
    data='CONTEXT 0: "Velmora is the capital of Ostria." STATEMENT 0: "Velmora is the capital of '
    'Ostria." STATEMENT 1: "It has two million inhabitants."',
    answer={
        "statements": [
            {"index": 0, "reason": "Context 0 says so.", "attributed": 1},
            {"index": 1, "reason": "No passage gives the population.", "attributed": 0},
        ]
    },
    names=("Velmora", "Ostria"),
)

POSITION_EXAMPLE = WorkedExample(
    data='QUESTION: "Who designed the Korvath Bridge?" CONTEXT 0: "Lunesse is a large port city." '
    'CONTEXT 1: "The Korvath Bridge was designed by Ilse Marrow."',
    answer={
        "verdicts": [
            {"index": 0, "reason": "It is about Lunesse, not the bridge.", "relevant": False},
            {"index": 1, "reason": "It names the designer of the bridge.", "relevant": True},
        ]
    },
    names=("Korvath", "Lunesse", "Ilse", "Marrow"),
)

RELEVANCE_EXAMPLE = WorkedExample(
    data='QUESTION: "Who designed the Korvath Bridge and when did it open?" CONTEXT 0: "The '
    'Korvath Bridge was designed by Ilse Marrow." CONTEXT 1: "Lunesse is a large port city." '
    'RESPONSE: "Ilse Marrow designed it."',
    answer={
        "pieces": [
            {"index": 0, "reason": "It names the designer.", "relevance": "high", "used": True},
            {"index": 1, "reason": "It is about Lunesse.", "relevance": "none", "used": False},
        ],
        "missing": ["the year the Korvath Bridge opened"],
    },
    names=("Korvath", "Lunesse", "Ilse", "Marrow"),
)

EXAMPLES = (RECALL_EXAMPLE, POSITION_EXAMPLE, RELEVANCE_EXAMPLE)

RELEVANT_RULE = (
    '- "relevant": true if the passage states any part of the answer or a fact the answer needs; '
    "false if it is about something else or only mentions the topic."
)

LEVEL_RULE = (
    '- "relevance": "high" if the passage directly answers the QUESTION, "medium" if it gives '
    'supporting information, "low" if it is only on a related topic, "none" if it is irrelevant;'
)


@lru_cache(maxsize=2)
def instructions(reasons: bool = True) -> str:
    """The instructions of every metric (with or without a reason per verdict)."""
    recall_reason = reason_line(
        reasons,
        "one short English sentence naming the CONTEXT passage that states the fact, or saying "
        "that no passage states it",
    )
    return f"""You judge the passages a search system retrieved. You get a QUESTION, numbered \
CONTEXT passages, then the data of one TASK and a line naming it. Do only that TASK, and answer \
in its JSON format.
{DATA_RULE}

TASK recall. You also get numbered STATEMENTs from a reference answer. Be a strict fact checker.
Give exactly one verdict per STATEMENT, in order, starting at index 0:
- "index": the statement number;
{recall_reason}- "attributed": 1 only if a CONTEXT passage states the statement or clearly \
implies it; 0 if no passage does, even when it is true. Use only the CONTEXT, never your own \
knowledge.
{RECALL_EXAMPLE.render(reasons=reasons)}

TASK position. Judge whether each CONTEXT passage helps to answer the QUESTION. The EXPECTED \
ANSWER, when given, shows what a helpful passage must contain.
Give exactly one verdict per CONTEXT passage, in order, starting at index 0:
- "index": the passage number;
{reason_line(reasons)}{RELEVANT_RULE}
{POSITION_EXAMPLE.render(reasons=reasons)}

TASK relevance. Grade how relevant each CONTEXT passage is to the QUESTION, and whether a \
RESPONSE used it.
Give exactly one evaluation per CONTEXT passage, in order, starting at index 0:
- "index": the passage number;
{reason_line(reasons)}{LEVEL_RULE}
- "used": true if the RESPONSE repeats information from this passage, false otherwise.
Then "missing": up to {MAX_MISSING} short pieces of information the QUESTION needs that no \
passage gives; an empty list when nothing is missing.
{RELEVANCE_EXAMPLE.render(reasons=reasons)}"""


#: tells verdict text that repeats the instructions or an example from text about the item
COPIES = PromptCopies(instructions(), EXAMPLES)


def item_request(
    system: str,
    question: str,
    contexts: Sequence[str],
    *,
    tail: Sequence[str],
    task: str,
    schema: type[BaseModel],
) -> JudgeRequest:
    """A metric's request for an item: the instructions, the item's QUESTION and CONTEXT
    passages (the part its metrics share), then the metric's own data blocks and its TASK
    line."""
    shared = f"{delimit('QUESTION', question)}\n{numbered_contexts(contexts)}\n"
    own = "\n".join([*tail, task])
    return JudgeRequest(
        messages=chat(system, shared + own), schema=schema, shared_chars=len(shared)
    )
