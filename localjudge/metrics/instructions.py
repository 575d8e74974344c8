"""Protocol 1's prompts: a short text per kind of call, each call ending on one decision
(protocol 2's: :mod:`localjudge.metrics.branched`).

Every call is laid out the same way (:func:`ask_request`):

1. the system message: the instructions of that kind of call, the same for every item, so the
   judge evaluates them once (and stores the result beside its cache, for the next process);
2. the user message's opening: the data the call shares with its neighbours (recall: the
   item's CONTEXT passages, shared by its statements' calls; position and relevance: one
   PASSAGE, then the QUESTION, shared by that passage's calls), evaluated once for all of them
   (``JudgeRequest.shared_chars`` marks where it ends). A passage's calls read the QUESTION's
   tokens as they are evaluated (``JudgeRequest.read_chars``): how well the passage predicts
   the question, against the item's baseline call, which shows no passage
   (:func:`baseline_ask`);
3. the call's own data (a STATEMENT, the EXPECTED ANSWER, the RESPONSE) and its question.

The passage calls of position and relevance share one system text, so a passage read for one
metric is reused by the other. The grades are TREC's. No worked example: a small judge copies
an example's verdict order instead of reading the data.
"""

from __future__ import annotations

from localjudge.judge.protocol import JudgeRequest
from localjudge.metrics.asks import REASON_QUESTION, Ask, Decision
from localjudge.metrics.base import DATA_RULE, PromptCopies, chat, delimit, numbered_contexts

__all__ = [
    "COPIES",
    "GRADE",
    "MAX_MISSING",
    "MISSING_SYSTEM",
    "NO_PASSAGE",
    "PASSAGE_SYSTEM",
    "RECALL_SYSTEM",
    "RELEVANT",
    "RELEVANT_ANSWER",
    "RELEVANT_QUESTION",
    "RELEVANT_TARGET_QUESTION",
    "SUPPORTED",
    "USED",
    "USED_QUESTION",
    "answer_ending",
    "ask_request",
    "baseline_ask",
    "contexts_opening",
    "delimit_question",
    "passage_ask",
    "passage_opening",
    "question_span",
    "used_ending",
]

#: the most pieces of missing information relevance lists
MAX_MISSING = 3

#: recall: does the context support a statement of the reference?
SUPPORTED = Decision("recall.supported", "supported", ("yes", "no"))
#: position: is a passage relevant (TREC grade 2 or 3)?
RELEVANT = Decision("position.relevant", "relevant", ("yes", "no"))
#: position, for an item with a reference or a response: does a passage give the EXPECTED
#: ANSWER? Another prompt, so a kind (and cut-off) of its own
RELEVANT_ANSWER = Decision("position.relevant_answer", "relevant", ("yes", "no"))
#: relevance: a passage's TREC grade (0 none, 1 low, 2 medium, 3 high)
GRADE = Decision("relevance.grade", "grade", (0, 1, 2, 3))
#: relevance: did the response use a passage? Its output key names what the question asks:
#: under a key "used" the default judge said "no" even to a response copied from the passage
USED = Decision("relevance.used", "repeats", ("yes", "no"))

RECALL_SYSTEM = f"""You are a careful fact checker. You get CONTEXT passages and one STATEMENT \
from a reference answer. Decide whether the CONTEXT passages support every part of the STATEMENT.
Answer "yes" only if the passages state it or clearly imply it. Answer "no" if any part of it is \
missing from the passages or contradicts them, even when it is true: use only the CONTEXT, never \
your own knowledge.
{DATA_RULE}
Answer in the JSON format asked."""

PASSAGE_SYSTEM = f"""You judge one PASSAGE that a search system retrieved for a QUESTION.
{DATA_RULE}
Grades of a passage:
3: the passage is dedicated to the QUESTION and contains the exact answer.
2: the passage answers the QUESTION, but the answer is unclear or buried among other information.
1: the passage is on the topic of the QUESTION but does not answer it.
0: the passage has nothing to do with the QUESTION.
Answer the one question asked at the end, in the JSON format asked."""

MISSING_SYSTEM = f"""You check whether retrieved CONTEXT passages hold everything a QUESTION \
needs.
{DATA_RULE}
List up to {MAX_MISSING} short pieces of information the QUESTION needs that no passage gives, \
each in a few words; an empty list when the passages give everything it needs.
Answer in the JSON format asked."""

RECALL_QUESTION = "Do the CONTEXT passages support every part of the STATEMENT? Answer yes or no."
RELEVANT_QUESTION = (
    "Does the PASSAGE answer the QUESTION, fully or in part (grade 2 or 3)? Answer yes or no."
)
RELEVANT_TARGET_QUESTION = (
    "The EXPECTED ANSWER shows what the QUESTION asks for. Does the PASSAGE give that answer, "
    "fully or in part (grade 2 or 3)? Answer yes or no."
)
GRADE_QUESTION = "Grade the PASSAGE: 0, 1, 2 or 3?"
USED_QUESTION = "Does the RESPONSE repeat information from the PASSAGE? Answer yes or no."
MISSING_QUESTION = "What information does the QUESTION need that no CONTEXT passage gives?"


def answer_ending(target: str) -> str:
    """What position's call with an answer ends on (protocols 1 and 3): the EXPECTED ANSWER
    (the item's reference, else its response), then whether the PASSAGE gives it."""
    return f"{delimit('EXPECTED ANSWER', target)}\n{RELEVANT_TARGET_QUESTION}"


def used_ending(response: str) -> str:
    """What relevance's ``used`` call ends on (protocols 1 and 3): the RESPONSE, then whether it
    repeats information from the PASSAGE."""
    return f"{delimit('RESPONSE', response)}\n{USED_QUESTION}"


#: tells verdict text that repeats the instructions from text about the item
COPIES = PromptCopies(
    "\n".join(
        [
            RECALL_SYSTEM,
            PASSAGE_SYSTEM,
            MISSING_SYSTEM,
            RECALL_QUESTION,
            RELEVANT_QUESTION,
            RELEVANT_TARGET_QUESTION,
            GRADE_QUESTION,
            USED_QUESTION,
            MISSING_QUESTION,
            REASON_QUESTION,
        ]
    )
)


def ask_request(
    system: str,
    shared: str,
    own: str,
    decision: Decision,
    *,
    at: int = 0,
    explain: bool = True,
    read: tuple[int, int] | None = None,
    baseline: bool = False,
) -> Ask:
    """An :class:`Ask` for ``decision``: the instructions, the ``shared`` opening of the user
    message, then the call's ``own`` data and question; ``read``: the span of ``shared`` whose
    tokens the judge reads."""
    request = JudgeRequest(
        messages=chat(system, shared + own),
        schema=decision.schema(),
        shared_chars=len(shared),
        read_chars=read,
    )
    return Ask(request, decision, at, explain, baseline)


def passage_ask(shared: str, own: str, decision: Decision, *, at: int, explain: bool = True) -> Ask:
    """A passage's call (position's, relevance's): :data:`PASSAGE_SYSTEM`, the passage's
    ``shared`` opening (:func:`passage_opening`) with its QUESTION read, then ``own``."""
    return ask_request(
        PASSAGE_SYSTEM, shared, own, decision, at=at, explain=explain, read=question_span(shared)
    )


#: what the baseline call shows in place of a passage
NO_PASSAGE = "(none)"


def baseline_ask(question: str) -> Ask:
    """The item's baseline call: the passage calls' layout with no passage (:data:`NO_PASSAGE`),
    its QUESTION read; the same call for position and relevance (asked once). Its decision (a
    grade) is not used."""
    shared = passage_opening(question, NO_PASSAGE)
    return ask_request(
        PASSAGE_SYSTEM,
        shared,
        GRADE_QUESTION,
        GRADE,
        at=-1,
        explain=False,
        read=question_span(shared),
        baseline=True,
    )


def delimit_question(question: str) -> str:
    """The QUESTION block, on a line of its own."""
    return f"{delimit('QUESTION', question)}\n"


def passage_opening(question: str, passage: str) -> str:
    """What a passage's calls share: that PASSAGE, then the QUESTION (read as evaluated:
    :func:`question_span`)."""
    return f"{delimit('PASSAGE', passage)}\n{delimit('QUESTION', question)}\n"


_QUESTION_OPEN, _QUESTION_CLOSE = "<<QUESTION>>\n", "\n<</QUESTION>>"


def question_span(opening: str) -> tuple[int, int]:
    """Where the QUESTION's text lies in a passage opening (its last QUESTION block: data can
    never spell a marker, :func:`~localjudge.metrics.base.delimit`)."""
    start = opening.rindex(_QUESTION_OPEN) + len(_QUESTION_OPEN)
    return start, opening.rindex(_QUESTION_CLOSE)


def contexts_opening(contexts: list[str]) -> str:
    """What an item's recall calls share: its numbered CONTEXT passages."""
    return f"{numbered_contexts(contexts)}\n"
