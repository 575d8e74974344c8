"""Pure scoring functions for the three metrics (see SPEC.md, sections 1-3).

These functions turn the judge's per-item verdicts into scores. They do no I/O, call no model,
keep full floating-point precision and raise ``ValueError`` on any invalid argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

__all__ = [
    "LEVEL_WEIGHTS",
    "RELEVANCE_LEVELS",
    "RelevancePenalties",
    "position_score",
    "recall_score",
    "relevance_score",
    "soft_position_score",
    "soft_recall_score",
    "soft_relevance_score",
]

#: Relevance levels in decreasing order of relevance.
RELEVANCE_LEVELS: tuple[str, ...] = ("high", "medium", "low", "none")

#: Weight of each relevance level in the context-relevance base score.
LEVEL_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
)


def _is_real(value: object) -> bool:
    """True for int/float (numpy included) but not bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _as_list(name: str, values: object) -> list[object]:
    """Return ``values`` as a list, rejecting strings, bytes and non-sequences."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a sequence, got {type(values).__name__}")
    return list(values)


def _to_bools(name: str, values: object) -> list[bool]:
    """Validate a sequence of 0/1 flags (bool, int 0/1, numpy bool/int) and return bools."""
    flags: list[bool] = []
    for i, value in enumerate(_as_list(name, values)):
        is_flag = isinstance(value, (bool, np.bool_)) or (
            isinstance(value, (int, np.integer)) and value in (0, 1)
        )
        if not is_flag:
            raise ValueError(f"{name}[{i}] must be 0/1 or bool, got {value!r}")
        flags.append(bool(value))
    return flags


def _check_scale(scale: object) -> float:
    """Validate ``scale`` (a finite real number > 0) and return it as a float."""
    if not _is_real(scale):
        raise ValueError(f"scale must be a real number, got {scale!r}")
    value = float(scale)  # type: ignore[arg-type]
    if not math.isfinite(value):
        raise ValueError(f"scale must be finite, got {scale!r}")
    if value <= 0:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    return value


@dataclass(frozen=True)
class RelevancePenalties:
    """Penalties subtracted from the context-relevance base score.

    Attributes:
        unused_high: subtracted once per ``high`` piece the response did not use (not capped).
        missing_per_item: subtracted once per piece of missing information ...
        max_missing: ... up to this cap for the whole missing penalty.

    All values must be finite and ``>= 0``; otherwise ``ValueError`` is raised.
    """

    unused_high: float = 0.10
    missing_per_item: float = 0.15
    max_missing: float = 0.50

    def __post_init__(self) -> None:
        for name in ("unused_high", "missing_per_item", "max_missing"):
            value = getattr(self, name)
            if not _is_real(value):
                raise ValueError(f"penalty {name} must be a real number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"penalty {name} must be finite, got {value!r}")
            if value < 0:
                raise ValueError(f"penalty {name} must be >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))


def recall_score(attributed: Sequence[bool | int]) -> float:
    """Context recall (ragas): the fraction of reference statements the contexts support.

    Args:
        attributed: one 0/1 (or bool) verdict per reference statement.

    Returns:
        ``sum(attributed) / len(attributed)`` in [0, 1]; NaN when there are no statements.

    Raises:
        ValueError: if a verdict is not 0/1 or bool.
    """
    flags = _to_bools("attributed", attributed)
    if not flags:
        return math.nan
    return sum(flags) / len(flags)


def position_score(relevant: Sequence[bool | int], scale: float = 1.0) -> float:
    """Context position (Mastra): how near the top the relevant pieces are.

    Piece ``i`` (0-based, in retrieval order) has weight ``1 / (i + 1)``. The score is
    ``scale * (sum of weights of relevant pieces) / H_n`` where ``H_n`` is the sum of the
    weights of *all* ``n`` pieces, so ``scale`` needs every piece relevant.

    Args:
        relevant: one 0/1 (or bool) verdict per retrieved piece, in retrieval order.
        scale: the maximum score, a finite number > 0.

    Returns:
        A score in [0, scale]; 0.0 when there are no pieces or none is relevant.

    Raises:
        ValueError: if a verdict is not 0/1 or bool, or ``scale`` is not finite and > 0.
    """
    flags = _to_bools("relevant", relevant)
    factor = _check_scale(scale)
    if not any(flags):
        return 0.0
    weights = [1.0 / (i + 1) for i in range(len(flags))]
    numerator = math.fsum(w for w, flag in zip(weights, flags, strict=True) if flag)
    return factor * (numerator / math.fsum(weights))


def relevance_score(
    levels: Sequence[str],
    used: Sequence[bool],
    missing: int,
    penalties: RelevancePenalties = RelevancePenalties(),
    scale: float = 1.0,
) -> float:
    """Context relevance (Mastra): how relevant and useful the contexts were for the response.

    ``base`` is the mean of the level weights (see ``LEVEL_WEIGHTS``). The score is
    ``scale * max(0, base - unused_high * U - min(missing_per_item * missing, max_missing))``
    where ``U`` counts the pieces that are ``high`` and not used.

    Args:
        levels: one of ``high``, ``medium``, ``low``, ``none`` per piece, in retrieval order.
        used: whether the response used each piece (bool or 0/1), same length as ``levels``.
        missing: how many pieces of needed information no context provided (int >= 0).
        penalties: the penalty configuration.
        scale: the maximum score, a finite number > 0.

    Returns:
        A score in [0, scale].

    Raises:
        ValueError: on empty ``levels``, an unknown level, lengths that differ, a negative or
            non-int ``missing``, a bad ``used`` flag, or ``scale`` not finite and > 0.
    """
    level_list = _as_list("levels", levels)
    used_flags = _to_bools("used", used)
    if not level_list:
        raise ValueError("levels must not be empty (there must be at least one context piece)")
    if len(level_list) != len(used_flags):
        raise ValueError(
            f"levels and used differ in length ({len(level_list)} vs {len(used_flags)})"
        )
    names: list[str] = []
    for i, level in enumerate(level_list):
        if not isinstance(level, str) or level not in LEVEL_WEIGHTS:
            raise ValueError(
                f"unknown relevance level {level!r} at index {i}; "
                f"expected one of {', '.join(RELEVANCE_LEVELS)}"
            )
        names.append(level)
    if (
        not isinstance(missing, (int, np.integer))
        or isinstance(missing, (bool, np.bool_))
        or missing < 0
    ):
        raise ValueError(f"missing must be a non-negative int, got {missing!r}")
    if not isinstance(penalties, RelevancePenalties):
        raise ValueError(f"penalties must be a RelevancePenalties, got {type(penalties).__name__}")
    factor = _check_scale(scale)

    base = math.fsum(LEVEL_WEIGHTS[level] for level in names) / len(names)
    unused_high = sum(
        1 for level, u in zip(names, used_flags, strict=True) if level == "high" and not u
    )
    usage_penalty = penalties.unused_high * unused_high
    missing_penalty = min(penalties.missing_per_item * int(missing), penalties.max_missing)
    return factor * max(0.0, base - usage_penalty - missing_penalty)


# --------------------------------------------------------------------------- soft scores
#
# The same formulas in expectation over the judge's own probabilities for each verdict (soft
# verdicts). With every probability 0 or 1 each equals its hard score.


def _probabilities(name: str, values: object) -> list[float]:
    out: list[float] = []
    for i, value in enumerate(_as_list(name, values)):
        if not _is_real(value) or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
            raise ValueError(f"{name}[{i}] must be a probability in [0, 1], got {value!r}")
        out.append(float(value))  # type: ignore[arg-type]
    return out


def soft_recall_score(p_attributed: Sequence[float]) -> float:
    """Expected recall: the mean probability that each statement is supported (NaN for none)."""
    probs = _probabilities("p_attributed", p_attributed)
    return math.fsum(probs) / len(probs) if probs else math.nan


def soft_position_score(p_relevant: Sequence[float], scale: float = 1.0) -> float:
    """Expected position score: ``scale * sum(P(relevant_i) / (i + 1)) / H_n``."""
    probs = _probabilities("p_relevant", p_relevant)
    factor = _check_scale(scale)
    if not probs:
        return 0.0
    weights = [1.0 / (i + 1) for i in range(len(probs))]
    return (
        factor * math.fsum(w * q for w, q in zip(weights, probs, strict=True)) / math.fsum(weights)
    )


def soft_relevance_score(
    level_probs: Sequence[Mapping[str, float]],
    p_used: Sequence[float],
    missing: int,
    penalties: RelevancePenalties = RelevancePenalties(),
    scale: float = 1.0,
) -> float:
    """Expected relevance score, the pieces' verdicts taken as independent:
    ``scale * max(0, mean_i E[weight_i] - unused_high * sum_i P(high_i) * (1 - P(used_i))
    - min(missing_per_item * missing, max_missing))``. ``missing`` is counted as in the hard
    score (it is free text, not a decision).

    Raises:
        ValueError: on no pieces, lengths that differ, an unknown level, a level distribution
            that does not sum to 1, or the arguments :func:`relevance_score` refuses.
    """
    dists = list(level_probs)
    used = _probabilities("p_used", p_used)
    if not dists:
        raise ValueError("level_probs must not be empty (there must be at least one piece)")
    if len(dists) != len(used):
        raise ValueError(f"level_probs and p_used differ in length ({len(dists)} vs {len(used)})")
    expected, p_high = [], []
    for i, dist in enumerate(dists):
        unknown = set(dist) - set(LEVEL_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown relevance level {sorted(unknown)[0]!r} at index {i}")
        probs = _probabilities(f"level_probs[{i}]", list(dist.values()))
        if abs(math.fsum(probs) - 1.0) > 1e-6:
            raise ValueError(f"level_probs[{i}] must sum to 1, got {math.fsum(probs)!r}")
        expected.append(math.fsum(LEVEL_WEIGHTS[lv] * q for lv, q in dist.items()))
        p_high.append(float(dist.get("high", 0.0)))
    relevance_score(["none"], [False], missing, penalties, scale)  # validates the rest
    factor = float(scale)
    base = math.fsum(expected) / len(expected)
    usage = penalties.unused_high * math.fsum(
        h * (1.0 - u) for h, u in zip(p_high, used, strict=True)
    )
    missing_penalty = min(penalties.missing_per_item * int(missing), penalties.max_missing)
    return factor * max(0.0, base - usage - missing_penalty)
