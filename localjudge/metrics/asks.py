"""One decision per call: what a metric asks the judge, and what an answer holds.

A metric turns an item into :class:`Ask` s. Each is a judge request whose output is one
:class:`Decision` (a statement's support, a passage's relevance, its grade, whether the
response used it) or, for relevance's ``missing``, one generated list. The runner makes the
calls and turns each into an :class:`Answer` with the decisions core
(:func:`localjudge.decisions.decide_all`: the soft value, the readings, the judge's cut-offs).
With reasons on, the runner then asks for one reason per decision (:func:`reason_request`): a
call of its own that shows the verdict already made, so a reason never moves a decision.
The metric gets its answers as :class:`Answers`, each found by what its ask is
(:attr:`Ask.key`: the kind of decision and the statement or piece it is about), never by its
place in a list.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, create_model

from localjudge.canonical import compact_json
from localjudge.judge.protocol import GenerationStats, JudgeRequest
from localjudge.judge.schemas import StrictModel, text

__all__ = [
    "REASON_CHARS",
    "Answer",
    "Answers",
    "Ask",
    "AskKey",
    "Decision",
    "reason_request",
    "reason_schema",
    "sum_stats",
]

#: reasons are short English sentences; ASCII keeps their worst case at one token per character
REASON_CHARS = 120

#: the question that follows a verdict in a reason call
REASON_QUESTION = "In one short English sentence, give the reason for this verdict."


@dataclass(frozen=True)
class Decision:
    """A kind of decision: the one key of its call's output and the values it may take.

    ``values`` are the plain values, in order: a yes/no decision lists its positive value first
    (its soft value is the probability of that value); a graded one lists its grades lowest first
    (its soft value is the expected grade). ``kind`` names it for cut-offs
    (``"recall.supported"``).
    """

    kind: str
    key: str
    values: tuple[str, ...] | tuple[int, ...]

    @property
    def graded(self) -> bool:
        return all(isinstance(v, int) for v in self.values)

    def schema(self) -> type[BaseModel]:
        """The output schema of a call that asks this decision: ``{key: value}``."""
        return _schema(self.key, self.values)


@lru_cache(maxsize=64)
def _schema(key: str, values: tuple[Any, ...]) -> type[BaseModel]:
    name = "".join(part.capitalize() for part in key.split("_")) + "Decision"
    choice = Literal.__getitem__(values)
    fields: dict[str, Any] = {key: (choice, ...)}
    model: type[BaseModel] = create_model(name, __base__=StrictModel, **fields)
    return model


@lru_cache(maxsize=1)
def reason_schema() -> type[BaseModel]:
    """The output schema of a reason call: ``{"reason": one short ASCII sentence}``."""
    model: type[BaseModel] = create_model(
        "Reason", __base__=StrictModel, reason=(text(REASON_CHARS, ascii_only=True), ...)
    )
    return model


@dataclass(frozen=True)
class Ask:
    """One judge call a metric needs: a request ending on ``decision``, or a generated output
    (``decision`` None: relevance's ``missing``); ``at`` is the statement or piece it is about;
    ``explain``: whether a reason is asked for this decision when reasons are on;
    ``baseline``: the item's ask whose reading the others' readings are measured against (the
    QUESTION after no passage; its own answer is not used)."""

    request: JudgeRequest
    decision: Decision | None = None
    at: int = 0
    explain: bool = True
    baseline: bool = False

    @property
    def key(self) -> AskKey:
        """What this ask is, the key its answer is found by (:class:`Answers`): the baseline;
        a kind of decision and the statement or piece it is about; or a generated output,
        by its schema (one per item)."""
        if self.baseline:
            return AskKey(BASELINE, None)
        if self.decision is not None:
            return AskKey(self.decision.kind, self.at)
        return AskKey(self.request.schema.__name__, None)


#: the ``what`` of the baseline ask's key
BASELINE = "baseline"


class AskKey(NamedTuple):
    """What an ask is: ``what`` it asks (``"baseline"``, a kind of decision such as
    ``"relevance.grade"``, or a generated output's schema name) and the statement or piece it
    is ``at`` (None for what is about the whole item)."""

    what: str
    at: int | None


@dataclass(frozen=True)
class Answer:
    """What an :class:`Ask` got: the decided value (after cut-offs) or, for a generated ask, the
    validated output; the probability of each allowed value and the soft value when the judge
    gives them; the reason when one was asked for."""

    value: Any
    probs: Mapping[str, float] | None = None
    soft: float | None = None
    reason: str | None = None
    #: the readings the soft value may combine (:func:`readings`); None without soft verdicts
    readings: Mapping[str, float] | None = None
    #: when the soft value lies within the close-call margin of a cut-off it was decided against
    #: (:func:`localjudge.decisions.close_call`), its signed distance to that cut-off, rounded;
    #: None otherwise and without soft verdicts
    close_call: float | None = None


class Answers:
    """An item's answers, each found by what its ask is (:attr:`Ask.key`): a metric asks for
    "passage 2's grade" (:meth:`to`), never for the answer in some place of a list.

    Built from the asks and the answers :func:`localjudge.decisions.decide_all` gave them, in
    the asks' order: the one place that order is relied on."""

    def __init__(self, asks: Sequence[Ask], answers: Sequence[Answer]) -> None:
        self._by_key: dict[AskKey, Answer] = {}
        for ask, answer in zip(asks, answers, strict=True):
            if ask.key in self._by_key:
                raise ValueError(f"two asks of one item are {ask.key}")
            self._by_key[ask.key] = answer

    def __getitem__(self, ask: Ask) -> Answer:
        """The answer to ``ask``."""
        return self._by_key[ask.key]

    def __len__(self) -> int:
        return len(self._by_key)

    def to(self, decision: Decision, at: int) -> Answer:
        """The answer to the ``decision`` about statement or piece ``at``."""
        return self._by_key[AskKey(decision.kind, at)]

    def generated(self, schema: type[BaseModel]) -> Answer:
        """The answer to the item's ask that generates an output of ``schema``."""
        return self._by_key[AskKey(schema.__name__, None)]

    @property
    def baseline(self) -> Answer | None:
        """The answer to the item's baseline ask (None: it has none)."""
        return self._by_key.get(AskKey(BASELINE, None))

    def with_reason(self, ask: Ask, reason: str) -> Answers:
        """These answers, ``ask``'s with ``reason``."""
        new = Answers([], [])
        new._by_key = {**self._by_key, ask.key: replace(self[ask], reason=reason)}
        return new


def reason_request(ask: Ask, answer: Answer) -> JudgeRequest:
    """The call that asks why ``ask`` got ``answer``: the decision's own prompt, then the verdict
    already made and the question. It shares the decision call's opening and its branch points
    (protocol 2 marks the decision's own end among them: the reason continues from there)."""
    assert ask.decision is not None
    messages = list(ask.request.messages)
    last = messages[-1]
    verdict = compact_json({ask.decision.key: answer.value})
    content = f"{last['content']}\nVERDICT: {verdict}\n{REASON_QUESTION}"
    return JudgeRequest(
        messages=[*messages[:-1], {"role": last["role"], "content": content}],
        schema=reason_schema(),
        origin=ask.request.origin,
        shared_chars=ask.request.shared_chars,
        branch_chars=ask.request.branch_chars,
    )


def sum_stats(stats: Sequence[GenerationStats]) -> GenerationStats | None:
    """The token counts and seconds of several calls, added up (None when there are none)."""
    if not stats:
        return None
    return GenerationStats(
        prompt_tokens=sum(s.prompt_tokens for s in stats),
        evaluated_prompt_tokens=sum(s.evaluated_prompt_tokens for s in stats),
        completion_tokens=sum(s.completion_tokens for s in stats),
        seconds=sum(s.seconds for s in stats),
    )
