"""The phases of one eval run whose files are open (:class:`RunFiles`, from
:func:`~localjudge.run.evaluate.file_run.open_run`), in order: :func:`prepare` fixes the
cut-offs, the settings each metric's rows record and the run's manifest once (and refuses to
replace a finished run that is another run); :func:`labelled_pass` judges the labelled items
(``labelled.jsonl``); :func:`data_pass` judges the data through the writer of
``results.jsonl``; :func:`summary_of` is ``summary.json``; :func:`notes`, what the user should
know about the figures.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from localjudge.canonical import canonical_json, sha256_text
from localjudge.data.raw_records import Record
from localjudge.decisions import Cutoffs, kinds_of
from localjudge.judge.isolation import InterruptLatch
from localjudge.judge.protocol import Judge
from localjudge.metrics import Metric
from localjudge.run.evaluate.evaluation import judged, metric_settings
from localjudge.run.evaluate.labelled_pass import (
    LabelledScores,
    corrected,
    in_sample,
    score_labelled,
)
from localjudge.run.evaluate.plan import Plan, RunFiles
from localjudge.run.options import Hooks
from localjudge.run.results import RESULTS, ResultRow, ResultsWriter, Summary
from localjudge.run.rundir import finished_run, refuse_replacing, run_differences
from localjudge.run.settings import protocol_of
from localjudge.run.summary import build_summary

__all__ = [
    "Plan",
    "RunFiles",
    "data_pass",
    "labelled_pass",
    "notes",
    "prepare",
    "summary_of",
]


def exceptions_of(cutoffs: Cutoffs, metrics: Sequence[Metric]) -> dict[str, str]:
    """The kinds of ``metrics``' decisions whose shipped cut-offs are an exception to their
    rule (``fitting/exceptions.json``), each with its one line of why."""
    kinds = kinds_of([m.name for m in metrics])
    return {
        k: str(cutoffs.source(k).heldout.get("why", ""))
        for k in sorted(kinds & set(cutoffs.kinds))
        if cutoffs.source(k).heldout.get("status") == "exception"
    }


def _selection_sha256(only: Mapping[str, Collection[int]]) -> str:
    """What identifies a per-metric selection of items in a run's settings."""
    return sha256_text(canonical_json({m: sorted(set(ix)) for m, ix in only.items()}))


def prepare(files: RunFiles, *, judge: Judge, metrics: Sequence[Metric], cutoffs: Cutoffs) -> Plan:
    """The run's settings with ``cutoffs`` (resolved by the caller, once); refuses to replace a
    finished run in ``out_dir`` that is another run (the data's sha256 is read for that
    comparison only; otherwise the data pass hashes the file as it reads it)."""
    options = files.options
    labels = files.labels
    labelled = list(labels.records()) if labels is not None else []
    settings_by_metric = {
        m.name: metric_settings(m, truncate=options.truncate, cutoffs=cutoffs) for m in metrics
    }
    run_settings = {
        **options.settings,
        "metrics": settings_by_metric,
        "limit": options.limit,
        "map": options.mapping,
        "format": options.fmt,
        **({"only_sha256": _selection_sha256(options.only)} if options.only is not None else {}),
        # a judge without fitted cut-offs or combinations: its verdicts are the neutral ones
        **({} if cutoffs else {"neutral_cutoffs": True}),
        # the kinds that ship as an exception to their rule, each with its reason
        **({"exceptions": found} if (found := exceptions_of(cutoffs, metrics)) else {}),
        **(
            {
                "labels": str(labels.path),
                "labels_sha256": labels.sha256,
                "isotonic": options.isotonic,
            }
            if labels is not None
            else {}
        ),
    }
    previous = None if options.overwrite else finished_run(files.out_dir)
    if previous is not None:
        refuse_replacing(
            files.out_dir,
            run_differences(
                previous,
                data_sha256=files.source.sha256,
                judge=judge.identity.as_dict(),
                settings=run_settings,
            ),
        )
    return Plan(
        files=files,
        judge=judge,
        metrics=metrics,
        cutoffs=cutoffs,
        labelled=labelled,
        settings_by_metric=settings_by_metric,
        settings=run_settings,
    )


def labelled_pass(run: Plan) -> dict[str, LabelledScores]:
    """The labelled items scored like the data (``labelled.jsonl``), paired with the people's
    (none without labels)."""
    return score_labelled(run) if run.files.labels is not None else {}


def data_pass(
    run: Plan,
    records: Iterable[Record],
    calibrated: Mapping[str, Callable[[ResultRow], float | None]],
    hooks: Hooks,
) -> ResultsWriter:
    """The data scored through the writer of ``results.jsonl`` (renamed from its partial file
    once every row is written); the closed writer, with its tallies."""
    with (
        InterruptLatch() as interrupted,
        ResultsWriter(
            run.files.out_dir / RESULTS.name,
            run.judge.identity,
            run.settings_by_metric,
            dict(calibrated),
            raw_output=run.options.raw_output,
        ) as writer,
    ):
        # run.cutoffs: those the settings record and the labelled pass used
        for res in judged(
            records, run.metrics, run.judge, cutoffs=run.cutoffs, options=run.options, hooks=hooks
        ):
            writer.write(res)
            interrupted.check()  # a Ctrl-C some library swallowed stops the run here
        interrupted.check()  # never a finished run after an interrupt
    return writer


def summary_of(run: Plan, writer: ResultsWriter, labelled: Mapping[str, LabelledScores]) -> Summary:
    """The run's summary, with the prediction-powered means of the labelled metrics."""
    summary = build_summary(
        writer,
        data=run.files.source.path,
        data_sha256=run.files.source.sha256,  # hashed by the data pass as it read the file
        judge=run.judge,
        settings=run.settings,
        protocol=protocol_of(run.metrics),
    )
    for name, pairs in labelled.items():
        tally = writer.tallies[name]
        summary["metrics"][name].update(corrected(pairs, tally.scores, tally.soft_scores))  # type: ignore[typeddict-item]
    return summary


def notes(run: Plan) -> list[str]:
    """What the user should know about the run's figures: labels the cut-offs were fitted on."""
    labels = run.files.labels
    if labels is None:
        return []
    return in_sample(labels.path, labels.sha256, run.cutoffs, [m.name for m in run.metrics])
