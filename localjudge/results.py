"""The results file format (versioned) and the run summary.

``results.jsonl`` holds one row per item x metric; ``summary.json`` the per-metric statistics and
the run manifest. ``report`` and ``bench`` read these files, never runner internals. Rows contain
nothing that varies between a run and its cached rerun (the stats stored with a cached call are
those of the original call), so a rerun writes the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from localjudge.judge import JudgeIdentity
from localjudge.runner import ItemResult

FORMAT_VERSION = 1
#: rows and summaries written by this version carry ``"format": FORMAT_VERSION``
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def result_row(
    res: ItemResult, judge: JudgeIdentity, metric_settings: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON-ready row for one item x metric (stable key names, see README)."""
    row: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "index": res.index,
        "id": res.id,
        "metric": res.metric,
        "score": None,
        "reason": None,
        "verdicts": None,
        "details": None,
        "error": None,
        "judge": {"model": judge.model, "sha256": judge.sha256},
        "settings": dict(metric_settings),
        "seconds": None,
        "prompt_tokens": None,
        "evaluated_prompt_tokens": None,
        "completion_tokens": None,
    }
    if res.result is not None:
        r = res.result
        row.update(
            score=None if math.isnan(r.value) else r.value,
            reason=r.reason,
            verdicts=r.verdicts,
            details=r.details or None,
        )
        if r.stats is not None:
            row.update(
                seconds=round(r.stats.seconds, 4),
                prompt_tokens=r.stats.prompt_tokens,
                evaluated_prompt_tokens=r.stats.evaluated_prompt_tokens,
                completion_tokens=r.stats.completion_tokens,
            )
    elif res.error is not None:
        e = res.error
        row["error"] = {
            "kind": e.kind,
            "field": e.field,
            "message": e.message,
            "hint": e.hint or None,
        }
    return row


def dumps_row(row: Mapping[str, Any]) -> str:
    """One JSONL line: compact, UTF-8, keys in their documented order."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclass
class MetricSummary:
    """Running tally for one metric."""

    scores: list[float] = field(default_factory=list)
    n_failed: int = 0
    n_undefined: int = 0

    def add(self, row: Mapping[str, Any]) -> None:
        if row["error"] is not None:
            self.n_failed += 1
        elif row["score"] is None:
            self.n_undefined += 1
        else:
            self.scores.append(float(row["score"]))

    def as_dict(self) -> dict[str, Any]:
        values = np.asarray(self.scores, dtype=float)
        n = len(values)
        return {
            "n_scored": n,
            "n_failed": self.n_failed,
            "n_undefined": self.n_undefined,
            "mean": float(values.mean()) if n else None,
            "median": float(np.median(values)) if n else None,
            "std": float(values.std(ddof=1)) if n > 1 else None,
            "ci95": bootstrap_ci(self.scores),
        }


def bootstrap_ci(scores: Sequence[float], *, confidence: float = 0.95) -> list[float] | None:
    """Seeded percentile-bootstrap confidence interval of the mean (None below 2 values)."""
    if len(scores) < 2:
        return None
    values = np.asarray(scores, dtype=float)
    if np.all(values == values[0]):
        return [float(values[0]), float(values[0])]
    from scipy.stats import bootstrap  # noqa: PLC0415 (scipy is slow to import; only here)

    res = bootstrap(
        (values,),
        np.mean,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP_SEED),
        # resamples are drawn in batches so memory stays bounded on large runs
        batch=max(1, 2_000_000 // len(values)),
    )
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def summarize(
    rows: Iterable[Mapping[str, Any]], metrics: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Per-metric statistics over result rows; failures are counted, never averaged in."""
    tallies = {m: MetricSummary() for m in metrics}
    for row in rows:
        tallies.setdefault(row["metric"], MetricSummary()).add(row)
    return {m: t.as_dict() for m, t in tallies.items()}


def summary_table(summary: Mapping[str, Any]) -> str:
    """A compact plain-text table of a summary's metrics."""
    header = f"{'metric':<10} {'scored':>6} {'failed':>6} {'mean':>7} {'median':>7} {'ci95':>15}"
    lines = [header, "-" * len(header)]
    for name, m in summary["metrics"].items():
        ci = m["ci95"]
        lines.append(
            f"{name:<10} {m['n_scored']:>6} {m['n_failed']:>6} {_fmt(m['mean']):>7} "
            f"{_fmt(m['median']):>7} {(f'{ci[0]:.3f}-{ci[1]:.3f}' if ci else '-'):>15}"
        )
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
