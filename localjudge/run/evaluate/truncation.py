"""The documented truncation policy: an item too long for the window has its longest contexts
cut to a common length until its calls fit (``truncate=True`` / ``--truncate``)."""

from __future__ import annotations

import math
from typing import Any

from localjudge.data.item import Item
from localjudge.errors import ContextOverflowError
from localjudge.judge.protocol import JudgeRequest
from localjudge.judge.schemas import worst_case_tokens

__all__ = ["MIN_PIECE_CHARS", "TRUNCATION_MARK", "trim_contexts"]


#: a trimmed piece keeps at least this many characters
MIN_PIECE_CHARS = 80
TRUNCATION_MARK = " [...]"


def trim_contexts(
    item: Item,
    request: JudgeRequest,
    overflow: ContextOverflowError,
    previous: dict[str, Any] | None,
) -> tuple[Item, dict[str, Any]]:
    """The documented truncation policy: cut the longest context pieces down to a common length
    (keeping each piece's beginning and at least :data:`MIN_PIECE_CHARS` characters), by the
    overflow converted to characters at the prompt's own characters-per-token rate; the caller
    retries until the prompt fits. Question, reference and response are never cut. Re-raises
    ``overflow`` when every piece is already at the minimum.
    """
    contexts = item.contexts()
    prompt_tokens = overflow.needed - worst_case_tokens(request.schema)
    prompt_chars = sum(len(m["content"]) for m in request.messages)
    chars_per_token = prompt_chars / max(prompt_tokens, 1)
    excess = overflow.needed - overflow.available
    cut = math.ceil(excess * chars_per_token) + len(TRUNCATION_MARK)
    lengths = [len(c) for c in contexts]
    if max(lengths) <= MIN_PIECE_CHARS:
        raise overflow  # nothing left to trim: the item cannot fit this window
    floor = sum(min(n, MIN_PIECE_CHARS) for n in lengths)
    target = max(sum(lengths) - cut, floor)
    low, high = MIN_PIECE_CHARS, max(lengths)  # the largest cap whose total fits the target
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(n, mid) for n in lengths) <= target:
            low = mid
        else:
            high = mid - 1
    trimmed = [
        c if len(c) <= low else c[: low - len(TRUNCATION_MARK)] + TRUNCATION_MARK for c in contexts
    ]
    original = (previous or {}).get("original_chars", lengths)
    record = {
        "policy": "trim-longest-contexts",
        "original_chars": original,
        "kept_chars": [len(c) for c in trimmed],
        "pieces": [
            i for i, (a, b) in enumerate(zip(original, trimmed, strict=True)) if a != len(b)
        ],
    }
    values = {**item.values, "retrieved_contexts": trimmed}
    return Item(id=item.id, index=item.index, values=values), record
