"""Bench's comparisons: a judge's result rows paired with the human labels (checked by
:mod:`localjudge.run.labels`) and scored for agreement (:func:`compare`), judges compared with
each other (:func:`judges_agreement`), and the per-item rows that show the disagreements
(:func:`item_rows`).

Pure functions of the labelled records and the ``results.jsonl`` rows (the statistics are
:mod:`localjudge.stats.agreement`'s); :mod:`localjudge.run.bench.runner` runs the judges and
writes the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from localjudge.metrics import METRICS
from localjudge.run.labels import applicable
from localjudge.run.results import BenchItemRow
from localjudge.stats.agreement import (
    Pair,
    krippendorff_alpha_interval,
    mae,
    score_agreement,
    spearman,
    top_pattern,
    verdict_agreement,
    with_ci,
)

__all__ = ["compare", "item_rows", "judges_agreement", "metric_report", "pair_up"]


# --------------------------------------------------------------------------- comparison


def metric_report(metric: str, pairs: Sequence[Pair], common: set[int]) -> dict[str, Any]:
    """One judge x metric: agreement on the common items, failures, speed."""
    cls = METRICS[metric]
    scored = [p for p in pairs if p.row.get("error") is None]
    failed = [p for p in pairs if p.row.get("error") is not None]
    on_common = [p for p in scored if p.index in common]
    timed = [p.row for p in scored if p.row.get("seconds") is not None]
    seconds = sum(float(r["seconds"]) for r in timed)
    tokens = sum(int(r["completion_tokens"] or 0) for r in timed)
    verdicts = {
        key: agreement
        for key, kind in cls.labels.items()
        if kind.per_piece and (agreement := verdict_agreement(cls, key, on_common)) is not None
    }
    return {
        "n_items": len(pairs),
        "n_scored": len(scored),
        "n_failed": len(failed),
        "failed_ids": [p.id for p in failed],
        "n_common": len(on_common),
        "verdicts": verdicts,
        "scores": score_agreement(cls, on_common),
        # the same agreement for the soft scores (the judge's probabilities), when it has them
        "soft_scores": score_agreement(cls, on_common, key="soft_score"),
        # a verdict vector standing for a judgement shows as a share near 1
        "top_pattern": top_pattern(cls, on_common),
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


def judges_agreement(
    rows_by_judge: Mapping[str, Sequence[Mapping[str, Any]]], metrics: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Per pair of judges (``"a | b"``, in the order given) and metric, how far they agree with
    each other, no labels needed: Cohen's kappa per per-piece verdict (weighted as for the
    labels), and Spearman, MAE and Krippendorff's alpha (interval) of item scores, on the items
    both scored. Two judges that
    agree with each other but not with people are measuring something else."""
    out: dict[str, dict[str, Any]] = {}
    names = list(rows_by_judge)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            out[f"{a} | {b}"] = {
                metric: agreement
                for metric in metrics
                if (agreement := _pair_agreement(metric, rows_by_judge[a], rows_by_judge[b]))
            }
    return out


def _pair_agreement(
    metric: str, rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    cls = METRICS[metric]
    first = {int(r["index"]): r for r in rows_a if r["metric"] == metric and r.get("error") is None}
    both = [
        (first[int(r["index"])], r)
        for r in rows_b
        if r["metric"] == metric and r.get("error") is None and int(r["index"]) in first
    ]
    if not both:
        return None
    verdicts = {}
    for key, kind in cls.labels.items():
        if not kind.per_piece:
            continue
        # judge a stands where the human labels stand in the comparison with labels
        pairs = [
            Pair(int(rb["index"]), str(rb["id"]),
                 {key: cls.judge_values(ra.get("verdicts") or [], key)}, rb)
            for ra, rb in both
        ]  # fmt: skip
        if (agreement := verdict_agreement(cls, key, pairs)) is not None:
            verdicts[key] = {k: agreement[k] for k in ("n_verdicts", "kappa", "accuracy")}
    points = [
        (float(ra["score"]), float(rb["score"]))
        for ra, rb in both
        if ra.get("score") is not None and rb.get("score") is not None
    ]

    def col(ps: Sequence[tuple[float, float]], k: int) -> list[float]:
        return [pt[k] for pt in ps]

    return {
        "n_items": len(both),
        "verdicts": verdicts,
        "spearman": with_ci(points, lambda ps: spearman(col(ps, 0), col(ps, 1)))
        if points
        else None,
        "mae": with_ci(points, lambda ps: mae(col(ps, 0), col(ps, 1))) if points else None,
        "alpha": with_ci(points, lambda ps: krippendorff_alpha_interval(col(ps, 0), col(ps, 1)))
        if points
        else None,
    }


def item_rows(
    labelled: Mapping[int, Mapping[str, Any]],
    rows_by_judge: Mapping[str, Sequence[Mapping[str, Any]]],
    metrics: Sequence[str],
) -> list[BenchItemRow]:
    """One row per judge x metric x item, for inspecting disagreements (largest first)."""
    out: list[BenchItemRow] = []
    for name, rows in rows_by_judge.items():
        for metric in metrics:
            cls = METRICS[metric]
            for p in pair_up(labelled, rows, metric):
                h = cls.human_score(p.labels)
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
                            key: cls.judge_values(p.row.get("verdicts") or [], key)
                            for key, kind in cls.labels.items()
                            if kind.per_piece
                        },
                        "reason": p.row.get("reason"),
                        "error": p.row.get("error"),
                    }
                )
    out.sort(key=lambda r: (-float(r["abs_error"] or 0.0), r["judge"], r["metric"], r["index"]))
    return out
