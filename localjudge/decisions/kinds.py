"""The kinds of decision the metrics make, and the readings a decision gives.

Every kind is named in :data:`KINDS`, with how many cut-offs it takes and the range of its soft
value. A kind without fitted cut-offs takes the **neutral** cut-offs, the larger probability
(:func:`neutral`): a yes/no decision is yes when P(yes) >= 0.5, a graded one (0-3) takes its
expected grade against 0.5 / 1.5 / 2.5, so a verdict never contradicts its own probabilities.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "COMBINED_READINGS",
    "KINDS",
    "READINGS",
    "RETIRED_READINGS",
    "KindSpec",
    "kinds_of",
    "neutral",
]


@dataclass(frozen=True)
class KindSpec:
    """A kind of decision: how many ascending cut-offs it takes, and the range of its soft
    value (P(yes) in [0, 1]; the expected grade in [0, 3])."""

    count: int
    high: float

    @property
    def graded(self) -> bool:
        return self.count > 1


_YES_NO = KindSpec(1, 1.0)
_GRADE = KindSpec(3, 3.0)

#: every kind of decision the metrics make (``metrics/instructions.py`` names them)
KINDS: Mapping[str, KindSpec] = {
    "recall.supported": _YES_NO,
    "position.relevant": _YES_NO,
    "position.relevant_answer": _YES_NO,
    "relevance.grade": _GRADE,
    "relevance.used": _YES_NO,
}


def kinds_of(metrics: Iterable[str]) -> frozenset[str]:
    """The kinds of decision the metrics named make (``"position"``: both its kinds)."""
    names = set(metrics)
    return frozenset(k for k in KINDS if k.split(".", 1)[0] in names)


def neutral(graded: bool) -> tuple[float, ...]:
    """The neutral cut-offs, those of the larger probability: P(yes) >= 0.5, or the expected
    grade rounded (against 0.5 / 1.5 / 2.5)."""
    return (0.5, 1.5, 2.5) if graded else (0.5,)


#: the readings a combination may weigh, each a function of the QUESTION, the passage (and the
#: EXPECTED ANSWER or response where the call shows one) and the judge, never of the item's
#: other passages: ``judged``, the decision call's own soft value (a yes/no decision's
#: log-odds, clipped to +-10; a graded one's expected grade); ``question``, how much better the
#: judge predicts the QUESTION after the passage than after no passage (the item's baseline
#: call; mean log-probability per token, the difference); ``question_alone``, how well it
#: predicts the QUESTION after no passage (the baseline call's mean log-probability per token).
#: ``question`` moves with the QUESTION's language and form (a passage in the QUESTION's
#: language reads high whatever it says); ``question_alone`` moves with them too and with
#: nothing else, so a combination that weighs both corrects that motion without reading the
#: passage's neighbours
READINGS = ("judged", "question", "question_alone")
#: the readings ``localjudge calibrate`` combines
COMBINED_READINGS = READINGS
#: readings of earlier releases that no longer exist, and why (a stored fit that weighs one is
#: refused with this reason)
RETIRED_READINGS = {
    "question_centred": "it read the item's other passages, so a passage's verdict depended "
    "on its neighbours; run `localjudge calibrate` again",
}
