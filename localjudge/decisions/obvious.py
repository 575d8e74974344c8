"""The obvious-cases check: decisions no person doubts, each right or not, and what a fit
loses against what is in use.

Two forms, one idea. ``localjudge calibrate`` judges the bundled contrast items one by one
(:mod:`localjudge.run.calibrate.obvious`) and a fit may lose none that the cut-offs in use get
right (:func:`lost`). The bundled judges' build reads shares over the development lists of
XQuAD, by the role of each passage (the answer's, another article's, the same article's
without the answer) and language (:data:`TARGETS`, :func:`target_shares`), and a fit may miss
no target the neutral cut-offs meet. Which cases there are and how they are judged is the
caller's; pure values here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OBVIOUS_LANGS",
    "TARGETS",
    "Decided",
    "ObviousCheck",
    "Target",
    "lost",
    "target_shares",
    "verdict_word",
]

#: the languages of the per-language targets (XQuAD's ten)
OBVIOUS_LANGS = ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "zh", "hi")


@dataclass(frozen=True)
class Target:
    """An obvious target: of the decisions on ``source``'s passages of ``role`` (in ``lang``,
    or every language), the share whose hard value is one of ``right`` is at least ``share``."""

    name: str
    source: str
    role: str
    right: tuple[int, ...]
    share: float
    lang: str | None = None


def _position_targets() -> tuple[Target, ...]:
    yes, no = (1,), (0,)
    found = [
        Target("answer relevant", "xquad", "answer", yes, 0.95),
        Target("other article not relevant", "xquad", "other", no, 0.95),
        Target("same article not relevant", "xquad", "same", no, 0.80),
        Target("short: other article not relevant", "xquadshort", "other", no, 0.95),
    ]
    for lang in OBVIOUS_LANGS:
        found.append(Target(f"answer relevant [{lang}]", "xquad", "answer", yes, 0.80, lang))
        found.append(
            Target(f"other article not relevant [{lang}]", "xquad", "other", no, 0.80, lang)
        )
    return tuple(found)


#: each kind's obvious targets (per language: at most one miss in the six lists a part holds)
TARGETS: Mapping[str, tuple[Target, ...]] = {
    "position.relevant": _position_targets(),
    "position.relevant_answer": _position_targets(),
    "relevance.grade": (
        Target("answer medium or high", "xquad", "answer", (2, 3), 0.90),
        Target("other article none", "xquad", "other", (0,), 0.90),
    ),
    "recall.supported": (),
}


def target_shares(
    kind: str, rows: Sequence[Mapping[str, Any]], judged: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """Each target of ``kind``: the share of its decisions right under ``judged`` (one hard
    value per row; a row has ``source``, ``role`` and ``lang``), the target, and whether it
    is met (None where no row counts: not met)."""
    out = {}
    for t in TARGETS.get(kind, ()):
        picked = [
            j in t.right
            for r, j in zip(rows, judged, strict=True)
            if r["source"] == t.source and r["role"] == t.role and t.lang in (None, r["lang"])
        ]
        share = sum(picked) / len(picked) if picked else None
        out[t.name] = {
            "share": share,
            "target": t.share,
            "met": share is not None and share >= t.share,
        }
    return out


@dataclass(frozen=True)
class Decided:
    """One obvious decision: the kind, where (item id and passage), and whether it was right."""

    kind: str
    item: str
    piece: int
    expected: str
    got: str

    @property
    def right(self) -> bool:
        return self.expected == self.got

    def describe(self) -> str:
        return f"{self.item} #{self.piece}: {self.got} where a person says {self.expected}"


@dataclass(frozen=True)
class ObviousCheck:
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


def lost(fitted: ObviousCheck, now: ObviousCheck, kind: str) -> list[Decided]:
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
