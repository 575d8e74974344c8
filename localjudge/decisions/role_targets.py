"""The role targets of the bundled judges' build: decisions no person doubts on XQuAD's lists.

The build (``fitting/build.py``) and the sealed figures (``fitting/sealed.py``) read shares over
the development lists of XQuAD, by the role of each passage (the answer's, another article's, the
same article's without the answer) and language (:data:`TARGETS`, :func:`target_shares`), and a
fit may miss no group of targets that the neutral cut-offs meet (:func:`groups_met`). The other
check of clear cases, on the bundled contrast items ``localjudge calibrate`` judges, is
:mod:`localjudge.decisions.contrast_check`. Which rows there are and how they are judged is the
caller's; pure values here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TARGETS",
    "TARGET_LANGS",
    "Target",
    "groups_met",
    "target_shares",
]

#: the languages of the per-language targets (XQuAD's ten)
TARGET_LANGS = ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "zh", "hi")


@dataclass(frozen=True)
class Target:
    """A role target: of the decisions on ``source``'s passages of ``role`` (in ``lang``,
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
    for lang in TARGET_LANGS:
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


#: each kind's role targets. A verdict reads no neighbour, so a passage's verdict in its
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
