"""How an answer becomes a verdict: a decision's soft value, its readings, and its hard value.

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
from typing import Any

from pydantic import BaseModel

from localjudge.decisions.cutoffs import NO_CUTOFFS, Cutoffs
from localjudge.decisions.kinds import neutral
from localjudge.judge.protocol import Generation, Reading, SoftDecision
from localjudge.metrics.asks import Answer, Ask, Decision

__all__ = [
    "CLOSE_CALL_MARGINS",
    "LOG_ODDS_CLIP",
    "close_call",
    "close_call_margin",
    "cutoff_distance",
    "decide",
    "decide_all",
    "hard_value",
    "plain_probs",
    "readings",
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
    soft = soft_value(decision, probs)
    found = readings(decision.graded, soft, generation.reading, base)
    combination = cutoffs.combinations.get(decision.kind)
    combined = combination.probs(found) if combination is not None else None
    if combined is not None:
        probs = _value_probs(decision, combined)
        soft = soft_value(decision, probs)
    value = hard_value(decision, soft, cutoffs)
    close = close_call(decision, soft, cutoffs)
    return Answer(value, probs, soft, readings=found, close_call=close)


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
    """The decision's value: ``soft`` against the kind's cut-offs, or against the neutral ones
    (the larger probability) when the kind has none."""
    cuts = _cuts(decision, cutoffs)
    if decision.graded:
        grades = sorted(int(v) for v in decision.values)
        return grades[min(sum(soft >= c for c in cuts), len(grades) - 1)]
    yes, no = decision.values[0], decision.values[1]
    return yes if soft >= cuts[0] else no


def _cuts(decision: Decision, cutoffs: Cutoffs) -> tuple[float, ...]:
    """The cut-offs ``decision`` is decided against: the kind's, else the neutral ones."""
    return tuple(cutoffs.values.get(decision.kind) or neutral(decision.graded))


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
    (:func:`hard_value`'s: the kind's, else the neutral ones): ``soft`` minus that cut-off, so
    >= 0 on the side of the higher value. A graded decision takes the nearest of its cut-offs."""
    return soft - min(_cuts(decision, cutoffs), key=lambda cut: abs(soft - cut))


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
