"""The obvious-cases check: decisions no person doubts, each right or not, and what a fit
loses against what is in use.

Two forms, one idea. ``localjudge calibrate`` judges the bundled contrast items one by one
(:mod:`localjudge.run.calibrate.obvious`) and a fit may lose none that the cut-offs in use get
right (:func:`lost`). The bundled judges' build reads shares over the development lists of
XQuAD, by the role of each passage (the answer's, another article's, the same article's
without the answer) and language (:data:`TARGETS`, :func:`target_shares`), and a fit may miss
no group of targets that the neutral cut-offs meet (:func:`groups_met`). Which cases there are
and how they are judged is the caller's; pure values here.
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
    "groups_met",
    "lost",
    "target_shares",
    "verdict_word",
]

#: the languages of the per-language targets (XQuAD's ten)
OBVIOUS_LANGS = ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "zh", "hi")


@dataclass(frozen=True)
class Target:
    """An obvious target: of the decisions on ``source``'s passages of ``role`` (in ``lang``,
    or every language), the share whose hard value is one of ``right`` is at least ``share``.

    ``group``: the targets met only together. A target on one role alone is met by a verdict
    that never looks at the passage (all "relevant" meets "answer relevant"), so the targets of
    the passages that answer and of those that do not form one group, and a group counts as
    met only when each of its targets is (empty: a group of its own)."""

    name: str
    source: str
    role: str
    right: tuple[int, ...]
    share: float
    lang: str | None = None
    group: str = ""


def _position_targets() -> tuple[Target, ...]:
    yes, no = (1,), (0,)
    found = [
        Target("answer relevant", "xquad", "answer", yes, 0.95, group="paragraphs"),
        Target("other article not relevant", "xquad", "other", no, 0.95, group="paragraphs"),
        Target("same article not relevant", "xquad", "same", no, 0.80, group="paragraphs"),
        # the answer's own sentence: with its paragraph, a list where every passage answers
        Target("short: answer relevant", "xquadshort", "answer", yes, 0.95, group="sentences"),
        Target(
            "short: other article not relevant", "xquadshort", "other", no, 0.95, group="sentences"
        ),
    ]
    for lang in OBVIOUS_LANGS:
        found.append(
            Target(f"answer relevant [{lang}]", "xquad", "answer", yes, 0.90, lang, f"[{lang}]")
        )
        found.append(
            Target(
                f"other article not relevant [{lang}]",
                "xquad",
                "other",
                no,
                0.90,
                lang,
                f"[{lang}]",
            )
        )
    return tuple(found)


#: each kind's obvious targets. A verdict reads no neighbour, so a passage's verdict in its
#: list is its verdict alone: the targets of lists of three are those of each passage alone,
#: of lists where no passage answers (other articles' passages) and, with the answer's
#: sentence, of lists where every passage answers (issue "A verdict about the passage, not its
#: neighbours", item 3; per language, no miss in the six lists a part holds)
TARGETS: Mapping[str, tuple[Target, ...]] = {
    "position.relevant": _position_targets(),
    "position.relevant_answer": _position_targets(),
    "relevance.grade": (
        Target("answer medium or high", "xquad", "answer", (2, 3), 0.90, group="grades"),
        Target("other article none", "xquad", "other", (0,), 0.90, group="grades"),
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


def groups_met(kind: str, shares: Mapping[str, Mapping[str, Any]]) -> dict[str, bool]:
    """Each group of ``kind``'s targets (:attr:`Target.group`): met when each of its targets
    is met in ``shares`` (what :func:`target_shares` returns)."""
    out: dict[str, bool] = {}
    for t in TARGETS.get(kind, ()):
        group = t.group or t.name
        out[group] = out.get(group, True) and bool(shares[t.name]["met"])
    return out


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
