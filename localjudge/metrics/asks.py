"""One decision per call: what a metric asks the judge, and how an answer becomes a verdict.

A metric turns an item into :class:`Ask` s. Each is a judge request whose output is one
:class:`Decision` (a statement's support, a passage's relevance, its grade, whether the
response used it) or, for relevance's ``missing``, one generated list. The runner makes the
calls; :func:`decide` reads a decision's soft value from the probabilities of its allowed values
and turns it into the hard value with the judge's cut-off for that kind of decision
(:class:`Cutoffs`; without one, the larger probability: P(yes) >= 0.5, the expected grade
rounded; :func:`~localjudge.judge.cutoffs.baseline`), so a verdict never contradicts its own
probabilities. Where the judge's cut-offs hold a fitted combination for the kind
(:class:`~localjudge.judge.cutoffs.Combination`), the probabilities are that function of the
decision's readings (:func:`readings`): its own soft value and how much better the judge
predicts the QUESTION after the passage than after the item's baseline ask (no passage).
With reasons on, the
runner then asks for one reason per decision (:func:`reason_request`): a call of its own that
shows the verdict already made, so a reason never moves a decision.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, create_model

from localjudge.canonical import compact_json
from localjudge.judge.cutoffs import NO_CUTOFFS, Cutoffs, baseline
from localjudge.judge.protocol import (
    Generation,
    GenerationStats,
    JudgeRequest,
    Reading,
    SoftDecision,
)
from localjudge.judge.schemas import StrictModel, text

__all__ = [
    "REASON_CHARS",
    "Answer",
    "Ask",
    "Cutoffs",
    "Decision",
    "decide",
    "decide_all",
    "list_centre",
    "readings",
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


def decide_all(
    asks: Sequence[Ask], generations: Sequence[Generation[BaseModel]], cutoffs: Cutoffs = NO_CUTOFFS
) -> list[Answer]:
    """The answers to an item's ``asks`` (:func:`decide`), each reading measured against the
    item's baseline ask, when it has one, and against the mean over the item's passages
    (:func:`list_centre`)."""
    base = next(
        (g.reading for a, g in zip(asks, generations, strict=True) if a.baseline and g.reading),
        None,
    )
    centre = list_centre(asks, generations)
    return [decide(a, g, cutoffs, base, centre) for a, g in zip(asks, generations, strict=True)]


def list_centre(asks: Sequence[Ask], generations: Sequence[Generation[BaseModel]]) -> float | None:
    """The mean, over an item's passages (each ``at`` once, the baseline left out), of how well
    each predicts the QUESTION; None when no call read it. Every passage of an item is read
    with the same QUESTION, so a passage's reading minus this mean does not move with what the
    QUESTION's language and form make likely, nor with the passages' order."""
    seen: dict[int, float] = {}
    for a, g in zip(asks, generations, strict=True):
        if not a.baseline and a.decision is not None and g.reading and g.reading.tokens:
            seen.setdefault(a.at, g.reading.mean)
    # fsum: exactly rounded, so the mean does not depend on the passages' order
    return math.fsum(seen.values()) / len(seen) if seen else None


def decide(
    ask: Ask,
    generation: Generation[BaseModel],
    cutoffs: Cutoffs = NO_CUTOFFS,
    base: Reading | None = None,
    centre: float | None = None,
) -> Answer:
    """The answer to ``ask`` from the judge's ``generation``: its soft value from the soft
    verdict on the decision's key, or from the kind's fitted combination of its readings where
    the cut-offs hold one, and the hard value from that and the kind's cut-offs (the baseline
    without them); a judge without soft verdicts gives the value it chose."""
    decision = ask.decision
    if decision is None:
        return Answer(generation.value)
    chosen = getattr(generation.value, decision.key)
    soft_verdict = next((d for d in generation.decisions if d.key == decision.key), None)
    if soft_verdict is None:
        return Answer(chosen)
    probs = plain_probs(soft_verdict)
    soft = soft_value(decision, probs)
    found = readings(decision, soft, generation.reading, base, centre)
    combination = cutoffs.combinations.get(decision.kind)
    combined = combination.probs(found) if combination is not None else None
    if combined is not None:
        probs = _value_probs(decision, combined)
        soft = soft_value(decision, probs)
    return Answer(hard_value(decision, soft, cutoffs), probs, soft, readings=found)


#: a yes/no decision's log-odds are clipped here (a probability of exactly 0 or 1)
LOG_ODDS_CLIP = 10.0


def readings(
    decision: Decision,
    soft: float,
    reading: Reading | None,
    base: Reading | None,
    centre: float | None = None,
) -> dict[str, float]:
    """A decision's readings (:data:`~localjudge.judge.cutoffs.READINGS`): ``judged``, its
    call's own soft value (a yes/no decision's log-odds, clipped; a graded one's expected
    grade); when the call read the QUESTION and the item has a baseline, ``question``: the
    mean log-probability of the QUESTION's tokens after the passage minus after no passage;
    and with the item's ``centre`` (:func:`list_centre`), ``question_centred``: that mean
    minus the centre."""
    if decision.graded:
        judged = soft
    else:
        p = min(max(soft, 1e-12), 1.0 - 1e-12)
        judged = min(max(math.log(p / (1.0 - p)), -LOG_ODDS_CLIP), LOG_ODDS_CLIP)
    found = {"judged": judged}
    if reading is not None and base is not None and reading.tokens and base.tokens:
        found["question"] = reading.mean - base.mean
    if reading is not None and centre is not None and reading.tokens:
        found["question_centred"] = reading.mean - centre
    return found


def _value_probs(decision: Decision, combined: Sequence[float]) -> dict[str, float]:
    """A combination's probabilities by plain value text."""
    if decision.graded:
        return {str(v): float(p) for v, p in zip(decision.values, combined, strict=True)}
    yes, no = decision.values[0], decision.values[1]
    return {str(yes): float(combined[0]), str(no): 1.0 - float(combined[0])}


def plain_probs(verdict: SoftDecision) -> dict[str, float]:
    """A soft verdict's probabilities by plain value text (``"yes"``, ``"2"``)."""
    return {_plain(v): float(p) for v, p in verdict.probs.items()}


def _plain(value_text: str) -> str:
    return str(json.loads(value_text)) if value_text.startswith('"') else value_text


def soft_value(decision: Decision, probs: Mapping[str, float]) -> float:
    """P(the positive value) for a yes/no decision; the expected grade for a graded one."""
    if decision.graded:
        return sum(int(v) * probs.get(str(v), 0.0) for v in decision.values)
    return probs.get(str(decision.values[0]), 0.0)


def hard_value(decision: Decision, soft: float, cutoffs: Cutoffs = NO_CUTOFFS) -> Any:
    """The decision's value: ``soft`` against the kind's cut-offs, or against the baseline (the
    larger probability) when the kind has none."""
    cuts = cutoffs.values.get(decision.kind) or baseline(decision.graded)
    if decision.graded:
        grades = sorted(int(v) for v in decision.values)
        return grades[min(sum(soft >= c for c in cuts), len(grades) - 1)]
    yes, no = decision.values[0], decision.values[1]
    return yes if soft >= cuts[0] else no


def reason_request(ask: Ask, answer: Answer) -> JudgeRequest:
    """The call that asks why ``ask`` got ``answer``: the decision's own prompt, then the verdict
    already made and the question. It shares the decision call's opening."""
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
