"""Agreement of judges with human labels, and judge against judge.

The statistics are pure functions of the labelled records and the ``results.jsonl`` rows each
judge produced (they never look at runner internals), so an old run can be re-benched without
re-judging. Judges are compared on the items that every judge scored; the items a judge failed are
counted and listed, never silently dropped.

Per-verdict agreement uses scikit-learn (accuracy, Cohen's kappa, quadratic-weighted for the
ordinal relevance levels, confusion matrices); per-item score agreement uses SciPy (Spearman,
Kendall) and scikit-learn (ROC AUC). Confidence intervals come from a seeded bootstrap over items
(verdicts of one item are resampled together).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from localjudge.scoring import RELEVANCE_LEVELS, position_score, relevance_score

FORMAT_VERSION = 1
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
#: ordinal order of the relevance levels, lowest first (for weighted kappa)
LEVEL_ORDER = tuple(reversed(RELEVANCE_LEVELS))
#: what each metric needs in ``labels``
LABELS_FOR = {
    "recall": ("recall",),
    "position": ("relevant",),
    "relevance": ("levels", "used", "relevant"),
}


@dataclass(frozen=True)
class Pair:
    """One item's human labels and one judge's result row for one metric."""

    index: int
    id: str
    labels: Mapping[str, Any]
    row: Mapping[str, Any]


# --------------------------------------------------------------------------- human scores


def human_score(metric: str, labels: Mapping[str, Any]) -> float | None:
    """The metric's formula applied to the human labels (None when the labels do not give it).

    Relevance without ``used`` labels counts every piece as used (no usage penalty) and no
    missing information: the labels say nothing about either.
    """
    if metric == "recall" and "recall" in labels:
        return float(labels["recall"])
    if metric == "position" and "relevant" in labels:
        return position_score([bool(v) for v in labels["relevant"]])
    if metric == "relevance" and "levels" in labels:
        levels = list(labels["levels"])
        used = [bool(v) for v in labels.get("used", [True] * len(levels))]
        return relevance_score(levels, used, 0)
    return None


def label_problem(labels: Any, n_pieces: int | None) -> str | None:  # noqa: PLR0911
    """What is wrong with one record's ``labels`` (None when they are usable)."""
    if not isinstance(labels, Mapping):
        return "'labels' must be an object"
    recall = labels.get("recall")
    if "recall" in labels and (
        isinstance(recall, bool) or not isinstance(recall, (int, float)) or not 0 <= recall <= 1
    ):
        return f"labels.recall must be a number in [0, 1], got {recall!r}"
    for key in ("relevant", "used", "levels"):
        if key not in labels:
            continue
        value = labels[key]
        if not isinstance(value, list) or not value:
            return f"labels.{key} must be a non-empty list"
        if n_pieces is not None and len(value) != n_pieces:
            return f"labels.{key} has {len(value)} entries for {n_pieces} context pieces"
        if key == "levels":
            bad = [v for v in value if v not in RELEVANCE_LEVELS]
            if bad:
                return (
                    f"labels.levels has {bad[0]!r}; expected one of {', '.join(RELEVANCE_LEVELS)}"
                )
        elif not all(isinstance(v, bool) for v in value):
            return f"labels.{key} must be a list of true/false"
    return None


def applicable(metric: str, labels: Mapping[str, Any]) -> bool:
    return any(key in labels for key in LABELS_FOR[metric])


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


def kappa(
    human: Sequence[Any], judge: Sequence[Any], labels: Sequence[Any], weights: str | None = None
) -> float | None:
    """Cohen's kappa; ``weights="quadratic"`` for ordinal labels (given lowest first)."""
    from sklearn.metrics import cohen_kappa_score  # noqa: PLC0415

    if not human:
        return None
    rank = {label: i for i, label in enumerate(labels)}
    h, j = [rank[v] for v in human], [rank[v] for v in judge]
    return _quiet(lambda: cohen_kappa_score(h, j, labels=list(range(len(labels))), weights=weights))


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


def roc_auc(binary: Sequence[float], scores: Sequence[float]) -> float | None:
    """ROC AUC of the judge's score against binary (0/1) human labels."""
    from sklearn.metrics import roc_auc_score  # noqa: PLC0415

    return _quiet(lambda: roc_auc_score([int(b) for b in binary], scores)) if binary else None


def bootstrap(
    clusters: Sequence[Any],
    statistic: Callable[[Sequence[Any]], float | None],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[float] | None:
    """Seeded percentile bootstrap over items: ``statistic`` of each resample of ``clusters``."""
    if len(clusters) < 2:
        return None
    rng = np.random.default_rng(seed)
    n = len(clusters)
    values = []
    for _ in range(resamples):
        sample = [clusters[i] for i in rng.integers(0, n, n)]
        value = statistic(sample)
        if value is not None:
            values.append(value)
    if len(values) < resamples // 2:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return [float(low), float(high)]


def with_ci(
    clusters: Sequence[Any], statistic: Callable[[Sequence[Any]], float | None]
) -> dict[str, Any]:
    return {"value": statistic(clusters), "ci95": bootstrap(clusters, statistic)}


# --------------------------------------------------------------------------- per metric


def _verdicts(metric: str, row: Mapping[str, Any], key: str) -> list[Any] | None:
    """The judge's per-piece values for a label key, in piece order."""
    verdicts = row.get("verdicts") or []
    if metric == "position" and key == "relevant":
        return [bool(v["relevant"]) for v in verdicts]
    if metric == "relevance" and key == "levels":
        return [v["relevance"] for v in verdicts]
    if metric == "relevance" and key == "used":
        return [bool(v["used"]) for v in verdicts]
    if metric == "relevance" and key == "relevant":  # binary labels: high/medium count as relevant
        return [v["relevance"] in ("high", "medium") for v in verdicts]
    return None


def _flat(pairs: Sequence[tuple[list[Any], list[Any]]]) -> tuple[list[Any], list[Any]]:
    human = [h for hs, _ in pairs for h in hs]
    judge = [j for _, js in pairs for j in js]
    return human, judge


def verdict_agreement(metric: str, key: str, pairs: Sequence[Pair]) -> dict[str, Any] | None:
    """Accuracy, kappa (quadratic for levels) and confusion for one per-piece label key."""
    clusters = []
    for p in pairs:
        judge = _verdicts(metric, p.row, key)
        human = p.labels.get(key)
        if judge is None or human is None or len(judge) != len(human):
            continue
        clusters.append(([v if key == "levels" else bool(v) for v in human], judge))
    if not clusters:
        return None
    labels: Sequence[Any] = LEVEL_ORDER if key == "levels" else (False, True)
    weights = "quadratic" if key == "levels" else None

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


def score_agreement(metric: str, pairs: Sequence[Pair]) -> dict[str, Any] | None:
    """Spearman, Kendall, MAE (and ROC AUC for binary recall labels) of per-item scores."""
    points = []
    for p in pairs:
        h = human_score(metric, p.labels)
        if h is not None and p.row.get("score") is not None:
            points.append((h, float(p.row["score"])))
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
    if metric == "recall" and binary:
        out["roc_auc"] = {
            **with_ci(binary, lambda ps: roc_auc(col(ps, 0), col(ps, 1))),
            "n_items": len(binary),
        }
    return out


def metric_report(metric: str, pairs: Sequence[Pair], common: set[int]) -> dict[str, Any]:
    """One judge x metric: agreement on the common items, failures, speed."""
    scored = [p for p in pairs if p.row.get("error") is None]
    failed = [p for p in pairs if p.row.get("error") is not None]
    on_common = [p for p in scored if p.index in common]
    timed = [p.row for p in scored if p.row.get("seconds") is not None]
    seconds = sum(float(r["seconds"]) for r in timed)
    tokens = sum(int(r["completion_tokens"] or 0) for r in timed)
    verdicts = {
        key: agreement
        for key in LABELS_FOR[metric]
        if key != "recall" and (agreement := verdict_agreement(metric, key, on_common)) is not None
    }
    return {
        "n_items": len(pairs),
        "n_scored": len(scored),
        "n_failed": len(failed),
        "failed_ids": [p.id for p in failed],
        "n_common": len(on_common),
        "verdicts": verdicts,
        "scores": score_agreement(metric, on_common),
        "seconds_per_item": seconds / len(timed) if timed else None,
        "tokens_per_s": tokens / seconds if seconds > 0 else None,
    }


def pair_up(
    labelled: Mapping[int, Mapping[str, Any]], rows: Iterable[Mapping[str, Any]], metric: str
) -> list[Pair]:
    """Join a judge's result rows for ``metric`` with the labelled records, by input index."""
    out = []
    for row in rows:
        if row["metric"] != metric:
            continue
        labels = labelled.get(int(row["index"]))
        if labels is not None and applicable(metric, labels):
            out.append(Pair(int(row["index"]), str(row["id"]), labels, row))
    return out


def compare(
    labelled: Mapping[int, Mapping[str, Any]],
    rows_by_judge: Mapping[str, Sequence[Mapping[str, Any]]],
    metrics: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Per judge and metric: agreement with the labels on the items every judge scored."""
    out: dict[str, dict[str, Any]] = {name: {} for name in rows_by_judge}
    for metric in metrics:
        paired = {name: pair_up(labelled, rows, metric) for name, rows in rows_by_judge.items()}
        scored_sets = [
            {p.index for p in ps if p.row.get("error") is None} for ps in paired.values()
        ]
        common = set.intersection(*scored_sets) if scored_sets else set()
        for name, pairs in paired.items():
            out[name][metric] = metric_report(metric, pairs, common)
    return out


def item_rows(
    labelled: Mapping[int, Mapping[str, Any]],
    rows_by_judge: Mapping[str, Sequence[Mapping[str, Any]]],
    metrics: Sequence[str],
) -> list[dict[str, Any]]:
    """One row per judge x metric x item, for inspecting disagreements (largest first)."""
    out: list[dict[str, Any]] = []
    for name, rows in rows_by_judge.items():
        for metric in metrics:
            for p in pair_up(labelled, rows, metric):
                h = human_score(metric, p.labels)
                s = p.row.get("score")
                out.append(
                    {
                        "judge": name,
                        "metric": metric,
                        "index": p.index,
                        "id": p.id,
                        "human_score": h,
                        "judge_score": s,
                        "abs_error": abs(h - s) if h is not None and s is not None else None,
                        "labels": dict(p.labels),
                        "judge_verdicts": {
                            key: _verdicts(metric, p.row, key)
                            for key in LABELS_FOR[metric]
                            if key != "recall"
                        },
                        "reason": p.row.get("reason"),
                        "error": p.row.get("error"),
                    }
                )
    out.sort(key=lambda r: (-float(r["abs_error"] or 0.0), r["judge"], r["metric"], r["index"]))
    return out


def bench_table(report: Mapping[str, Any]) -> str:
    """The console table: one line per judge x metric with the headline numbers."""
    head = (
        f"{'judge':<16} {'metric':<10} {'n':>4} {'fail':>4} {'acc':>6} {'kappa':>6} "
        f"{'rho':>6} {'mae':>6} {'auc':>6} {'s/item':>7} {'tok/s':>6} {'load s':>6} {'MB':>6}"
    )
    lines = [head, "-" * len(head)]
    for name, judge in report["judges"].items():
        for metric, m in judge["metrics"].items():
            v = next(iter(m["verdicts"].values()), None) if m["verdicts"] else None
            s = m["scores"] or {}
            lines.append(
                f"{name[:16]:<16} {metric:<10} {m['n_common']:>4} {m['n_failed']:>4} "
                f"{_num(v and v['accuracy']['value']):>6} {_num(v and v['kappa']['value']):>6} "
                f"{_num(s.get('spearman', {}).get('value')):>6} "
                f"{_num(s.get('mae', {}).get('value')):>6} "
                f"{_num(s.get('roc_auc', {}).get('value')):>6} {_num(m['seconds_per_item'], 2):>7} "
                f"{_num(m['tokens_per_s'], 1):>6} {_num(judge['load_seconds'], 2):>6} "
                f"{_num(judge['peak_rss_mb'], 0):>6}"
            )
    return "\n".join(lines)


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
