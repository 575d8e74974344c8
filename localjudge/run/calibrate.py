"""``localjudge calibrate``: fit a judge's cut-offs on a labelled file and show what they change.

:func:`calibrate` judges the file's items with the metrics its labels cover (reasons off: they
never move a decision), once, with the judge's argmax (the soft values are what the fit needs;
with a cache, a later run re-judges nothing). Each kind of decision is then paired with the
human labels (:func:`observations`), checked two ways round on held-out halves
(:func:`~localjudge.stats.cutoffs_fit.two_fold`: fit on half of the groups, measure on the
other) and finally fitted on the whole file: those are the cut-offs stored.

Labels (bench's labelled format) and the decisions they check: ``recall`` (0 or 1; every
statement of the item takes it; a share between is left out) against ``recall.supported``;
``relevant`` against ``position.relevant``; ``levels`` against ``relevance.grade``; ``used``
against ``relevance.used``. The groups an item belongs to: its ``source.qid`` when it has one
(a query's passages stay on one side), else its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from localjudge.judge.cutoffs import NO_CUTOFFS, Cutoffs
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, MetricSettings
from localjudge.run.compare import applicable
from localjudge.run.evaluation import evaluate
from localjudge.run.results import ItemResult
from localjudge.scoring import RELEVANCE_LEVELS
from localjudge.stats.cutoffs_fit import Observation, fit, two_fold

__all__ = [
    "KINDS",
    "Calibration",
    "Kind",
    "calibrate",
    "calibration_table",
    "fit_cutoffs",
    "judge_labelled",
    "observations",
]

#: grade of each relevance level
GRADES = {level: 3 - i for i, level in enumerate(RELEVANCE_LEVELS)}
#: fewer labelled decisions than this (or one class only) are not fitted
MIN_DECISIONS = 20


@dataclass(frozen=True)
class Kind:
    """A kind of decision, the metric that makes it, the label that checks it, and what its
    cut-offs maximise."""

    name: str
    metric: str
    label: str
    graded: bool = False
    objective: str = "kappa"


KINDS = (
    Kind("recall.supported", "recall", "recall", objective="balanced_accuracy"),
    Kind("position.relevant", "position", "relevant"),
    Kind("relevance.grade", "relevance", "levels", graded=True, objective="qwk"),
    Kind("relevance.used", "relevance", "used"),
)


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found: the cut-offs fitted on the whole file, each kind's held-out
    check, and the kinds left out (with why)."""

    cutoffs: Cutoffs
    checks: Mapping[str, Mapping[str, Any]]
    skipped: Mapping[str, str]


def observations(
    records: Sequence[Mapping[str, Any]], results: Iterable[ItemResult]
) -> dict[str, list[Observation]]:
    """Each kind's judge decisions beside the human labels of ``records`` (by input index)."""
    found: dict[str, list[Observation]] = {k.name: [] for k in KINDS}
    for res in results:
        if res.result is None:
            continue
        record = records[res.index]
        labels = record.get("labels") or {}
        source = record.get("source") or {}
        group = str(source.get("qid", record.get("id", res.index)))
        verdicts = res.result.verdicts
        for kind in KINDS:
            if kind.metric == res.metric and kind.label in labels:
                found[kind.name] += _pairs(kind, labels[kind.label], verdicts, group)
    return found


def _pairs(
    kind: Kind, label: Any, verdicts: Sequence[Mapping[str, Any]], group: str
) -> list[Observation]:
    out = []
    if kind.label == "recall":
        if label not in (0, 1):
            return []
        labels = [int(label)] * len(verdicts)
    else:
        labels = [GRADES[v] if kind.graded else int(bool(v)) for v in label]
        if len(labels) != len(verdicts):
            return []
    for verdict, human in zip(verdicts, labels, strict=True):
        probs = verdict.get("probs")
        if probs is None:
            continue
        if kind.name == "recall.supported":
            soft, chosen = probs["attributed"]["1"], int(verdict["attributed"])
        elif kind.name == "position.relevant":
            soft, chosen = probs["relevant"]["true"], int(verdict["relevant"])
        elif kind.name == "relevance.used":
            soft, chosen = probs["used"]["true"], int(verdict["used"])
        else:
            soft = sum(GRADES[lv] * p for lv, p in probs["relevance"].items())
            chosen = GRADES[verdict["relevance"]]
        out.append(Observation(group, float(soft), chosen, human))
    return out


def judge_labelled(
    records: Sequence[Mapping[str, Any]],
    judge: Judge,
    *,
    metrics: Sequence[str] | None = None,
    settings: MetricSettings | None = None,
) -> list[ItemResult]:
    """Judge each labelled record with the metrics its labels cover, with the judge's argmax
    (no cut-offs) and, by default, reasons off."""
    names = list(metrics or METRICS)
    only = {
        name: [i for i, r in enumerate(records) if applicable(name, r.get("labels") or {})]
        for name in names
    }
    settings = settings or MetricSettings(reasons=False)
    chosen = [METRICS[n].from_settings(settings) for n in names if only[n]]
    return list(evaluate(records, chosen, judge, only=only, cutoffs=NO_CUTOFFS, keep=False))


def calibrate(
    records: Sequence[Mapping[str, Any]],
    judge: Judge,
    *,
    metrics: Sequence[str] | None = None,
    source: str = "localjudge calibrate",
) -> Calibration:
    """Fit ``judge``'s cut-offs on the labelled ``records`` (see the module's docstring)."""
    return fit_cutoffs(records, judge_labelled(records, judge, metrics=metrics), source=source)


def fit_cutoffs(
    records: Sequence[Mapping[str, Any]], results: Sequence[ItemResult], *, source: str
) -> Calibration:
    """The held-out check and the cut-offs of every kind of decision ``results`` hold."""
    found = observations(records, results)
    judged = {r.metric for r in results}
    fitted: dict[str, tuple[float, ...]] = {}
    checks: dict[str, Mapping[str, Any]] = {}
    skipped: dict[str, str] = {}
    for kind in KINDS:
        obs = found[kind.name]
        if kind.metric not in judged:
            continue
        if len(obs) < MIN_DECISIONS or len({o.human for o in obs}) < 2:
            skipped[kind.name] = (
                f"{len(obs)} labelled decisions (at least {MIN_DECISIONS}, both classes)"
            )
            continue
        checks[kind.name] = two_fold(obs, graded=kind.graded, objective=kind.objective)
        fitted[kind.name] = fit(obs, graded=kind.graded, objective=kind.objective)
    return Calibration(Cutoffs(fitted, source), checks, skipped)


def calibration_table(calibration: Calibration) -> str:
    """The held-out check as a Markdown table: per kind and fold, the judge's argmax and the
    cut-offs fitted on the other half, with 95% bootstrap intervals; then the stored cut-offs."""
    lines = [
        "| decision | fold | cut-offs (fitted on the other half) | figure | argmax | fitted |",
        "|---|---|---|---|---|---|",
    ]
    for name, check in calibration.checks.items():
        for n, fold in enumerate(check["folds"], 1):
            cuts = ", ".join(f"{c:.3f}" for c in fold["cutoffs"])
            for figure, value in fold["fitted"].items():
                if not isinstance(value, dict):
                    continue
                before = _figure(fold["argmax"][figure])
                lines.append(f"| {name} | {n} | {cuts} | {figure} | {before} | {_figure(value)} |")
        for figure, after in check["mean"]["fitted"].items():
            before = check["mean"]["argmax"].get(figure)
            lines.append(f"| {name} | mean | | {figure} | {_num(before)} | {_num(after)} |")
    lines.append("")
    stored = calibration.cutoffs.as_json()
    lines.append(
        "cut-offs fitted on the whole file: "
        + (", ".join(f"{k} = {v}" for k, v in stored.items()) or "none")
    )
    lines += [f"not fitted: {k}: {why}" for k, why in calibration.skipped.items()]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _figure(figure: Mapping[str, Any]) -> str:
    ci = figure.get("ci95")
    tail = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return _num(figure.get("value")) + tail
