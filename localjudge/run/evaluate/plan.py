"""What the phases of one eval run share: :class:`RunFiles` (its open files, from
:func:`~localjudge.run.evaluate.file_run.open_run`) and :class:`Plan` (those, the judge, the
metrics and the cut-offs, fixed once by
:func:`~localjudge.run.evaluate.phases.prepare` before anything is judged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localjudge.data.open_once import DataFile
from localjudge.data.raw_records import Record
from localjudge.decisions import Cutoffs
from localjudge.judge.protocol import Judge
from localjudge.metrics import Metric
from localjudge.run.options import EvalOptions

__all__ = ["Plan", "RunFiles"]


@dataclass(frozen=True)
class RunFiles:
    """A run's open files and its options (what picks its records among them)."""

    #: the data file, opened once
    source: DataFile
    out_dir: Path
    #: the labelled file of ``--labels``, opened once
    labels: DataFile | None
    #: the options the run was opened with, built once
    options: EvalOptions

    @property
    def mapping(self) -> Mapping[str, str]:
        """Our field names to the data's."""
        return self.options.mapping

    @property
    def limit(self) -> int | None:
        """Only the first ``limit`` records."""
        return self.options.limit


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What the phases of one run share, fixed before anything is judged."""

    files: RunFiles
    judge: Judge
    metrics: Sequence[Metric]
    #: the cut-offs every pass uses and the settings record (resolved once)
    cutoffs: Cutoffs
    #: the labelled file's records (read once, before anything is judged)
    labelled: Sequence[Record]
    #: per metric, the settings its rows record (built once)
    settings_by_metric: Mapping[str, Mapping[str, Any]]
    #: the run's settings as ``summary.json`` records them
    settings: Mapping[str, Any]

    @property
    def options(self) -> EvalOptions:
        """The run's options."""
        return self.files.options
