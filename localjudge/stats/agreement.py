"""Agreement between a judge and human labels: per-verdict and per-item statistics with CIs.

Pure functions of the labelled records and the ``results.jsonl`` rows a judge produced.
Per-verdict agreement uses scikit-learn (accuracy, confusion matrices) and the package's one
Cohen's kappa (:func:`cohen_kappa`, weighted for ordinal labels; the cut-off fits use it too);
per-item score agreement SciPy (Spearman, Kendall) and scikit-learn (ROC AUC). Confidence
intervals come from the one seeded bootstrap (:mod:`localjudge.stats.bootstrap`) over items: the
verdicts of one item are resampled together.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from localjudge.metrics import Metric
from localjudge.stats.bootstrap import interval

#: resamples of an agreement interval: each one runs scikit-learn or SciPy once per statistic,
#: so half the summary's 2,000 (the figures in benchmarks/README.md use this count)
RESAMPLES = 1000

__all__ = [
    "Pair",
    "accuracy",
    "cohen_kappa",
    "confusion",
    "kappa",
    "kendall",
    "krippendorff_alpha_interval",
    "mae",
    "roc_auc",
    "score_agreement",
    "spearman",
    "top_pattern",
    "verdict_agreement",
    "with_ci",
]


@dataclass(frozen=True)
class Pair:
    """One item's human labels and one judge's result row for one metric."""

    index: int
    id: str
    labels: Mapping[str, Any]
    row: Mapping[str, Any]


# --------------------------------------------------------------------------- statistics


def _nan_to_none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _quiet(fn: Callable[[], float]) -> float | None:
    """Run a statistic; undefined cases (constant inputs, one class) give None, not NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _nan_to_none(fn())
        except ValueError:
            return None


def accuracy(human: Sequence[Any], judge: Sequence[Any]) -> float | None:
    from sklearn.metrics import accuracy_score  # noqa: PLC0415

    return _quiet(lambda: accuracy_score(human, judge)) if human else None


def cohen_kappa(
    human: Sequence[int] | np.ndarray,
    judge: Sequence[int] | np.ndarray,
    k: int,
    *,
    quadratic: bool = False,
) -> float | None:
    """Cohen's kappa of two raters' class indices (0 to ``k - 1``), quadratically weighted for
    ordinal classes; None with no pair, or when chance agreement is all there can be (the
    package's one kappa: bench, calibrate and the cut-off fits all read it)."""
    human, judge = np.asarray(human, dtype=int), np.asarray(judge, dtype=int)
    if len(human) == 0:
        return None
    observed = np.zeros((k, k))
    np.add.at(observed, (human, judge), 1)
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    weights = ((i - j) ** 2 if quadratic else (i != j)).astype(float)
    denominator = float(np.sum(weights * expected))
    if denominator == 0.0:
        return None
    return 1.0 - float(np.sum(weights * observed)) / denominator


def kappa(
    human: Sequence[Any], judge: Sequence[Any], labels: Sequence[Any], weights: str | None = None
) -> float | None:
    """Cohen's kappa (:func:`cohen_kappa`) of two raters' ``labels``; ``weights="quadratic"``
    for ordinal labels (given lowest first)."""
    if weights not in (None, "quadratic"):
        raise ValueError(f"unknown kappa weights {weights!r}")
    rank = {label: i for i, label in enumerate(labels)}
    h, j = [rank[v] for v in human], [rank[v] for v in judge]
    return cohen_kappa(h, j, len(labels), quadratic=weights == "quadratic")


def confusion(human: Sequence[Any], judge: Sequence[Any], labels: Sequence[Any]) -> dict[str, Any]:
    """Rows: human label; columns: judge label; in ``labels`` order."""
    from sklearn.metrics import confusion_matrix  # noqa: PLC0415

    matrix = (
        confusion_matrix(human, judge, labels=list(labels))
        if human
        else np.zeros((len(labels),) * 2)
    )
    return {
        "labels": [str(v).lower() for v in labels],
        "matrix": np.asarray(matrix, dtype=int).tolist(),
    }


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    from scipy.stats import spearmanr  # noqa: PLC0415

    return _quiet(lambda: spearmanr(x, y).statistic) if len(x) > 1 else None


def kendall(x: Sequence[float], y: Sequence[float]) -> float | None:
    from scipy.stats import kendalltau  # noqa: PLC0415

    return _quiet(lambda: kendalltau(x, y).statistic) if len(x) > 1 else None


def mae(x: Sequence[float], y: Sequence[float]) -> float | None:
    return float(np.mean(np.abs(np.asarray(x) - np.asarray(y)))) if len(x) else None


def krippendorff_alpha_interval(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Krippendorff's alpha (interval metric) of two raters who both rated every item:
    1 - D_o / D_e, with D_o the mean squared difference within items and D_e the mean squared
    difference between all pooled values (pairs of distinct values, n(n-1)); None when every
    value is the same (no disagreement is possible) or below two items."""
    if len(x) < 2:
        return None
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    pooled = np.concatenate([a, b])
    n = len(pooled)
    spread = float(np.sum((pooled - pooled.mean()) ** 2))
    if spread == 0.0:
        return None
    observed = float(np.mean((a - b) ** 2))
    expected = 2.0 * spread / (n - 1)
    return 1.0 - observed / expected


def roc_auc(binary: Sequence[float], scores: Sequence[float]) -> float | None:
    """ROC AUC of the judge's score against binary (0/1) human labels."""
    from sklearn.metrics import roc_auc_score  # noqa: PLC0415

    return _quiet(lambda: roc_auc_score([int(b) for b in binary], scores)) if binary else None


def with_ci(
    clusters: Sequence[Any], statistic: Callable[[Sequence[Any]], float | None]
) -> dict[str, Any]:
    """The statistic and its bootstrap interval over items (:data:`RESAMPLES` resamples)."""
    return {
        "value": statistic(clusters),
        "ci95": interval(clusters, statistic, resamples=RESAMPLES),
    }


# --------------------------------------------------------------------------- agreement


def _flat(pairs: Sequence[tuple[list[Any], list[Any]]]) -> tuple[list[Any], list[Any]]:
    human = [h for hs, _ in pairs for h in hs]
    judge = [j for _, js in pairs for j in js]
    return human, judge


def verdict_agreement(
    metric: type[Metric], key: str, pairs: Sequence[Pair]
) -> dict[str, Any] | None:
    """Accuracy, kappa (weighted as the label kind says) and confusion for a per-piece label."""
    kind = metric.labels[key]
    clusters = []
    for p in pairs:
        judge = metric.judge_values(p.row.get("verdicts") or [], key)
        human = p.labels.get(key)
        if judge is None or human is None or len(judge) != len(human):
            continue
        clusters.append(([v if kind.values != (False, True) else bool(v) for v in human], judge))
    if not clusters:
        return None
    labels: Sequence[Any] = kind.values
    weights = kind.weights

    def acc(cs: Sequence[tuple[list[Any], list[Any]]]) -> float | None:
        return accuracy(*_flat(cs))

    def kap(cs: Sequence[tuple[list[Any], list[Any]]]) -> float | None:
        return kappa(*_flat(cs), labels=labels, weights=weights)

    human, judge = _flat(clusters)
    return {
        "n_verdicts": len(human),
        "accuracy": with_ci(clusters, acc),
        "kappa": {**with_ci(clusters, kap), "weights": weights or "none"},
        "confusion": confusion(human, judge, labels),
    }


def score_agreement(
    metric: type[Metric], pairs: Sequence[Pair], key: str = "score"
) -> dict[str, Any] | None:
    """Spearman, Kendall, MAE (and ROC AUC where the human scores are 0/1 for a per-item label)
    of per-item scores: the rows' ``score``, or their ``soft_score`` with ``key``."""
    points = []
    for p in pairs:
        h = metric.human_score(p.labels)
        if h is not None and p.row.get(key) is not None:
            points.append((h, float(p.row[key])))
    if not points:
        return None

    def col(ps: Sequence[tuple[float, float]], i: int) -> list[float]:
        return [pt[i] for pt in ps]

    out = {
        "n_items": len(points),
        "spearman": with_ci(points, lambda ps: spearman(col(ps, 0), col(ps, 1))),
        "kendall": with_ci(points, lambda ps: kendall(col(ps, 0), col(ps, 1))),
        "mae": with_ci(points, lambda ps: mae(col(ps, 0), col(ps, 1))),
        "human_mean": float(np.mean(col(points, 0))),
        "judge_mean": float(np.mean(col(points, 1))),
    }
    binary = [pt for pt in points if pt[0] in (0.0, 1.0)]
    item_level = any(not kind.per_piece for kind in metric.labels.values())
    if item_level and binary:
        out["roc_auc"] = {
            **with_ci(binary, lambda ps: roc_auc(col(ps, 0), col(ps, 1))),
            "n_items": len(binary),
        }
    return out


def top_pattern(metric: type[Metric], pairs: Sequence[Pair]) -> dict[str, Any] | None:
    """The most common verdict vector (each verdict's decisions, in order) and the share of items
    that have it: a judge whose verdicts follow a pattern, not the item, has a share near 1."""
    vectors = [
        tuple(tuple(v.get(k) for k in metric.decisions) for v in p.row.get("verdicts") or [])
        for p in pairs
    ]
    if not vectors:
        return None
    vector, count = Counter(vectors).most_common(1)[0]
    return {
        "vector": [list(v) for v in vector],
        "count": count,
        "n_items": len(vectors),
        "share": count / len(vectors),
    }
