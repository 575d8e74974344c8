"""How an answer becomes a verdict: a decision's soft value, its readings, and its hard value.

There is one way from probabilities to a soft value (:func:`soft_value`) and one from a soft
value to a hard one (:func:`hard_value`), and one way to put them together for a decision of
a kind (:func:`ruling`): the product's verdicts (``eval``, through :func:`decide`),
``localjudge calibrate``, the bundled judges' build (``fitting/build.py``) and their sealed
figures (``fitting/sealed.py``) all decide through them, so a figure the build measures counts
the verdicts ``eval`` makes on the same rows.

:func:`decide` reads a decision's soft value from the probabilities of its allowed values and
turns it into the hard value with the judge's cut-off for that kind of decision
(:class:`~localjudge.decisions.cutoffs.Cutoffs`; without one, the neutral cut-offs, the larger
probability: P(yes) >= 0.5, the expected grade rounded;
:func:`~localjudge.decisions.kinds.neutral`), so a verdict never contradicts its own
probabilities. Where the judge's cut-offs hold a fitted
combination for the kind (:class:`~localjudge.decisions.cutoffs.Combination`), the
probabilities are that function of the decision's readings (:func:`readings`): its own soft
value, how much better the judge predicts the QUESTION after the passage than after the
item's baseline ask (no passage), and how well it predicts it after no passage. No reading
looks at the item's other passages.

A verdict whose soft value lies within its kind's margin (:data:`CLOSE_CALL_MARGINS`) of a
cut-off it was decided against is a *close call* (:func:`close_call`): llama.cpp's arithmetic
differs from one machine to another, so such a verdict can go the other way elsewhere.

Everything here is a pure function of its arguments.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from localjudge.decisions.cutoffs import NO_CUTOFFS, Cutoffs
from localjudge.judge.protocol import Generation, Reading, SoftDecision
from localjudge.metrics.asks import Answer, Ask, Decision

__all__ = [
    "CLOSE_CALL_MARGINS",
    "LOG_ODDS_CLIP",
    "Ruling",
    "close_call",
    "close_call_margin",
    "combined_probs",
    "cutoff_distance",
    "decide",
    "decide_all",
    "hard_value",
    "plain_probs",
    "readings",
    "ruling",
    "soft_value",
]


def decide_all(
    asks: Sequence[Ask], generations: Sequence[Generation[BaseModel]], cutoffs: Cutoffs = NO_CUTOFFS
) -> list[Answer]:
    """The answers to an item's ``asks`` (:func:`decide`), each reading measured against the
    item's baseline ask when it has one. An answer is a function of its own ask, its own
    generation and the baseline (the QUESTION after no passage): never of the item's other
    passages, their number or their order."""
    base = next(
        (g.reading for a, g in zip(asks, generations, strict=True) if a.baseline and g.reading),
        None,
    )
    return [decide(a, g, cutoffs, base) for a, g in zip(asks, generations, strict=True)]


def decide(
    ask: Ask,
    generation: Generation[BaseModel],
    cutoffs: Cutoffs = NO_CUTOFFS,
    base: Reading | None = None,
) -> Answer:
    """The answer to ``ask`` from the judge's ``generation``: its soft value from the soft
    verdict on the decision's key, or from the kind's fitted combination of its readings where
    the cut-offs hold one, and the hard value from that and the kind's cut-offs (the neutral ones
    without them); a judge without soft verdicts gives the value it chose."""
    decision = ask.decision
    if decision is None:
        return Answer(generation.value)
    chosen = getattr(generation.value, decision.key)
    soft_verdict = next((d for d in generation.decisions if d.key == decision.key), None)
    if soft_verdict is None:
        return Answer(chosen)
    probs = plain_probs(soft_verdict)
    own = soft_value(_in_order(decision, probs))
    found = readings(decision.graded, own, generation.reading, base)
    made = ruling(decision.kind, own, found, cutoffs)
    if made.combined is not None:
        probs = _by_value(decision, made.combined)
    value = _value(decision, made.hard)
    close = close_call(decision, made.soft, cutoffs)
    return Answer(value, probs, made.soft, readings=found, close_call=close)


@dataclass(frozen=True)
class Ruling:
    """A decision as :func:`ruling` makes it: its ``hard`` value (:func:`hard_value`: 0 or 1 for
    a yes/no decision, the grade for a graded one), the ``soft`` value it was decided on, and
    ``combined``: the probability of each hard value, lowest first, where the kind's
    combination of readings made the soft value (None: the call's own soft value did)."""

    hard: int
    soft: float
    combined: tuple[float, ...] | None = None


def ruling(kind: str, own: float, found: Mapping[str, float], cutoffs: Cutoffs) -> Ruling:
    """A decision of ``kind`` from its call's own soft value ``own`` and its readings ``found``
    (:func:`readings`): the soft value is the kind's combination of the readings where
    ``cutoffs`` hold one and ``found`` has every reading it weighs (:func:`combined_probs`,
    then :func:`soft_value`), else ``own``; the hard value is that against the kind's cut-offs,
    the neutral ones without them (:meth:`~localjudge.decisions.cutoffs.Cutoffs.of`). What
    :func:`decide` does after reading the call, and what ``fitting/build.py`` and
    ``fitting/sealed.py`` do to each judged row."""
    combined = combined_probs(kind, found, cutoffs)
    soft = own if combined is None else soft_value(combined)
    return Ruling(hard_value(soft, cutoffs.of(kind)), soft, combined)


def combined_probs(
    kind: str, found: Mapping[str, float], cutoffs: Cutoffs
) -> tuple[float, ...] | None:
    """The probability of each hard value, lowest first (:func:`soft_value`'s order), under
    the combination of readings ``cutoffs`` hold for ``kind``; None when they hold none, or
    ``found`` lacks a reading it weighs."""
    combination = cutoffs.combinations.get(kind)
    return None if combination is None else combination.levels(found)


#: a yes/no decision's log-odds are clipped here (a probability of exactly 0 or 1)
LOG_ODDS_CLIP = 10.0


def readings(
    graded: bool, soft: float, reading: Reading | None, base: Reading | None
) -> dict[str, float]:
    """A decision's readings (:data:`~localjudge.decisions.kinds.READINGS`): ``judged``, its
    call's own soft value (a yes/no decision's log-odds, clipped; a graded one's expected
    grade); when the call read the QUESTION and the item has a baseline, ``question``: the
    mean log-probability of the QUESTION's tokens after the passage minus after no passage,
    and ``question_alone``: that mean after no passage."""
    if graded:
        judged = soft
    else:
        p = min(max(soft, 1e-12), 1.0 - 1e-12)
        judged = min(max(math.log(p / (1.0 - p)), -LOG_ODDS_CLIP), LOG_ODDS_CLIP)
    found = {"judged": judged}
    if reading is not None and base is not None and reading.tokens and base.tokens:
        found["question"] = reading.mean - base.mean
        found["question_alone"] = base.mean
    return found


def _by_value(decision: Decision, levels: Sequence[float]) -> dict[str, float]:
    """The probability of each hard value, lowest first, by plain value text."""
    if decision.graded:
        return {str(v): float(p) for v, p in zip(decision.values, levels, strict=True)}
    yes, no = decision.values[0], decision.values[1]
    return {str(yes): float(levels[1]), str(no): float(levels[0])}


def _in_order(decision: Decision, probs: Mapping[str, float]) -> tuple[float, ...]:
    """Probabilities by plain value text as the probability of each hard value, lowest first
    (a value the judge gave none: 0)."""
    if decision.graded:
        return tuple(probs.get(str(v), 0.0) for v in decision.values)
    yes, no = decision.values[0], decision.values[1]
    return (probs.get(str(no), 0.0), probs.get(str(yes), 0.0))


def _value(decision: Decision, hard: int) -> Any:
    """The plain value of hard value ``hard``: a grade, or a yes/no decision's yes (1) or no."""
    if decision.graded:
        grades = sorted(int(v) for v in decision.values)
        return grades[min(hard, len(grades) - 1)]
    return decision.values[0] if hard else decision.values[1]


def plain_probs(verdict: SoftDecision) -> dict[str, float]:
    """A soft verdict's probabilities by plain value text (``"yes"``, ``"2"``)."""
    return {_plain(v): float(p) for v, p in verdict.probs.items()}


def _plain(value_text: str) -> str:
    return str(json.loads(value_text)) if value_text.startswith('"') else value_text


def soft_value(probs: Sequence[float]) -> float:
    """The one way from probabilities to a soft value: the expected hard value, where
    ``probs`` is the probability of each hard value, lowest first (:func:`hard_value`'s
    values). A yes/no decision's (P(no), P(yes)) give P(yes); a graded one's P(grade 0) ...
    P(grade 3) give the expected grade."""
    return sum(v * p for v, p in enumerate(probs))


def hard_value(soft: float, cutoffs: Sequence[float]) -> int:
    """The one way from a soft value to a hard one: how many of the ascending ``cutoffs``
    ``soft`` reaches (at a cut-off counts). A yes/no decision (one cut-off on P(yes)): 1 for
    yes, 0 for no; a graded one (three on the expected grade): the grade. Without fitted
    cut-offs a kind takes the neutral ones
    (:meth:`~localjudge.decisions.cutoffs.Cutoffs.of`)."""
    return sum(1 for c in cutoffs if soft >= c)


#: per kind of decision, how near its cut-off a soft value makes its verdict a close call
#: (:func:`close_call`): for a yes/no kind in log-odds (the distance between the log-odds of
#: P(yes) and of the cut-off), for a graded kind in expected grade. Fixed by measurement
#: (docs/reliability.md, "Close calls"): the default judge's soft values of the same calls,
#: judged by two llama.cpp builds (AVX-512 and AVX2), move by up to two thirds of these
#: margins (thread counts and batch sizes move nothing); a verdict nearer its cut-off can go
#: the other way on another machine. Log-odds, because a build moves a probability near one
#: half more than one near 0 or 1 by the same change of the model's logits. A kind not listed
#: takes the widest.
CLOSE_CALL_MARGINS: Mapping[str, float] = {
    "recall.supported": 0.26,
    "relevance.used": 0.37,
    "position.relevant": 0.34,
    "position.relevant_answer": 1.6,
    "relevance.grade": 0.12,
}


def close_call_margin(kind: str) -> float:
    """The close-call margin of ``kind`` (:data:`CLOSE_CALL_MARGINS`: log-odds for a yes/no
    kind, expected grade for a graded one; a kind it does not list takes the widest)."""
    return CLOSE_CALL_MARGINS.get(kind, max(CLOSE_CALL_MARGINS.values()))


def cutoff_distance(decision: Decision, soft: float, cutoffs: Cutoffs = NO_CUTOFFS) -> float:
    """The signed distance of ``soft`` to the nearest cut-off it is decided against
    (the kind's, else the neutral ones: :meth:`~localjudge.decisions.cutoffs.Cutoffs.of`):
    ``soft`` minus that cut-off, so >= 0 on the side of the higher value. A graded decision
    takes the nearest of its cut-offs."""
    return soft - min(cutoffs.of(decision.kind), key=lambda cut: abs(soft - cut))


def close_call(decision: Decision, soft: float, cutoffs: Cutoffs = NO_CUTOFFS) -> float | None:
    """:func:`cutoff_distance` rounded to 4 decimals when the verdict is a close call, else
    None: when the soft value lies within the kind's margin of that cut-off
    (:func:`close_call_margin`), a yes/no decision's in log-odds, a graded one's in grade."""
    distance = cutoff_distance(decision, soft, cutoffs)
    gap = abs(distance)
    if not decision.graded:
        gap = abs(_log_odds(soft) - _log_odds(soft - distance))
    return round(distance, 4) if gap <= close_call_margin(decision.kind) else None


def _log_odds(p: float) -> float:
    p = min(max(p, 1e-12), 1.0 - 1e-12)
    return math.log(p / (1.0 - p))
