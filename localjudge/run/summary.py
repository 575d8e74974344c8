"""``summary.json``: the per-metric statistics of a run and its manifest, written and read back,
and the console table of a summary.

:func:`build_summary` takes the tallies :class:`~localjudge.run.results.ResultsWriter` kept while
it wrote the rows; :func:`summarize` computes the same statistics from rows already written. The
format (name, version, shape) is :mod:`localjudge.run.results`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from localjudge.canonical import read_json, write_json
from localjudge.console import number
from localjudge.judge.protocol import Judge
from localjudge.metrics.protocols import CURRENT, protocol_ref
from localjudge.run.results import (
    SUMMARY,
    MetricStats,
    MetricSummary,
    ResultsWriter,
    Summary,
    checked_version,
)
from localjudge.run.settings import cache_counts
from localjudge.versions import versions

__all__ = [
    "CLOSE_CALLS_DOC",
    "build_summary",
    "close_calls_line",
    "read_summary",
    "summarize",
    "summary_table",
    "write_summary",
]


def summarize(rows: Iterable[Mapping[str, Any]], metrics: Sequence[str]) -> dict[str, MetricStats]:
    """Per-metric statistics over result rows; failures are counted, never averaged in."""
    tallies = {m: MetricSummary() for m in metrics}
    for row in rows:
        tallies.setdefault(row["metric"], MetricSummary()).add(row)
    return {m: t.as_dict() for m, t in tallies.items()}


def build_summary(
    writer: ResultsWriter,
    *,
    data: Path,
    data_sha256: str,
    judge: Judge,
    settings: Mapping[str, Any],
    protocol: str = CURRENT,
) -> Summary:
    """The summary of the run ``writer`` wrote: statistics per metric and the run manifest
    (with the ``protocol`` its metrics asked by)."""
    counts = cache_counts(judge)
    return {
        "format": SUMMARY.version,
        "metrics": {name: t.as_dict() for name, t in writer.tallies.items()},
        "run": {
            "data": str(data),
            "data_sha256": data_sha256,
            "n_items": writer.n_items,
            "judge": judge.identity.as_dict(),
            # the prompts and layout the metrics asked by (localjudge.metrics.protocols)
            "protocol": protocol_ref(protocol).as_json(),
            "settings": dict(settings),
            "versions": versions(),
            # a caching judge counts real calls; without one, the rows count the calls made for them
            "judge_calls": counts[0] if counts is not None else writer.calls,
            "cache_hits": counts[1] if counts is not None else 0,
        },
    }


def write_summary(out_dir: Path, summary: Summary) -> Path:
    """Write ``summary.json`` atomically (a reader never sees half of it)."""
    return write_json(out_dir / SUMMARY.name, summary)


def read_summary(path: Path) -> Summary:
    """A ``summary.json``, its version checked."""
    return checked_version(read_json(path), str(path))  # type: ignore[return-value]


#: where the docs say what a close call is
CLOSE_CALLS_DOC = "docs/reliability.md#close-calls"
#: what a close call means, in the lines that count them
CLOSE_CALLS_WHY = "verdicts near enough their cut-off to go the other way on another machine"


def close_calls_line(summary: Mapping[str, Any]) -> str | None:
    """The line that says how many close calls each metric of ``summary`` has (None when it has
    none, or was written before they were counted)."""
    return counted_close_calls("close calls", summary["metrics"], "close_calls")


def counted_close_calls(head: str, metrics: Mapping[str, Any], key: str) -> str | None:
    """``head: metric n, ...`` and what a close call is, from each metric's count under ``key``
    (None when no metric has one)."""
    counts = [
        f"{name} {n}" for name, m in metrics.items() if isinstance(n := m.get(key), int) and n > 0
    ]
    if not counts:
        return None
    return f"{head}: {', '.join(counts)} ({CLOSE_CALLS_WHY}; {CLOSE_CALLS_DOC})"


def summary_table(summary: Mapping[str, Any], *, terminal: bool = False) -> str:
    """A summary's metrics as a console table (plain text unless ``terminal``; see
    :mod:`localjudge.console`), with the corrected means of ``--labels`` below it, and the
    close calls' line (:func:`close_calls_line`) last when there are any."""
    from localjudge.console import Column, TextTable, render  # noqa: PLC0415

    rows = []
    for name, m in summary["metrics"].items():
        ci = m["ci95"]
        rows.append(
            [
                name,
                str(m["n_scored"]),
                str(m["n_failed"]),
                number(m["mean"]),
                number(m["median"]),
                f"{number(ci[0])}-{number(ci[1])}" if ci else "-",
            ]
        )
    numbers = ("scored", "failed", "mean", "median", "ci95")
    tables = [TextTable([Column("metric"), *(Column(h, numeric=True) for h in numbers)], rows)]
    corrected = []
    for name, m in summary["metrics"].items():
        for kind, est in (("hard", m.get("ppi")), ("soft", m.get("ppi_soft"))):
            if est is None:
                continue
            lo, hi = est["ci95"]
            data = est.get("data_ci95")
            corrected.append(
                [
                    name,
                    kind,
                    number(est["estimate"]),
                    f"{number(lo)}-{number(hi)}",
                    f"{number(data[0])}-{number(data[1])}" if data else "-",
                    str(est["n_labelled"]),
                    number(est["judge_bias"], sign=True),
                ]
            )
    if corrected:
        headers = ("estimate", "ci95", "these items", "n labelled", "judge bias")
        tables.append(
            TextTable(
                [Column("metric"), Column("kind"), *(Column(h, numeric=True) for h in headers)],
                corrected,
                title="human-scale mean, corrected by the labelled items (prediction-powered):",
            )
        )
    text = render(tables, terminal=terminal)
    line = close_calls_line(summary)
    return text if line is None else f"{text}\n{line}"
