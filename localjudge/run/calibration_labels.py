"""The labels ``calibrate`` fits on, read before anything is judged: the spellings it accepts
and what is wrong with one that it refuses.

Pure functions of a record's fields. Accepted, and nothing else (a value is refused, never
coerced): ``recall`` a number in [0, 1] (only 0 and 1 are fitted on); ``relevant`` and ``used``
lists of booleans or 0/1, one per context piece; ``levels`` lists of level names (``"high"``,
``"medium"``, ``"low"``, ``"none"``) or TREC's grades (3, 2, 1, 0), one per context piece.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from localjudge.scoring import RELEVANCE_LEVELS

__all__ = ["GRADES", "SPELLINGS", "human_value", "item_where", "n_pieces", "value_problem"]

#: grade of each relevance level (TREC's 0-3)
GRADES = {level: 3 - i for i, level in enumerate(RELEVANCE_LEVELS)}
#: the accepted spellings, for messages and help texts
SPELLINGS = (
    "recall: a number in [0, 1] (only 0 and 1 are fitted on); relevant, used: true/false or "
    "1/0 per context piece; levels: high/medium/low/none or 3/2/1/0 per context piece"
)
_FLAGS = "true, false, 1 or 0"
_LEVELS = ", ".join(RELEVANCE_LEVELS) + " or 3, 2, 1, 0"


def human_value(value: Any, *, graded: bool) -> int | None:
    """A per-piece label as the fit reads it: a grade 0-3 (``graded``) or 0/1; None for a
    spelling that is not accepted."""
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


def n_pieces(record: Mapping[str, Any]) -> int | None:
    """The record's number of context pieces (None when it has no list of them)."""
    contexts = record.get("retrieved_contexts", record.get("context"))
    return len(contexts) if isinstance(contexts, list) else None


def item_where(record: Mapping[str, Any], index: int, line: int | None = None) -> str:
    """The item a message is about: its id (``#index`` without one) and its line in the file
    (its index among the records without one)."""
    item_id = record.get("id")
    name = _shown(item_id) if item_id is not None else f"#{index}"
    return f"item {name} ({f'line {line}' if line is not None else f'record #{index}'})"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
