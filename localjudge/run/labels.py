"""Human labels (bench's labelled format): what is wrong with a record's ``labels``, and which
metrics they can be compared with. ``bench`` and ``eval --labels`` check labels here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from localjudge.metrics import METRICS

__all__ = ["applicable", "label_problem"]


def label_problem(labels: Any, n_pieces: int | None) -> str | None:
    """What is wrong with one record's ``labels`` (None when they are usable)."""
    if not isinstance(labels, Mapping):
        return "'labels' must be an object"
    for cls in METRICS.values():
        for key, kind in cls.labels.items():
            if key in labels and (problem := kind.problem(key, labels[key], n_pieces)):
                return problem
    return None


def applicable(metric: str, labels: Mapping[str, Any]) -> bool:
    """Whether ``labels`` give something ``metric`` can be compared on."""
    return any(key in labels for key in METRICS[metric].labels)
