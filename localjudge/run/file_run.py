"""Running an eval file to file (:func:`eval_file`): ``results.jsonl`` and ``summary.json``
from a data file, with the survey of the data before it and the labelled items of PPI.

:func:`eval_file` streams rows to ``results.jsonl.partial`` as chunks finish and renames it to
``results.jsonl`` when the run completes; every judge call is in the cache the moment it returns,
so an interrupted run, started again with the same command, re-judges nothing it had finished.
With ``labels``, the labelled items are scored first (``labelled.jsonl``) and the summary gains
the prediction-powered means (:mod:`localjudge.stats.ppi`). The loop itself is
:func:`localjudge.run.evaluation.evaluate`'s.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from localjudge.canonical import canonical_json, file_sha256, sha256_text
from localjudge.data.items import ALIASES, FIELDS
from localjudge.errors import UsageError
from localjudge.judge.cutoffs import Cutoffs, kinds_of
from localjudge.judge.isolation import InterruptLatch
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, Metric
from localjudge.run.compare import label_problem
from localjudge.run.evaluation import (
    CHUNK_SIZE,
    OnJudging,
    evaluate,
    metric_settings,
    read,
    resolve_cutoffs,
)
from localjudge.run.results import LABELLED, RESULTS, ItemResult, ResultRow, ResultsWriter, Summary
from localjudge.run.rundir import finished_run, output_lock, refuse_replacing, run_differences
from localjudge.run.summary import build_summary, write_summary
from localjudge.stats.ppi import fit_calibration, ppi_mean

__all__ = [
    "DataSurvey",
    "LabelledScores",
    "RunOutcome",
    "detect_metrics",
    "eval_file",
    "in_sample",
    "judge_labelled",
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


def detect_metrics(
    data: Path, *, fmt: str | None = None, mapping: Mapping[str, str], limit: int | None
) -> list[str]:
    """Every metric whose required fields some record of the data has."""
    return survey(data, fmt=fmt, mapping=mapping, limit=limit).metrics


@dataclass
class LabelledScores:
    """One metric on the labelled items: the human-derived score and the judge's, item by item
    (only items that have both; ``soft`` None where a judge gave no soft score)."""

    human: list[float] = field(default_factory=list)
    hard: list[float] = field(default_factory=list)
    soft: list[float | None] = field(default_factory=list)

    def soft_scores(self) -> list[float] | None:
        """The soft scores, when every labelled item has one (else None)."""
        if not self.soft or any(v is None for v in self.soft):
            return None
        return [float(v) for v in self.soft if v is not None]

    def calibration(self) -> Callable[[ResultRow], float | None] | None:
        """A row's score mapped to the human scale by an isotonic fit on these items: from the
        soft scores when every labelled item has one, else from the hard ones (a row is mapped
        from the same kind of score; None when it has none). None when nothing can be fitted."""
        soft = self.soft_scores()
        key = "soft_score" if soft is not None else "score"
        fitted = fit_calibration(soft if soft is not None else self.hard, self.human)
        if fitted is None:
            return None

        def calibrated(row: ResultRow) -> float | None:
            value = row[key]  # type: ignore[literal-required]
            return None if value is None else fitted(float(value))

        return calibrated


def judge_labelled(
    labels: Path,
    out_dir: Path,
    *,
    judge: Judge,
    metrics: Sequence[Metric],
    mapping: Mapping[str, str],
    truncate: bool,
    settings_by_metric: Mapping[str, Mapping[str, Any]],
    raw_output: bool = False,
    chunk_size: int = CHUNK_SIZE,
    cutoffs: Cutoffs | None = None,
) -> dict[str, LabelledScores]:
    """Score the labelled file (bench's format: records with ``labels``) like the data, write
    its rows to ``out_dir/labelled.jsonl``, and pair each judge score with the metric's formula
    applied to the human labels. Items without usable labels for a metric are left out of it."""
    records = list(read(labels, fmt=None, mapping=mapping))
    human: dict[tuple[int, str], float] = {}
    for rec in records:
        data = rec.data or {}
        contexts = data.get(mapping.get("retrieved_contexts", "retrieved_contexts"))
        n_pieces = len(contexts) if isinstance(contexts, list) else None
        if label_problem(data.get("labels"), n_pieces) is not None:
            continue
        for m in metrics:
            value = METRICS[m.name].human_score(data["labels"])
            if value is not None:
                human[(rec.index, m.name)] = float(value)
    scores = {m.name: LabelledScores() for m in metrics}
    with ResultsWriter(
        out_dir / LABELLED.name, judge.identity, settings_by_metric, raw_output=raw_output
    ) as writer:
        for res in evaluate(
            records,
            metrics,
            judge,
            mapping=mapping,
            truncate=truncate,
            chunk_size=chunk_size,
            keep=False,
            cutoffs=cutoffs,
        ):
            row = writer.write(res)
            h = human.get((res.index, res.metric))
            if h is not None and row["score"] is not None:
                scores[res.metric].human.append(h)
                scores[res.metric].hard.append(float(row["score"]))
                scores[res.metric].soft.append(row["soft_score"])
    return scores


def _corrected(labelled: LabelledScores, hard: list[float], soft: list[float]) -> dict[str, Any]:
    """The prediction-powered estimates of one metric's human-scale mean (hard, soft); the soft
    one only when every labelled and every scored item has a soft score."""
    out: dict[str, Any] = {}
    est = ppi_mean(labelled.human, labelled.hard, hard)
    out["ppi"] = est.as_dict() if est is not None else None
    soft_l = labelled.soft_scores()
    est = ppi_mean(labelled.human, soft_l, soft) if soft_l and len(soft) == len(hard) else None
    out["ppi_soft"] = est.as_dict() if est is not None else None
    return out


def in_sample(
    labels: Path, labels_sha256: str, cutoffs: Cutoffs, metrics: Sequence[str]
) -> list[str]:
    """A warning when ``labels`` (whose sha256 is ``labels_sha256``) is the file the metrics'
    cut-offs were fitted on (it is in their provenance): agreement and corrections measured on
    it are in-sample."""
    mine = cutoffs.only(kinds_of(metrics))
    kinds = [k for k in sorted(mine.values) if mine.source(k).sha256 == labels_sha256]
    if not kinds:
        return []
    return [
        f"{labels.name} is the file the judge's cut-offs of {', '.join(kinds)} were fitted on: "
        "agreement and corrections measured on it are in-sample (optimistic); use labels no "
        "fit saw"
    ]


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
    calibrate: bool | None = None,
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
    the run's settings as ``calibrate``, its key before the rename). ``calibrate`` is the
    deprecated name of ``isotonic`` (a :class:`DeprecationWarning`; ``localjudge calibrate``
    fits decision cut-offs, another thing).
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
    unknown = set(fail_under or {}) - {m.name for m in metrics}
    if unknown:
        raise UsageError(
            f"--fail-under names metrics that are not run: {', '.join(sorted(unknown))}"
        )
    if calibrate is not None:
        warnings.warn(
            "eval_file(calibrate=...) is deprecated, use isotonic=... (the same isotonic fit)",
            DeprecationWarning,
            stacklevel=2,
        )
        isotonic = isotonic or calibrate
    if isotonic and labels is None:
        raise UsageError("--isotonic needs --labels (the labelled items it is fitted on)")
    records = read(data, fmt=fmt, mapping=mapping)  # fails now on an unreadable file
    with output_lock(out_dir):
        data_sha = file_sha256(data)
        used = resolve_cutoffs(judge, cutoffs)
        labels_sha = file_sha256(labels) if labels is not None else None
        settings_by_metric = {
            m.name: metric_settings(m, truncate=truncate, cutoffs=used) for m in metrics
        }
        run_settings = {
            **(settings or {}),
            "metrics": settings_by_metric,
            "limit": limit,
            "map": mapping,
            "format": fmt,
            **({"only_sha256": _selection_sha256(only)} if only is not None else {}),
            **(
                {
                    "labels": str(labels),
                    "labels_sha256": labels_sha,
                    "calibrate": isotonic,  # the key before --isotonic: old runs still match
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
        labelled: dict[str, LabelledScores] = {}
        if labels is not None:
            labelled = judge_labelled(
                labels,
                out_dir,
                judge=judge,
                metrics=metrics,
                mapping=mapping,
                truncate=truncate,
                settings_by_metric=settings_by_metric,
                raw_output=raw_output,
                chunk_size=chunk_size,
                cutoffs=used,
            )
        calibrations = {}
        for name, pairs in labelled.items() if isotonic else ():
            if (calibrated := pairs.calibration()) is not None:
                calibrations[name] = calibrated
        with (
            InterruptLatch() as interrupted,
            ResultsWriter(
                out_dir / RESULTS.name,
                judge.identity,
                settings_by_metric,
                calibrations,
                raw_output=raw_output,
            ) as writer,
        ):
            for res in evaluate(
                islice(records, limit),
                metrics,
                judge,
                mapping=mapping,
                truncate=truncate,
                on_result=on_result,
                on_judging=on_judging,
                chunk_size=chunk_size,
                keep=False,
                only=only,
                cutoffs=used,  # the cut-offs the settings record and the labelled pass used
            ):
                writer.write(res)
                interrupted.check()  # a Ctrl-C some library swallowed stops the run here
            interrupted.check()  # never a finished run after an interrupt
        summary = build_summary(
            writer,
            data=data,
            data_sha256=data_sha,
            judge=judge,
            settings=run_settings,
        )
        for name, pairs in labelled.items():
            tally = writer.tallies[name]
            summary["metrics"][name].update(_corrected(pairs, tally.scores, tally.soft_scores))  # type: ignore[typeddict-item]
        summary_path = write_summary(out_dir, summary)
        means = {name: stats["mean"] for name, stats in summary["metrics"].items()}
        failed = [
            f"{name} mean {means[name]} < {threshold}"
            for name, threshold in (fail_under or {}).items()
            if (mean := means[name]) is None or mean < threshold
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
        names = [m.name for m in metrics]
        notes = in_sample(labels, labels_sha, used, names) if labels and labels_sha else []
        return RunOutcome(writer.path, summary_path, summary, failed, notes)
