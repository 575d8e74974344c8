"""What :func:`localjudge.evaluate` returns: the results as they stream, and what to do with them.

An :class:`Evaluation` is an iterator (each :class:`~localjudge.run.results.ItemResult` as its
chunk finishes, in input order, as the generator it replaces gave them), and gives what a
notebook or a CI job wants: :meth:`~Evaluation.summary` (the statistics and intervals of
``summary.json``), :meth:`~Evaluation.rows` and :meth:`~Evaluation.to_jsonl` (the documented
``results.jsonl`` rows), :meth:`~Evaluation.to_pandas` (one row per item, one column per
metric) and :meth:`~Evaluation.assert_thresholds`, which raises a readable
:class:`ThresholdError` naming the worst items.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localjudge.console import number
from localjudge.judge.protocol import JudgeIdentity
from localjudge.run.results import (
    PARTIAL,
    ItemResult,
    MetricStats,
    ResultRow,
    Summary,
    dumps_row,
    result_row,
)
from localjudge.run.summary import summarize

__all__ = [
    "RAGAS_NAMES",
    "Evaluation",
    "Missed",
    "RunOutcome",
    "ThresholdError",
    "below_thresholds",
    "check_thresholds",
    "failed_thresholds",
]

#: the metric column names ragas and Mastra users know (``to_pandas(names="ragas")``)
RAGAS_NAMES: Mapping[str, str] = {
    "recall": "context_recall",
    "position": "context_position",
    "relevance": "context_relevance",
}
#: how many of the lowest-scoring items a threshold failure lists
WORST_SHOWN = 5


class ThresholdError(AssertionError):
    """A metric's mean is below its threshold (or nothing was scored); the message lists, per
    failing metric, the mean, the threshold and the worst items with their reasons."""


@dataclass(frozen=True)
class RunOutcome:
    """What an eval run wrote, and its summary."""

    results_path: Path
    summary_path: Path
    summary: Summary
    failed_thresholds: list[str] = field(default_factory=list)
    #: what the user should know about the run's figures (the CLI prints them on stderr)
    warnings: list[str] = field(default_factory=list)


class Evaluation:
    """The results of :func:`~localjudge.evaluate`, streaming underneath."""

    def __init__(
        self,
        stream: Iterator[ItemResult],
        *,
        metrics: Sequence[str],
        identity: JudgeIdentity,
        settings_by_metric: Mapping[str, Mapping[str, Any]],
        keep: bool = True,
    ) -> None:
        self._stream: Iterator[ItemResult] | None = stream
        #: memorise results (False: a pure stream, memory bounded; the methods then see only
        #: what was not yet iterated)
        self._keep = keep
        self._seen: list[ItemResult] = []
        self._cursor = 0
        self.metrics = list(metrics)
        self.identity = identity
        self.settings_by_metric = settings_by_metric

    def __iter__(self) -> Iterator[ItemResult]:
        return self

    def __next__(self) -> ItemResult:
        """The next result, judging its chunk when it has not come yet (a generator's way:
        iterating consumes; the methods below still see every result)."""
        if self._cursor < len(self._seen):
            self._cursor += 1
            return self._seen[self._cursor - 1]
        if self._stream is None:
            raise StopIteration
        try:
            res = next(self._stream)
        except StopIteration:
            self._stream = None
            raise
        if self._keep:
            self._seen.append(res)
            self._cursor += 1
        return res

    def results(self) -> list[ItemResult]:
        """Every result, consumed or not (runs the rest of the evaluation)."""
        if self._stream is not None:
            self._seen.extend(self._stream)
            self._stream = None
        return list(self._seen)

    def rows(self) -> list[ResultRow]:
        """The ``results.jsonl`` rows (README, "CLI"), in order."""
        return [
            result_row(r, self.identity, self.settings_by_metric[r.metric]) for r in self.results()
        ]

    def summary(self) -> dict[str, MetricStats]:
        """Per metric: ``n_scored``, ``n_failed``, ``n_undefined``, ``close_calls`` (verdicts'
        decisions within the close-call margin of their cut-off), ``mean``, ``soft_mean``,
        ``median``, ``std`` and the seeded bootstrap ``ci95``, as in ``summary.json``."""
        return summarize(self.rows(), self.metrics)

    def to_jsonl(self, path: str | Path) -> Path:
        """Write the rows as ``results.jsonl`` (through a ``.partial`` file, renamed when whole)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + PARTIAL)
        try:
            with partial.open("w", encoding="utf-8", newline="\n") as f:
                for row in self.rows():
                    f.write(dumps_row(row) + "\n")
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(target)
        return target

    def to_pandas(self, *, names: str = "localjudge") -> Any:
        """A DataFrame with one row per item (``index``, ``id``) and per metric the columns
        ``<metric>`` (the score), ``<metric>_soft``, ``<metric>_reason`` and
        ``<metric>_error``. ``names="ragas"`` names the metrics as ragas and Mastra users know
        them (``context_recall``, ``context_position``, ``context_relevance``). Needs pandas."""
        if names not in ("localjudge", "ragas"):
            raise ValueError("names must be 'localjudge' or 'ragas'")
        try:
            import pandas as pd  # type: ignore[import-untyped]  # noqa: PLC0415 (optional)
        except ImportError as exc:
            raise ImportError(
                "to_pandas() needs pandas: pip install 'localjudge-rag[pandas]'"
            ) from exc
        table: dict[int, dict[str, Any]] = {}
        for row in self.rows():
            name = (
                RAGAS_NAMES.get(row["metric"], row["metric"]) if names == "ragas" else row["metric"]
            )
            entry = table.setdefault(row["index"], {"index": row["index"], "id": row["id"]})
            error = row["error"]
            entry[name] = row["score"]
            entry[f"{name}_soft"] = row["soft_score"]
            entry[f"{name}_reason"] = row["reason"]
            entry[f"{name}_error"] = error["message"] if error else None
        return pd.DataFrame(list(table.values()))

    def assert_thresholds(self, thresholds: Mapping[str, float]) -> None:
        """Raise :class:`ThresholdError` unless every named metric's mean reaches its
        threshold, e.g. ``{"recall": 0.7}``; the message names the worst items."""
        check_thresholds(self.rows(), thresholds)


@dataclass(frozen=True)
class Missed:
    """A metric whose mean misses its threshold (``mean`` None: nothing was scored)."""

    metric: str
    mean: float | None
    threshold: float


def below_thresholds(
    stats: Mapping[str, Mapping[str, Any]], thresholds: Mapping[str, float]
) -> list[Missed]:
    """The one threshold check (``eval --fail-under``, :meth:`Evaluation.assert_thresholds`,
    :func:`localjudge.testing.assert_scores`): each metric of ``thresholds`` whose mean in
    ``stats`` (per metric, as ``summary.json`` has them) is below its threshold, or that has
    no mean, in the order of ``thresholds``."""
    return [
        Missed(metric, mean, threshold)
        for metric, threshold in thresholds.items()
        if (mean := stats[metric]["mean"]) is None or mean < threshold
    ]


def failed_thresholds(
    summary: Summary, fail_under: Mapping[str, float] | None, max_failure_rate: float | None
) -> list[str]:
    """The thresholds a run's summary misses, one line each: a mean under ``fail_under``'s
    (:func:`below_thresholds`), a metric with more failed items than
    ``max_failure_rate`` allows."""
    failed = [
        f"{m.metric} mean {m.mean} < {m.threshold}"
        for m in below_thresholds(summary["metrics"], fail_under or {})
    ]
    if max_failure_rate is not None:
        for name, stats in summary["metrics"].items():
            total = stats["n_scored"] + stats["n_failed"] + stats["n_undefined"]
            rate = stats["n_failed"] / total if total else 0.0
            if rate > max_failure_rate:
                failed.append(
                    f"{name}: {stats['n_failed']} of {total} items failed ({rate:.1%}), "
                    f"over --max-failure-rate {max_failure_rate:g}"
                )
    return failed


def check_thresholds(rows: Iterable[Mapping[str, Any]], thresholds: Mapping[str, float]) -> None:
    """:func:`below_thresholds` over result rows, raising :class:`ThresholdError` that names
    the worst items (:meth:`Evaluation.assert_thresholds`,
    :func:`localjudge.testing.assert_scores`)."""
    by_metric: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_metric.setdefault(row["metric"], []).append(row)
    unknown = sorted(set(thresholds) - set(by_metric))
    if unknown:
        raise ValueError(f"no results for the metric(s) {', '.join(unknown)}")
    stats = summarize((r for rows in by_metric.values() for r in rows), list(by_metric))
    problems = []
    for missed in below_thresholds(stats, thresholds):
        metric, mean, threshold = missed.metric, missed.mean, missed.threshold
        scored = [r for r in by_metric[metric] if r["score"] is not None]
        failed = [r for r in by_metric[metric] if r["error"] is not None]
        head = (
            f"{metric}: mean {number(mean)} < {number(threshold)} ({len(scored)} scored"
            if mean is not None
            else f"{metric}: nothing scored (threshold {number(threshold)}"
        ) + (f", {len(failed)} failed)" if failed else ")")
        worst = sorted(scored, key=lambda r: (r["score"], r["index"]))[:WORST_SHOWN]
        lines = [head, *(_item_line(r) for r in [*failed[:WORST_SHOWN], *worst])]
        problems.append("\n".join(lines))
    if problems:
        raise ThresholdError("scores below their thresholds:\n" + "\n".join(problems))


def _item_line(row: Mapping[str, Any]) -> str:
    where = f"  #{row['index']} id {row['id']!r}"
    if row["error"] is not None:
        return f"{where}: error: {row['error']['message']}"
    return f"{where}: {number(row['score'])}  {row['reason'] or ''}".rstrip()
