"""Running an eval file to file: ``results.jsonl`` and ``summary.json`` from a data file, with
the survey of the data before it and the labelled items of PPI.

:func:`open_run` opens a run's files once: it takes the output directory's lock and opens the
data file (and the labels file) as :class:`~localjudge.data.open_once.DataFile` s, so the
survey, the judged records and the manifest's sha256 all read one handle, and the lock is
taken once; the run's :class:`~localjudge.run.options.EvalOptions` are given there, built once.
:meth:`EvalRun.score` then runs it: it fixes the cut-offs, the settings each
metric's rows record and the run's manifest once, judges the labelled items
(``labelled.jsonl``), then the data, streaming rows to ``results.jsonl.partial`` as chunks
finish and renaming it to ``results.jsonl`` when the run completes. Every judge call is in the
cache the moment it returns, so an interrupted run, started again with the same command,
re-judges nothing it had finished. :func:`eval_file` is the two in one call. The loop itself is
:func:`localjudge.run.evaluate.evaluation.judged`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from localjudge.data.item import ALIASES, FIELDS
from localjudge.data.open_once import DataFile
from localjudge.data.raw_records import Record
from localjudge.data.readers import list_fields
from localjudge.decisions import Cutoffs
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, Metric
from localjudge.run.evaluate.evaluation import resolve_cutoffs
from localjudge.run.evaluate.labelled_pass import LabelledScores, calibrations, in_sample
from localjudge.run.evaluate.phases import (
    RunFiles,
    data_pass,
    labelled_pass,
    notes,
    prepare,
    summary_of,
)
from localjudge.run.options import EvalOptions, Hooks
from localjudge.run.outcome import RunOutcome, failed_thresholds
from localjudge.run.rundir import output_lock
from localjudge.run.settings import protocol_of
from localjudge.run.summary import write_summary

__all__ = [
    "DataSurvey",
    "EvalRun",
    "LabelledScores",
    "eval_file",
    "in_sample",
    "open_run",
    "survey",
]


@dataclass(frozen=True)
class DataSurvey:
    """One pass over a data file before scoring: how many records, which metrics apply."""

    n_records: int
    metrics: list[str]


def survey(records: Iterable[Record], mapping: Mapping[str, str]) -> DataSurvey:
    """Count ``records`` and find every metric whose required fields some record has."""
    present: set[str] = set()
    n = 0
    for rec in records:
        n += 1
        if rec.data is None:
            continue
        for ours in FIELDS:
            names = [mapping.get(ours, ours), *(a for a, t in ALIASES.items() if t == ours)]
            if any(rec.data.get(name) not in (None, "", []) for name in names):
                present.add(ours)
    metrics = [name for name, cls in METRICS.items() if set(cls.required) <= present]
    return DataSurvey(n_records=n, metrics=metrics)


@contextmanager
def open_run(data: Path, out_dir: Path, options: EvalOptions | None = None) -> Iterator[EvalRun]:
    """The eval run of ``data`` into ``out_dir`` with ``options`` (its first ``limit`` records,
    read with ``fmt`` and ``mapping``), its files open: the data and ``labels`` files opened
    once (a file that cannot be read raises :class:`~localjudge.errors.DataError` now), then
    the output directory's lock taken (another run that writes there is refused at once). Open
    it before the judge loads; both are released when the block ends."""
    options = options if options is not None else EvalOptions()
    columns = list_fields(options.mapping)
    with ExitStack() as stack:
        source = stack.enter_context(DataFile(data, fmt=options.fmt, list_fields=columns))
        labelled = None
        if options.labels is not None:
            labelled = stack.enter_context(DataFile(options.labels, list_fields=columns))
        stack.enter_context(output_lock(out_dir))
        yield EvalRun(RunFiles(source, out_dir, labelled, options))


class EvalRun:
    """An eval run whose files are open (:func:`open_run`): :meth:`survey` looks at its data,
    :meth:`score` judges it and writes its files."""

    def __init__(self, files: RunFiles) -> None:
        self.files = files

    @property
    def options(self) -> EvalOptions:
        """The options the run was opened with."""
        return self.files.options

    def records(self) -> Iterator[Record]:
        """A pass over the run's records (the first ``limit``)."""
        return islice(self.files.source.records(), self.files.limit)

    def survey(self) -> DataSurvey:
        """How many records the run has, and which metrics apply to them."""
        return survey(self.records(), self.files.mapping)

    def score(
        self,
        *,
        judge: Judge,
        metrics: Sequence[Metric],
        cutoffs: Cutoffs | None = None,
        hooks: Hooks | None = None,
    ) -> RunOutcome:
        """Judge the run and write its files (see :func:`eval_file`). ``cutoffs``: those the
        caller has resolved already (the CLI, to say whether they are neutral before the run);
        by default the run's ``options.cutoffs``, else the judge's own, resolved here once."""
        options = self.options
        options.check([m.name for m in metrics])
        used = resolve_cutoffs(
            judge,
            cutoffs if cutoffs is not None else options.cutoffs,
            protocol=protocol_of(metrics),
        )
        run = prepare(self.files, judge=judge, metrics=metrics, cutoffs=used)
        labelled = labelled_pass(run)
        calibrated = calibrations(labelled) if options.isotonic else {}
        writer = data_pass(run, self.records(), calibrated, hooks or Hooks())
        summary = summary_of(run, writer, labelled)
        summary_path = write_summary(self.files.out_dir, summary)
        failed = failed_thresholds(summary, options.fail_under, options.max_failure_rate)
        return RunOutcome(writer.path, summary_path, summary, failed, notes(run))


def eval_file(
    data: Path,
    out_dir: Path,
    *,
    judge: Judge,
    metrics: Sequence[Metric],
    options: EvalOptions | None = None,
    **keywords: Any,
) -> RunOutcome:
    """Score ``data`` with ``metrics`` and write ``results.jsonl`` and ``summary.json`` to
    ``out_dir``, with ``options`` (:class:`~localjudge.run.options.EvalOptions`), or the same
    names as keyword arguments (they replace the fields of ``options``), and the hooks
    ``on_result`` and ``on_judging`` (:class:`~localjudge.run.options.Hooks`).

    ``fail_under`` maps metric names to thresholds for their mean; ``max_failure_rate`` (0 to
    1) is the largest share of failed items any metric may have. Both only fill
    :attr:`RunOutcome.failed_thresholds` (the CLI exits 1 on them).

    With ``labels`` (a small labelled file in bench's format) those items are scored first
    (``labelled.jsonl``) and the summary gains, per metric, the prediction-powered estimate of
    the human-scale mean over ``data`` with its interval (``ppi``, ``ppi_soft``; see
    :mod:`localjudge.stats.ppi`); ``isotonic`` also adds each row's ``calibrated_score``, the
    judge score mapped to the human scale by an isotonic fit on the labelled items (recorded in
    the run's settings as ``isotonic``).
    ``raw_output`` adds each row's raw judge output text (``raw_output``). ``chunk_size``:
    items handed to the judge together per metric (rows do not depend on it; a Ray judge wants
    large chunks, :data:`localjudge.cluster.RAY_CHUNK_SIZE`). ``only``: per metric, the input
    indices it scores (see :func:`localjudge.evaluate`); recorded in the run's settings by its
    sha256. ``settings``: the judge's settings as ``summary.json`` records them.

    A finished run already in ``out_dir`` is replaced only when this run is the same run again
    (same data sha256, judge identity and settings: a rerun writes the same rows), or with
    ``overwrite``; otherwise :class:`~localjudge.errors.UsageError` is raised before anything
    is judged. An unfinished run there (``results.jsonl.partial``) is always taken over: that is
    how a rerun resumes.

    ``cutoffs``: as :func:`~localjudge.run.evaluate.evaluation.evaluate` takes them (by default
    the judge's own), resolved once: the data, the labelled items and each metric's recorded
    settings all use the same ones.

    Pass a :class:`~localjudge.judge.cache.caching.CachingJudge` to cache and resume.

    The data file is opened once and the output directory locked once (:func:`open_run`;
    :meth:`EvalRun.score` is the rest)."""
    options, hooks = EvalOptions.given(options, keywords)
    options.check([m.name for m in metrics])  # before a folder is made
    with open_run(data, out_dir, options) as run:
        return run.score(judge=judge, metrics=metrics, hooks=hooks)
