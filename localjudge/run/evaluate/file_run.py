"""Running an eval file to file (:func:`eval_file`): ``results.jsonl`` and ``summary.json``
from a data file, with the survey of the data before it and the labelled items of PPI.

:func:`eval_file` streams rows to ``results.jsonl.partial`` as chunks finish and renames it to
``results.jsonl`` when the run completes; every judge call is in the cache the moment it returns,
so an interrupted run, started again with the same command, re-judges nothing it had finished.
With ``labels``, the labelled items are scored first (``labelled.jsonl``) and the summary gains
the prediction-powered means (:mod:`localjudge.stats.ppi`). The loop itself is
:func:`localjudge.run.evaluate.evaluation.evaluate`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from localjudge.canonical import canonical_json, file_sha256, sha256_text
from localjudge.data.items import ALIASES, FIELDS
from localjudge.data.records import Record
from localjudge.decisions import Cutoffs
from localjudge.errors import UsageError
from localjudge.judge.isolation import InterruptLatch
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, Metric
from localjudge.run.evaluate.evaluation import (
    CHUNK_SIZE,
    OnJudging,
    evaluate,
    metric_settings,
    read,
    resolve_cutoffs,
)
from localjudge.run.evaluate.labelled_pass import (
    LabelledScores,
    calibrations,
    corrected,
    in_sample,
    score_labelled,
)
from localjudge.run.outcome import below_thresholds
from localjudge.run.results import RESULTS, ItemResult, ResultRow, ResultsWriter, Summary
from localjudge.run.rundir import finished_run, output_lock, refuse_replacing, run_differences
from localjudge.run.summary import build_summary, write_summary

__all__ = [
    "DataSurvey",
    "LabelledScores",
    "RunOutcome",
    "eval_file",
    "failed_thresholds",
    "in_sample",
    "survey",
]


def _selection_sha256(only: Mapping[str, Collection[int]]) -> str:
    """What identifies a per-metric selection of items in a run's settings."""
    return sha256_text(canonical_json({m: sorted(set(ix)) for m, ix in only.items()}))


@dataclass(frozen=True)
class RunOutcome:
    """What an eval run wrote, and its summary."""

    results_path: Path
    summary_path: Path
    summary: Summary
    failed_thresholds: list[str] = field(default_factory=list)
    #: what the user should know about the run's figures (the CLI prints them on stderr)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DataSurvey:
    """One pass over a data file before scoring: how many records, which metrics apply."""

    n_records: int
    metrics: list[str]


def survey(
    data: Path, *, fmt: str | None = None, mapping: Mapping[str, str], limit: int | None
) -> DataSurvey:
    """Count the records (up to ``limit``) and find every metric whose required fields some
    record has."""
    present: set[str] = set()
    n = 0
    for rec in islice(read(data, fmt=fmt, mapping=mapping), limit):
        n += 1
        if rec.data is None:
            continue
        for ours in FIELDS:
            names = [mapping.get(ours, ours), *(a for a, t in ALIASES.items() if t == ours)]
            if any(rec.data.get(name) not in (None, "", []) for name in names):
                present.add(ours)
    metrics = [name for name, cls in METRICS.items() if set(cls.required) <= present]
    return DataSurvey(n_records=n, metrics=metrics)


def eval_file(
    data: Path,
    out_dir: Path,
    *,
    judge: Judge,
    metrics: Sequence[Metric],
    mapping: Mapping[str, str] | None = None,
    fmt: str | None = None,
    limit: int | None = None,
    truncate: bool = False,
    fail_under: Mapping[str, float] | None = None,
    max_failure_rate: float | None = None,
    settings: Mapping[str, Any] | None = None,
    on_result: Callable[[ItemResult], None] | None = None,
    on_judging: OnJudging | None = None,
    labels: Path | None = None,
    isotonic: bool = False,
    raw_output: bool = False,
    overwrite: bool = False,
    chunk_size: int = CHUNK_SIZE,
    only: Mapping[str, Collection[int]] | None = None,
    cutoffs: Cutoffs | None = None,
) -> RunOutcome:
    """Score ``data`` with ``metrics`` and write ``results.jsonl`` and ``summary.json`` to
    ``out_dir``. ``fail_under`` maps metric names to thresholds for their mean;
    ``max_failure_rate`` (0 to 1) is the largest share of failed items any metric may have.
    Both only fill :attr:`RunOutcome.failed_thresholds` (the CLI exits 1 on them).

    With ``labels`` (a small labelled file in bench's format) those items are scored first
    (``labelled.jsonl``) and the summary gains, per metric, the prediction-powered estimate of
    the human-scale mean over ``data`` with its interval (``ppi``, ``ppi_soft``; see
    :mod:`localjudge.stats.ppi`); ``isotonic`` also adds each row's ``calibrated_score``, the
    judge score mapped to the human scale by an isotonic fit on the labelled items (recorded in
    the run's settings as ``isotonic``).
    ``raw_output`` adds each row's raw judge output text (``raw_output``). ``chunk_size``:
    items handed to the judge together per metric (rows do not depend on it; a Ray judge wants
    large chunks, :data:`localjudge.cluster.RAY_CHUNK_SIZE`). ``only``: per metric, the input
    indices it scores (see :func:`evaluate`); recorded in the run's settings by its sha256.

    A finished run already in ``out_dir`` is replaced only when this run is the same run again
    (same data sha256, judge identity and settings: a rerun writes the same rows), or with
    ``overwrite``; otherwise :class:`~localjudge.errors.UsageError` is raised before anything
    is judged. An unfinished run there (``results.jsonl.partial``) is always taken over: that is
    how a rerun resumes.

    ``cutoffs``: as :func:`evaluate` takes them (by default the judge's own), resolved once: the
    data, the labelled items and each metric's recorded settings all use the same ones.

    Pass a :class:`~localjudge.judge.cache.caching.CachingJudge` to cache and resume."""
    mapping = dict(mapping or {})
    _check_options(metrics, fail_under, labels, isotonic=isotonic)
    records = read(data, fmt=fmt, mapping=mapping)  # fails now on an unreadable file
    with output_lock(out_dir):
        run = _prepare(
            data,
            out_dir,
            judge=judge,
            metrics=metrics,
            mapping=mapping,
            cutoffs=cutoffs,
            labels=labels,
            settings=settings,
            run_options={"limit": limit, "map": mapping, "format": fmt},
            only=only,
            isotonic=isotonic,
            truncate=truncate,
            raw_output=raw_output,
            chunk_size=chunk_size,
            overwrite=overwrite,
        )
        labelled = _labelled_pass(run)
        writer = _data_pass(
            run,
            islice(records, limit),
            calibrations(labelled) if isotonic else {},
            only=only,
            on_result=on_result,
            on_judging=on_judging,
        )
        summary = _summary(run, writer, labelled)
        summary_path = write_summary(out_dir, summary)
        failed = failed_thresholds(summary, fail_under, max_failure_rate)
        return RunOutcome(writer.path, summary_path, summary, failed, _notes(run))


def _check_options(
    metrics: Sequence[Metric],
    fail_under: Mapping[str, float] | None,
    labels: Path | None,
    *,
    isotonic: bool,
) -> None:
    """Refuse thresholds on metrics that are not run, and an isotonic fit without labels."""
    unknown = set(fail_under or {}) - {m.name for m in metrics}
    if unknown:
        raise UsageError(
            f"--fail-under names metrics that are not run: {', '.join(sorted(unknown))}"
        )
    if isotonic and labels is None:
        raise UsageError("--isotonic needs --labels (the labelled items it is fitted on)")


@dataclass(frozen=True)
class _Run:
    """What the phases of one :func:`eval_file` run share, fixed before anything is judged."""

    data: Path
    data_sha256: str
    out_dir: Path
    judge: Judge
    metrics: Sequence[Metric]
    mapping: Mapping[str, str]
    #: the cut-offs every pass uses and the settings record (resolved once)
    cutoffs: Cutoffs
    labels: Path | None
    labels_sha256: str | None
    #: per metric, the settings its rows record
    settings_by_metric: Mapping[str, Mapping[str, Any]]
    #: the run's settings as ``summary.json`` records them
    settings: Mapping[str, Any]
    truncate: bool
    raw_output: bool
    chunk_size: int


def _prepare(
    data: Path,
    out_dir: Path,
    *,
    judge: Judge,
    metrics: Sequence[Metric],
    mapping: Mapping[str, str],
    cutoffs: Cutoffs | None,
    labels: Path | None,
    settings: Mapping[str, Any] | None,
    run_options: Mapping[str, Any],
    only: Mapping[str, Collection[int]] | None,
    isotonic: bool,
    truncate: bool,
    raw_output: bool,
    chunk_size: int,
    overwrite: bool,
) -> _Run:
    """The run's hashes, cut-offs and settings; refuses to replace a finished run in
    ``out_dir`` that is another run."""
    data_sha = file_sha256(data)
    used = resolve_cutoffs(judge, cutoffs)
    labels_sha = file_sha256(labels) if labels is not None else None
    settings_by_metric = {
        m.name: metric_settings(m, truncate=truncate, cutoffs=used) for m in metrics
    }
    run_settings = {
        **(settings or {}),
        "metrics": settings_by_metric,
        **run_options,
        **({"only_sha256": _selection_sha256(only)} if only is not None else {}),
        # a judge without fitted cut-offs or combinations: its verdicts are the neutral ones
        **({} if used else {"neutral_cutoffs": True}),
        **(
            {
                "labels": str(labels),
                "labels_sha256": labels_sha,
                "isotonic": isotonic,
            }
            if labels is not None
            else {}
        ),
    }
    previous = None if overwrite else finished_run(out_dir)
    if previous is not None:
        refuse_replacing(
            out_dir,
            run_differences(
                previous,
                data_sha256=data_sha,
                judge=judge.identity.as_dict(),
                settings=run_settings,
            ),
        )
    return _Run(
        data,
        data_sha,
        out_dir,
        judge,
        metrics,
        mapping,
        used,
        labels,
        labels_sha,
        settings_by_metric,
        run_settings,
        truncate,
        raw_output,
        chunk_size,
    )


def _labelled_pass(run: _Run) -> dict[str, LabelledScores]:
    """The labelled items scored like the data (``labelled.jsonl``), paired with the people's
    (none without labels)."""
    if run.labels is None:
        return {}
    return score_labelled(
        run.labels,
        run.out_dir,
        judge=run.judge,
        metrics=run.metrics,
        mapping=run.mapping,
        truncate=run.truncate,
        settings_by_metric=run.settings_by_metric,
        raw_output=run.raw_output,
        chunk_size=run.chunk_size,
        cutoffs=run.cutoffs,
    )


def _data_pass(
    run: _Run,
    records: Iterable[Record],
    calibrated: Mapping[str, Callable[[ResultRow], float | None]],
    *,
    only: Mapping[str, Collection[int]] | None,
    on_result: Callable[[ItemResult], None] | None,
    on_judging: OnJudging | None,
) -> ResultsWriter:
    """The data scored through the writer of ``results.jsonl`` (renamed from its partial file
    once every row is written); the closed writer, with its tallies."""
    with (
        InterruptLatch() as interrupted,
        ResultsWriter(
            run.out_dir / RESULTS.name,
            run.judge.identity,
            run.settings_by_metric,
            dict(calibrated),
            raw_output=run.raw_output,
        ) as writer,
    ):
        for res in evaluate(
            records,
            run.metrics,
            run.judge,
            mapping=run.mapping,
            truncate=run.truncate,
            on_result=on_result,
            on_judging=on_judging,
            chunk_size=run.chunk_size,
            keep=False,
            only=only,
            cutoffs=run.cutoffs,  # the cut-offs the settings record and the labelled pass used
        ):
            writer.write(res)
            interrupted.check()  # a Ctrl-C some library swallowed stops the run here
        interrupted.check()  # never a finished run after an interrupt
    return writer


def _summary(run: _Run, writer: ResultsWriter, labelled: Mapping[str, LabelledScores]) -> Summary:
    """The run's summary, with the prediction-powered means of the labelled metrics."""
    summary = build_summary(
        writer,
        data=run.data,
        data_sha256=run.data_sha256,
        judge=run.judge,
        settings=run.settings,
    )
    for name, pairs in labelled.items():
        tally = writer.tallies[name]
        summary["metrics"][name].update(corrected(pairs, tally.scores, tally.soft_scores))  # type: ignore[typeddict-item]
    return summary


def failed_thresholds(
    summary: Summary, fail_under: Mapping[str, float] | None, max_failure_rate: float | None
) -> list[str]:
    """The thresholds a run's summary misses, one line each: a mean under ``fail_under``'s
    (:func:`~localjudge.run.outcome.below_thresholds`), a metric with more failed items than
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


def _notes(run: _Run) -> list[str]:
    """What the user should know about the run's figures: labels the cut-offs were fitted on."""
    if not run.labels or not run.labels_sha256:
        return []
    return in_sample(run.labels, run.labels_sha256, run.cutoffs, [m.name for m in run.metrics])
