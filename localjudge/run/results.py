"""The results format: every file localjudge writes about a run, in one versioned, typed home.

Per file kind (:data:`RESULTS`, :data:`SUMMARY`, :data:`BENCH`, :data:`BENCH_ITEMS`): its name,
its version, its shape (the ``TypedDict`` below), its writer and its reader (``summary.json``'s
are in :mod:`localjudge.run.summary`; the run directory's lock and replace rules in
:mod:`localjudge.run.rundir`). Readers check the
version and raise :class:`~localjudge.errors.DataError` on a file they cannot read; ``report``
and ``bench`` read runs only through them, never runner internals, so an old run can be
re-reported and re-benched without re-judging.

``results.jsonl`` holds one row per item x metric; ``summary.json`` the per-metric statistics and
the run manifest. Rows contain nothing that varies between a run and its cached rerun (the stats
stored with a cached call are those of the original call), so a rerun writes the same bytes.
``bench_items.jsonl`` rows are versioned by their ``bench.json``.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict

import numpy as np
from typing_extensions import NotRequired  # typing's own from Python 3.11

from localjudge.canonical import compact_json, read_json, read_jsonl, write_json
from localjudge.errors import DataError, DiskFullError, ItemError, is_disk_full
from localjudge.judge.protocol import JudgeIdentity
from localjudge.metrics.base import MetricResult
from localjudge.stats.bootstrap import mean_interval

__all__ = [
    "BENCH",
    "BENCH_ITEMS",
    "FORMAT_VERSION",
    "LABELLED",
    "RESULTS",
    "SUMMARY",
    "BenchItemRow",
    "BenchReport",
    "ErrorInfo",
    "FileKind",
    "ItemResult",
    "MetricStats",
    "MetricSummary",
    "ResultRow",
    "ResultsWriter",
    "RunInfo",
    "Summary",
    "checked_version",
    "close_call_text",
    "close_calls",
    "dumps_row",
    "read_bench",
    "read_bench_items",
    "read_results",
    "result_row",
    "write_bench",
]

#: the version of every file kind this localjudge writes
FORMAT_VERSION = 2
#: the versions it reads: version 1 lacks the soft scores (``soft_score``, ``soft_mean``)
READABLE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class FileKind:
    """One kind of run file: its name in a run directory and its format version."""

    name: str
    version: int = FORMAT_VERSION


RESULTS = FileKind("results.jsonl")
SUMMARY = FileKind("summary.json")
BENCH = FileKind("bench.json")
BENCH_ITEMS = FileKind("bench_items.jsonl")
#: ``eval --labels``: the labelled items' rows, in the results format
LABELLED = FileKind("labelled.jsonl")
#: suffix of the results file while its run is going
PARTIAL = ".partial"


# --------------------------------------------------------------------------- shapes


class ErrorInfo(TypedDict):
    kind: str
    field: str | None
    message: str
    hint: str | None


class ResultRow(TypedDict):
    """One line of ``results.jsonl`` (keys in this order; README, "CLI")."""

    format: int
    index: int
    id: str
    metric: str
    score: float | None
    #: the score in expectation over the judge's soft verdicts (null without them)
    soft_score: float | None
    reason: str | None
    verdicts: list[dict[str, Any]] | None
    details: dict[str, Any] | None
    error: ErrorInfo | None
    judge: dict[str, str]
    settings: dict[str, Any]
    seconds: float | None
    prompt_tokens: int | None
    evaluated_prompt_tokens: int | None
    completion_tokens: int | None
    #: with ``eval --isotonic`` only: the score mapped to the human scale (never replaces it)
    calibrated_score: NotRequired[float | None]
    #: with ``eval --raw-output`` only: the judge's raw output text (null when no call was made)
    raw_output: NotRequired[str | None]


class MetricStats(TypedDict):
    n_scored: int
    n_failed: int
    n_undefined: int
    #: the decisions within the close-call margin of their cut-off (:func:`close_calls`);
    #: absent from summaries written before it was counted
    close_calls: NotRequired[int]
    mean: float | None
    #: the mean soft score over the scored items that have one (null when none has)
    soft_mean: float | None
    median: float | None
    std: float | None
    ci95: list[float] | None
    #: with human labels (``eval --labels``): the prediction-powered estimate of the mean the
    #: human labels would give, from the hard and from the soft scores (localjudge.stats.ppi)
    ppi: NotRequired[dict[str, Any] | None]
    ppi_soft: NotRequired[dict[str, Any] | None]


class RunInfo(TypedDict):
    data: str
    data_sha256: str
    n_items: int
    judge: dict[str, Any]
    #: the protocol the metrics asked by, ``{name, fingerprint}`` (summaries before it: none)
    protocol: NotRequired[dict[str, str]]
    settings: dict[str, Any]
    versions: dict[str, str]
    judge_calls: int
    cache_hits: int


class Summary(TypedDict):
    """``summary.json``."""

    format: int
    metrics: dict[str, MetricStats]
    run: RunInfo


class BenchReport(TypedDict):
    """``bench.json``: per judge its run facts and per metric its agreement report."""

    format: int
    data: str
    data_sha256: str
    n_labelled: int
    metrics: list[str]
    versions: dict[str, str]
    judges: dict[str, dict[str, Any]]
    #: per pair of judges ("a | b") and metric, their agreement with each other
    judge_pairs: NotRequired[dict[str, dict[str, Any]]]


class BenchItemRow(TypedDict):
    """One line of ``bench_items.jsonl``: a judge's result for one labelled item."""

    judge: str
    metric: str
    index: int
    id: str
    human_score: float | None
    judge_score: float | None
    abs_error: float | None
    labels: dict[str, Any]
    judge_verdicts: dict[str, Any]
    reason: str | None
    error: ErrorInfo | None


# --------------------------------------------------------------------------- results.jsonl


@dataclass(frozen=True)
class ItemResult:
    """One item x metric: a score (``result``) or a per-item failure (``error``), never both."""

    index: int
    id: str
    metric: str
    result: MetricResult | None
    error: ItemError | None


def result_row(
    res: ItemResult, judge: JudgeIdentity, metric_settings: Mapping[str, Any]
) -> ResultRow:
    """The row for one item x metric (stable key names, see README)."""
    row: ResultRow = {
        "format": RESULTS.version,
        "index": res.index,
        "id": res.id,
        "metric": res.metric,
        "score": None,
        "soft_score": None,
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
        row["score"] = None if math.isnan(r.value) else r.value
        row["soft_score"] = (
            None if r.soft_value is None or math.isnan(r.soft_value) else r.soft_value
        )
        row["reason"] = r.reason
        row["verdicts"] = r.verdicts
        row["details"] = r.details or None
        if r.stats is not None:
            row["seconds"] = round(r.stats.seconds, 4)
            row["prompt_tokens"] = r.stats.prompt_tokens
            row["evaluated_prompt_tokens"] = r.stats.evaluated_prompt_tokens
            row["completion_tokens"] = r.stats.completion_tokens
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
    return compact_json(row)


class ResultsWriter:
    """Streams rows to ``results.jsonl.partial`` and renames it to ``results.jsonl`` when the
    block ends without an exception (an interrupted run leaves the partial file); tallies each
    metric for the summary on the way."""

    def __init__(
        self,
        path: Path,
        judge: JudgeIdentity,
        settings_by_metric: Mapping[str, Mapping[str, Any]],
        calibrations: Mapping[str, Callable[[ResultRow], float | None]] | None = None,
        *,
        raw_output: bool = False,
    ) -> None:
        self.path = path
        #: whether each row carries the judge's raw output (``eval --raw-output``)
        self.raw_output = raw_output
        #: per metric, a row's score on the human scale: each row of such a metric gets
        #: ``calibrated_score`` beside its ``score`` (``eval --isotonic``)
        self.calibrations = dict(calibrations or {})
        self.partial = path.with_name(path.name + PARTIAL)
        self.judge = judge
        self.settings_by_metric = settings_by_metric
        self.tallies = {name: MetricSummary() for name in settings_by_metric}
        self.n_items = 0
        self.calls = 0
        self._last_index: int | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.partial.open("wb")
        #: bytes of complete rows in the partial file
        self._written = 0

    def write(self, res: ItemResult) -> ResultRow:
        row = result_row(res, self.judge, self.settings_by_metric[res.metric])
        if res.metric in self.calibrations:
            row["calibrated_score"] = self.calibrations[res.metric](row)
        if self.raw_output:
            row["raw_output"] = res.result.raw if res.result is not None else None
        line = (dumps_row(row) + "\n").encode("utf-8")
        try:
            self._file.write(line)
            self._file.flush()
        except OSError as exc:
            self._cut_back()
            if is_disk_full(exc):
                raise DiskFullError(str(self.partial)) from exc
            raise
        self._written += len(line)
        self.tallies[res.metric].add(row)
        self.n_items += res.index != self._last_index
        self._last_index = res.index
        self.calls += res.result.calls if res.result is not None else 0
        return row

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._file.close()
        except OSError:  # the buffer could not be flushed (a full disk): drop the torn row
            self._cut_back()
            if exc_type is None:
                raise
            return
        if exc_type is None:
            self.partial.replace(self.path)

    def _cut_back(self) -> None:
        """Make the partial file end at its last complete row (a write that failed half-way
        leaves a torn line; cutting a file back needs no space)."""
        with contextlib.suppress(OSError):
            os.truncate(self.partial, self._written)


def read_results(path: Path) -> list[ResultRow]:
    """The rows of a ``results.jsonl``; every row's version is checked."""
    return [checked_version(row, where) for row, where in read_jsonl(path)]  # type: ignore[misc]


def close_calls(verdict: Any) -> dict[str, float]:
    """A verdict's close calls, by decision key (``{"attributed": -0.0005}``): the decisions
    whose soft value lay within the close-call margin of their cut-off
    (:func:`localjudge.decisions.close_call`); empty for any other verdict, and for rows
    written before close calls were marked."""
    found = verdict.get("close_call") if isinstance(verdict, Mapping) else None
    return dict(found) if isinstance(found, Mapping) else {}


def close_call_text(close: Mapping[str, Any]) -> str:
    """A verdict's close calls as text, each decision key with its signed distance to the cut-off
    (``"relevance +0.0040, used -0.0005"``)."""
    return ", ".join(
        f"{key} {float(d):+.4f}" if isinstance(d, (int, float)) else f"{key} {d}"
        for key, d in close.items()
    )


# --------------------------------------------------------------------------- tallies


@dataclass
class MetricSummary:
    """Running tally for one metric."""

    scores: list[float] = field(default_factory=list)
    n_failed: int = 0
    n_undefined: int = 0
    #: the soft score of each scored item that has one, in order
    soft_scores: list[float] = field(default_factory=list)
    #: the decisions of its verdicts that were close calls
    close_calls: int = 0

    def add(self, row: Mapping[str, Any]) -> None:
        if row["error"] is not None:
            self.n_failed += 1
        elif row["score"] is None:
            self.n_undefined += 1
        else:
            self.scores.append(float(row["score"]))
            if row.get("soft_score") is not None:
                self.soft_scores.append(float(row["soft_score"]))
        self.close_calls += sum(len(close_calls(v)) for v in row.get("verdicts") or [])

    def as_dict(self) -> MetricStats:
        values = np.asarray(self.scores, dtype=float)
        n = len(values)
        return {
            "n_scored": n,
            "n_failed": self.n_failed,
            "n_undefined": self.n_undefined,
            "close_calls": self.close_calls,
            "mean": float(values.mean()) if n else None,
            "soft_mean": float(np.mean(self.soft_scores)) if self.soft_scores else None,
            "median": float(np.median(values)) if n else None,
            "std": float(values.std(ddof=1)) if n > 1 else None,
            "ci95": mean_interval(self.scores),
        }


# --------------------------------------------------------------------------- bench files


def write_bench(out_dir: Path, report: BenchReport, items: Iterable[BenchItemRow]) -> Path:
    """Write ``bench.json`` and ``bench_items.jsonl``; returns the former's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / BENCH_ITEMS.name).open("w", encoding="utf-8", newline="\n") as f:
        for row in items:
            f.write(dumps_row(row) + "\n")
    return write_json(out_dir / BENCH.name, report)


def read_bench(path: Path) -> BenchReport:
    """A ``bench.json``, its version checked."""
    return checked_version(read_json(path), str(path))  # type: ignore[return-value]


def read_bench_items(path: Path) -> list[BenchItemRow]:
    """The rows of a ``bench_items.jsonl`` (versioned by its ``bench.json``)."""
    return [row for row, _ in read_jsonl(path)]  # type: ignore[misc]


def checked_version(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    version = obj.get("format")
    if version not in READABLE_VERSIONS:
        raise DataError(
            f"{where}: unknown format version {version!r} (this localjudge reads formats "
            f"{', '.join(map(str, READABLE_VERSIONS))})",
            hint="read it with the localjudge version that wrote it, or re-run",
        )
    return obj
