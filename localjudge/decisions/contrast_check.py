"""The contrast-items check: decisions no person doubts, each right or not, and what a fit
loses against what is in use.

``localjudge calibrate`` judges the bundled contrast items one by one
(:mod:`localjudge.run.calibrate.contrast_items`) into a :class:`ContrastCheck`, and a fit may
lose none that the cut-offs in use get right (:func:`lost`). The other check of clear cases, the
role targets over XQuAD's lists that the bundled judges' build reads, is
:mod:`localjudge.decisions.role_targets`. Which cases there are and how they are judged is the
caller's; pure values here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ContrastCheck",
    "Decided",
    "lost",
    "verdict_word",
]


@dataclass(frozen=True)
class Decided:
    """One obvious decision: the kind, where (item id and passage), and whether it was right."""

    kind: str
    item: str
    piece: int
    expected: str
    got: str
    #: the verdict's signed distance to its cut-off when it is a close call (within
    #: :data:`~localjudge.decisions.decide.CLOSE_CALL_MARGINS`: it can go the other way on
    #: another machine), else None
    close_call: float | None = None

    @property
    def right(self) -> bool:
        return self.expected == self.got

    def describe(self) -> str:
        return f"{self.item} #{self.piece}: {self.got} where a person says {self.expected}"


@dataclass(frozen=True)
class ContrastCheck:
    """Every obvious decision of the kinds checked."""

    decided: tuple[Decided, ...]

    def of(self, kind: str) -> list[Decided]:
        return [d for d in self.decided if d.kind == kind]

    def misses(self, kind: str) -> list[Decided]:
        return [d for d in self.of(kind) if not d.right]

    def line(self, kind: str) -> str:
        """``right/checked``, and the first misses."""
        done, missed = self.of(kind), self.misses(kind)
        text = f"{len(done) - len(missed)}/{len(done)} obvious decisions right"
        if missed:
            text += " (missed: " + "; ".join(d.describe() for d in missed[:3])
            text += f"; and {len(missed) - 3} more)" if len(missed) > 3 else ")"
        return text


def lost(fitted: ContrastCheck, now: ContrastCheck, kind: str) -> list[Decided]:
    """The obvious decisions of ``kind`` that ``now`` gets right and ``fitted`` does not."""
    right_now = {(d.item, d.piece) for d in now.of(kind) if d.right}
    return [d for d in fitted.misses(kind) if (d.item, d.piece) in right_now]


def verdict_word(kind: str, value: bool) -> str:
    """How a person says ``value`` of ``kind``: relevant or not, used or not, ..."""
    words = {
        "relevance.grade": ("medium or high", "low or none"),
        "relevance.used": ("used", "not used"),
        "recall.supported": ("supported", "not supported"),
    }.get(kind, ("relevant", "not relevant"))
    return words[0] if value else words[1]
