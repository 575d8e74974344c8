"""Human labels (bench's labelled format), checked in one place: ``bench``, ``eval --labels`` and
``calibrate`` accept the same spellings and refuse the rest with the same message, naming the
item and the field, before anything is judged.

A record's ``labels`` is an object; the keys below are checked wherever they appear (any other
key is ignored). Accepted, and nothing else:

- ``recall``: a number in [0, 1] (not a boolean); ``calibrate`` fits only on 0 and 1;
- ``relevant``, ``used``: a non-empty list, one entry per context piece, each ``true``/``false``
  or ``1``/``0``;
- ``levels``: a non-empty list, one entry per context piece, each a level name (``"high"``,
  ``"medium"``, ``"low"``, ``"none"``) or TREC's grade (``3``, ``2``, ``1``, ``0``).

A list of another length than the item's ``retrieved_contexts``, an unknown level name, a grade
outside 0-3, a string for a flag or a number outside [0, 1] is refused. An accepted label is read
in one form (:func:`canonical`: booleans for flags, level names for levels), so every comparison
sees the same values whichever spelling the file used.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from localjudge.errors import LocalJudgeError, UsageError
from localjudge.metrics import METRICS
from localjudge.scoring import RELEVANCE_LEVELS

__all__ = [
    "GRADES",
    "LABELS_HINT",
    "SPELLINGS",
    "LabelSpec",
    "applicable",
    "canonical",
    "human_value",
    "item_where",
    "label_problem",
    "n_pieces",
    "refuse_labels",
    "spec",
    "value_problem",
]

#: grade of each relevance level (TREC's 0-3)
GRADES = {level: 3 - i for i, level in enumerate(RELEVANCE_LEVELS)}
#: the accepted spellings, for messages and help texts
SPELLINGS = (
    "recall: a number in [0, 1] (only 0 and 1 are fitted on); relevant, used: true/false or "
    "1/0 per context piece; levels: high/medium/low/none or 3/2/1/0 per context piece"
)
#: a refused label's hint
LABELS_HINT = f"accepted labels: {SPELLINGS}"
_FLAGS = "true, false, 1 or 0"
_LEVELS = ", ".join(RELEVANCE_LEVELS) + " or 3, 2, 1, 0"


@dataclass(frozen=True)
class LabelSpec:
    """How one label key is spelled: a list, one per context piece (``per_piece``), of level
    names or grades (``graded``) or of flags; else one number in [0, 1] for the item."""

    per_piece: bool
    graded: bool


def _specs() -> dict[str, LabelSpec]:
    out: dict[str, LabelSpec] = {}
    for cls in METRICS.values():
        for key, kind in cls.labels.items():
            found = LabelSpec(kind.per_piece, kind.per_piece and kind.values != (False, True))
            assert out.setdefault(key, found) == found, f"two metrics spell {key} differently"
    return out


#: every label key a metric compares on, and its spelling
SPECS: Mapping[str, LabelSpec] = _specs()


def spec(key: str) -> LabelSpec:
    """How the label ``key`` is spelled (a per-piece flag for a key no metric reads)."""
    return SPECS.get(key, LabelSpec(per_piece=True, graded=False))


def human_value(value: Any, *, graded: bool) -> int | None:
    """A per-piece label as a number: a grade 0-3 (``graded``) or 0/1; None for a spelling that
    is not accepted."""
    if isinstance(value, bool):
        return None if graded else int(value)
    if isinstance(value, str):
        return GRADES.get(value) if graded else None
    if isinstance(value, int) and 0 <= value <= (3 if graded else 1):
        return value
    return None


def value_problem(
    label: str, value: Any, *, per_piece: bool, graded: bool, pieces: int | None
) -> str | None:
    """What is wrong with ``labels[label] = value`` (None when it is accepted); ``pieces``: the
    item's number of context pieces (None: unknown, the length is not checked)."""
    field = f"labels.{label}"
    if not per_piece:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and 0 <= value <= 1:
            return None
        return f"{field} must be a number in [0, 1], got {_shown(value)}"
    if not isinstance(value, list) or not value:
        return f"{field} must be a non-empty list, got {_shown(value)}"
    if pieces is not None and len(value) != pieces:
        return f"{field} has {len(value)} entries for {pieces} retrieved_contexts"
    for i, v in enumerate(value):
        if human_value(v, graded=graded) is None:
            return f"{field}[{i}] is {_shown(v)}; expected {_LEVELS if graded else _FLAGS}"
    return None


def label_problem(labels: Any, pieces: int | None) -> str | None:
    """What is wrong with one record's ``labels`` (None when every key a metric reads is
    accepted); ``pieces``: its number of context pieces (None: unknown)."""
    if not isinstance(labels, Mapping):
        return f"labels must be an object, got {type(labels).__name__}"
    for key, found in SPECS.items():
        if key in labels and (
            problem := value_problem(
                key, labels[key], per_piece=found.per_piece, graded=found.graded, pieces=pieces
            )
        ):
            return problem
    return None


def canonical(labels: Mapping[str, Any]) -> dict[str, Any]:
    """Checked ``labels`` in one spelling: flags as booleans, levels as level names (the
    other keys as they are)."""
    out = dict(labels)
    for key, found in SPECS.items():
        if key in out and found.per_piece:
            values = [human_value(v, graded=found.graded) for v in out[key]]
            if found.graded:
                out[key] = [RELEVANCE_LEVELS[3 - v] if v is not None else None for v in values]
            else:
                out[key] = [bool(v) for v in values]
    return out


def applicable(metric: str, labels: Mapping[str, Any]) -> bool:
    """Whether ``labels`` give something ``metric`` can be compared on."""
    return any(key in labels for key in METRICS[metric].labels)


def n_pieces(record: Mapping[str, Any], field: str = "retrieved_contexts") -> int | None:
    """The record's number of context pieces, in ``field`` (or ``context``); None when it has
    no list of them."""
    contexts = record.get(field, record.get("context"))
    return len(contexts) if isinstance(contexts, list) else None


def item_where(record: Mapping[str, Any], index: int, line: int | None = None) -> str:
    """The item a message is about: its id (``#index`` without one) and its line in the file
    (its index among the records without one)."""
    item_id = record.get("id")
    name = _shown(item_id) if item_id is not None else f"#{index}"
    return f"item {name} ({f'line {line}' if line is not None else f'record #{index}'})"


def refuse_labels(
    problems: Iterable[str], path: object = None, *, error: type[LocalJudgeError] = UsageError
) -> None:
    """Raise ``error`` for the first of ``problems`` (each ``item ...: what``; the count of the
    rest added), prefixed with the file ``path``; nothing when there is none."""
    found = list(problems)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        prefix = f"{path}: " if path else ""
        raise error(f"{prefix}{found[0]}{more}", hint=LABELS_HINT)


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
