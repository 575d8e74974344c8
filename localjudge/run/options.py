"""The options of a run: one typed, frozen object per kind of run, built once and passed whole.

The CLI builds them from its command line and ``localjudge.toml``
(:mod:`localjudge.cli.options`); a library caller builds them, or passes the same names as
keyword arguments (:meth:`ScoringOptions.given`). Each is checked when it is built: a bad value
raises :class:`~localjudge.errors.UsageError` naming the field, before any file is opened or
any judge is loaded.

- :class:`ScoringOptions`: how each item is scored, what
  :func:`~localjudge.run.evaluate.evaluation.evaluate` takes;
- :class:`EvalOptions`: those and the run's files, what
  :func:`~localjudge.run.evaluate.file_run.eval_file` takes (``eval``);
- :class:`BenchOptions`: what :func:`~localjudge.run.bench.runner.bench_file` takes (``bench``):
  ``limit``, ``truncate`` and ``overwrite`` mean there what they mean for ``eval``, and each
  judge's run is an eval run with them (:meth:`BenchOptions.eval_options`);
- :class:`Hooks`: the callbacks a caller follows a run with (not options: never recorded).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from localjudge.decisions import Cutoffs
from localjudge.errors import UsageError
from localjudge.metrics import MetricSettings
from localjudge.run.results import ItemResult

__all__ = [
    "CHUNK_SIZE",
    "FORMATS",
    "BenchOptions",
    "EvalOptions",
    "Hooks",
    "OnJudging",
    "ScoringOptions",
]

#: items per chunk: large enough to amortise the prefix switch between metrics (and to fill a
#: batched engine), small enough that results stream out steadily
CHUNK_SIZE = 16

#: the data formats a data file may be read as (None: from its extension)
FORMATS = ("jsonl", "json", "csv", "parquet", "hf")

#: called with the (index, id, metric) of the items handed to the judge, before it starts on them
OnJudging = Callable[[Sequence[tuple[int, str, str]]], None]

S = TypeVar("S", bound="ScoringOptions")
B = TypeVar("B", bound="BenchOptions")


def _refuse(owner: object, name: str, value: object, expected: str) -> UsageError:
    return UsageError(f"{type(owner).__name__}.{name}: expected {expected}, got {value!r}")


def _at_least_one(owner: object, name: str, value: object, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _refuse(owner, name, value, "a whole number of at least 1")


@dataclass(frozen=True)
class Hooks:
    """The callbacks a caller follows a run with."""

    #: called as each item x metric finishes (progress), before its chunk is yielded
    on_result: Callable[[ItemResult], None] | None = None
    #: called with the (index, id, metric) of the items handed to the judge (a crash report)
    on_judging: OnJudging | None = None


@dataclass(frozen=True, kw_only=True)
class ScoringOptions:
    """How each item is scored: what :func:`~localjudge.run.evaluate.evaluation.evaluate`
    takes (and, with the run's files, :class:`EvalOptions`)."""

    #: our field names to the data's, e.g. ``{"user_input": "question"}``
    mapping: Mapping[str, str] = field(default_factory=dict)
    #: trim the longest contexts of an item too long for the window instead of failing it
    truncate: bool = False
    #: items handed to the judge together per metric (rows do not depend on it; a Ray judge
    #: wants large chunks, :data:`localjudge.cluster.RAY_CHUNK_SIZE`)
    chunk_size: int = CHUNK_SIZE
    #: per metric, the input indices it scores (a metric not named scores none); None: all
    only: Mapping[str, Collection[int]] | None = None
    #: the cut-offs decisions are made with (None: the judge's own, resolved once per run)
    cutoffs: Cutoffs | None = None

    def __post_init__(self) -> None:
        if self.mapping is None:  # the old keyword calls' spelling of none
            object.__setattr__(self, "mapping", {})
        if not isinstance(self.mapping, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.mapping.items()
        ):
            raise _refuse(self, "mapping", self.mapping, "a mapping of field names to columns")
        object.__setattr__(self, "mapping", dict(self.mapping))
        _at_least_one(self, "chunk_size", self.chunk_size)
        if self.cutoffs is not None and not isinstance(self.cutoffs, Cutoffs):
            raise _refuse(self, "cutoffs", self.cutoffs, "a localjudge.Cutoffs or None")

    @classmethod
    def given(cls: type[S], options: S | None, keywords: Mapping[str, Any]) -> tuple[S, Hooks]:
        """``options`` (the defaults when None) with ``keywords`` in place of its fields, and
        the hooks among ``keywords``: what a function that takes ``options=`` or the same
        names as keyword arguments runs with. An unknown name raises :class:`TypeError`."""
        hook_names = {f.name for f in dataclasses.fields(Hooks)}
        hooks = Hooks(**{k: v for k, v in keywords.items() if k in hook_names})
        rest = {k: v for k, v in keywords.items() if k not in hook_names}
        names = {f.name for f in dataclasses.fields(cls)}
        if unknown := sorted(set(rest) - names):
            raise TypeError(f"unexpected option(s) {', '.join(unknown)} for {cls.__name__}")
        base = options if options is not None else cls()
        return (dataclasses.replace(base, **rest) if rest else base), hooks


@dataclass(frozen=True, kw_only=True)
class EvalOptions(ScoringOptions):
    """An eval run's options: how items are scored (:class:`ScoringOptions`) and the run's files.

    ``fail_under`` and ``max_failure_rate`` only fill the outcome's ``failed_thresholds`` (the
    CLI exits 1 on them)."""

    #: the data file's format (None: from its extension; a folder is a save_to_disk folder)
    fmt: str | None = None
    #: only the first ``limit`` records
    limit: int | None = None
    #: a small labelled file (bench's format), judged too: PPI means in the summary
    labels: Path | None = None
    #: with ``labels``: each row's ``calibrated_score`` from an isotonic fit on them
    isotonic: bool = False
    #: add each row's raw judge output text
    raw_output: bool = False
    #: replace a finished run of other data or settings in the output directory
    overwrite: bool = False
    #: per metric, the mean below which the run misses its threshold
    fail_under: Mapping[str, float] = field(default_factory=dict)
    #: the largest share (0 to 1) of failed items any metric may have
    max_failure_rate: float | None = None
    #: the judge's settings as ``summary.json`` records them (``run.settings``)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fmt is not None and self.fmt not in FORMATS:
            raise _refuse(self, "fmt", self.fmt, f"None or one of {', '.join(FORMATS)}")
        _at_least_one(self, "limit", self.limit, optional=True)
        for name in ("fail_under", "settings"):  # the old keyword calls' spelling of none
            if getattr(self, name) is None:
                object.__setattr__(self, name, {})
        if self.labels is not None:
            object.__setattr__(self, "labels", Path(self.labels))
        if not isinstance(self.fail_under, Mapping) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool)
            for v in self.fail_under.values()
        ):
            raise _refuse(self, "fail_under", self.fail_under, "a mapping of metrics to numbers")
        object.__setattr__(self, "fail_under", dict(self.fail_under))
        rate = self.max_failure_rate
        if rate is not None and (isinstance(rate, bool) or not 0 <= rate <= 1):
            raise _refuse(self, "max_failure_rate", rate, "None or a share from 0 to 1")
        object.__setattr__(self, "settings", dict(self.settings))

    def check(self, metrics: Collection[str]) -> None:
        """Refuse thresholds on metrics that are not run, and an isotonic fit without labels."""
        unknown = set(self.fail_under) - set(metrics)
        if unknown:
            raise UsageError(
                f"--fail-under names metrics that are not run: {', '.join(sorted(unknown))}"
            )
        if self.isotonic and self.labels is None:
            raise UsageError("--isotonic needs --labels (the labelled items it is fitted on)")


@dataclass(frozen=True, kw_only=True)
class BenchOptions:
    """A bench's options: ``limit``, ``truncate`` and ``overwrite`` are :class:`EvalOptions`'
    (each judge's run is an eval run with them); the rest choose what is compared."""

    #: the metrics compared (None: every metric some item's labels cover)
    metrics: Sequence[str] | None = None
    #: the settings every metric is built with (scale, reasons)
    metric_settings: MetricSettings = field(default_factory=MetricSettings)
    limit: int | None = None
    truncate: bool = False
    overwrite: bool = False
    #: judge on this Ray cluster (a :class:`localjudge.cluster.RayConfig`; None: here)
    ray: Any = None
    #: draw a bar per judge on stderr (items judged, items/s, ETA)
    progress: bool = False

    def __post_init__(self) -> None:
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.metric_settings is None:  # the old keyword calls' spelling of the defaults
            object.__setattr__(self, "metric_settings", MetricSettings())
        _at_least_one(self, "limit", self.limit, optional=True)

    @classmethod
    def given(cls: type[B], options: B | None, keywords: Mapping[str, Any]) -> B:
        """``options`` (the defaults when None) with ``keywords`` in place of its fields."""
        base = options if options is not None else cls()
        return dataclasses.replace(base, **keywords) if keywords else base

    def eval_options(
        self, *, only: Mapping[str, Collection[int]], settings: Mapping[str, Any]
    ) -> EvalOptions:
        """The options of one judge's eval run in the bench: its items (``only``) and the
        judge's recorded ``settings``."""
        return EvalOptions(
            limit=self.limit,
            truncate=self.truncate,
            overwrite=self.overwrite,
            only=only,
            settings=settings,
            chunk_size=self.ray.chunk_size if self.ray is not None else CHUNK_SIZE,
        )
