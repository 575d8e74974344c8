"""``localjudge calibrate``: fit a judge's cut-offs on a labelled file and show what they change.

:func:`calibrate` judges the file's items with the metrics its labels cover (reasons off: they
never move a decision), once, without cut-offs (the soft values are what the fit needs;
with a cache, a later run re-judges nothing). Each kind of decision is then paired with the
human labels (:func:`observations`), checked two ways round on held-out halves
(:func:`~localjudge.stats.cutoffs_fit.two_fold`: fit on half of the groups, measure on the
other) and finally fitted on the whole file. A kind's fitted cut-offs are stored only under the
one rule (:func:`~localjudge.stats.cutoffs_fit.held_out_check`): the paired held-out difference,
cut-offs fitted on the other half minus the cut-offs in use now (the baseline where none), has
a lower 95% bound (bootstrap over groups) above 0; otherwise the value in use is kept
(:meth:`Calibration.stored`; ``force`` stores regardless). Every figure is measured on groups
the fit did not see; agreement measured later on this same file is in-sample.

Labels (bench's labelled format) and the decisions they check: ``recall`` (0 or 1; every
statement of the item takes it; a share between is left out) against ``recall.supported``;
``relevant`` against ``position.relevant`` (or, for an item with a reference or a response,
which position asks with the EXPECTED ANSWER, ``position.relevant_answer``); ``levels``
against ``relevance.grade``; ``used`` against ``relevance.used``. The groups an item belongs
to: its ``source.qid`` when it has one (a query's passages stay on one side), else its id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from localjudge.data.items import make_item
from localjudge.errors import InvalidItemError
from localjudge.judge.cutoffs import NO_CUTOFFS, Cutoffs, Provenance
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, MetricSettings
from localjudge.metrics.position import decision_for
from localjudge.run.compare import applicable
from localjudge.run.evaluation import evaluate
from localjudge.run.results import ItemResult
from localjudge.scoring import RELEVANCE_LEVELS
from localjudge.stats.cutoffs_fit import HeldOutCheck, Observation, fit, held_out_check, two_fold

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
    Kind("position.relevant_answer", "position", "relevant"),
    Kind("relevance.grade", "relevance", "levels", graded=True, objective="qwk"),
    Kind("relevance.used", "relevance", "used"),
)


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found: the cut-offs fitted on the whole file (every kind with
    enough labels), each kind's two-fold table (``checks``) and its storing rule (``rules``:
    fitted against what is in use now), and the kinds left out (with why)."""

    cutoffs: Cutoffs
    checks: Mapping[str, Mapping[str, Any]]
    rules: Mapping[str, HeldOutCheck]
    skipped: Mapping[str, str]

    def stored(self, *, force: bool = False) -> Cutoffs:
        """The cut-offs to store: the kinds whose rule passes (every fitted kind with
        ``force``), each with its provenance holding its held-out evidence."""
        kinds = {k for k in self.cutoffs.values if force or self.rules[k].store}
        return self.cutoffs.only(kinds)

    def kept(self) -> list[str]:
        """The fitted kinds the rule does not store (the value in use stays)."""
        return [k for k in self.cutoffs.values if not self.rules[k].store]


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
        asked = _position_kind(record, res.index) if res.metric == "position" else None
        for kind in KINDS:
            if kind.metric != res.metric or kind.label not in labels:
                continue
            if asked is not None and kind.name != asked:
                continue
            found[kind.name] += _pairs(kind, labels[kind.label], verdicts, group)
    return found


def _position_kind(record: Mapping[str, Any], index: int) -> str | None:
    """The kind of decision position asked of this record's passages."""
    try:
        return decision_for(make_item(record, index=index)).kind
    except InvalidItemError:
        return None


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
            soft = probs["attributed"]["1"]
        elif kind.metric == "position":
            soft = probs["relevant"]["true"]
        elif kind.name == "relevance.used":
            soft = probs["used"]["true"]
        else:
            soft = sum(GRADES[lv] * p for lv, p in probs["relevance"].items())
        out.append(Observation(group, float(soft), human))
    return out


def judge_labelled(
    records: Sequence[Mapping[str, Any]],
    judge: Judge,
    *,
    metrics: Sequence[str] | None = None,
    settings: MetricSettings | None = None,
) -> list[ItemResult]:
    """Judge each labelled record with the metrics its labels cover, with no cut-offs (the fit
    reads the soft values) and, by default, reasons off."""
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
    origin: Provenance | None = None,
    current: Cutoffs | None = None,
) -> Calibration:
    """Fit ``judge``'s cut-offs on the labelled ``records`` (see the module's docstring);
    ``current``: the cut-offs in use now (by default the judge's own, the registries'), which
    the storing rule compares with; ``origin``: the provenance the fitted kinds get (file,
    sha256, date), each with its held-out evidence added."""
    from localjudge.run.evaluation import resolve_cutoffs  # noqa: PLC0415

    results = judge_labelled(records, judge, metrics=metrics)
    in_use = resolve_cutoffs(judge, current)
    return fit_cutoffs(records, results, origin=origin or Provenance("calibrate"), current=in_use)


def fit_cutoffs(
    records: Sequence[Mapping[str, Any]],
    results: Sequence[ItemResult],
    *,
    origin: Provenance,
    current: Cutoffs = NO_CUTOFFS,
) -> Calibration:
    """The held-out checks and the cut-offs of every kind of decision ``results`` hold:
    ``current`` are the cut-offs the rule compares with (none: the baseline)."""
    found = observations(records, results)
    judged = {r.metric for r in results}
    fitted: dict[str, tuple[float, ...]] = {}
    sources: dict[str, Provenance] = {}
    checks: dict[str, Mapping[str, Any]] = {}
    rules: dict[str, HeldOutCheck] = {}
    skipped: dict[str, str] = {}
    for kind in KINDS:
        obs = found[kind.name]
        if kind.metric not in judged or (kind.metric == "position" and not obs):
            continue  # (position asks one of its two kinds of an item: the other is not news)
        if len(obs) < MIN_DECISIONS or len({o.human for o in obs}) < 2:
            skipped[kind.name] = (
                f"{len(obs)} labelled decisions (at least {MIN_DECISIONS}, both classes)"
            )
            continue
        now = current.values.get(kind.name)
        checks[kind.name] = two_fold(obs, graded=kind.graded, objective=kind.objective)
        rules[kind.name] = held_out_check(obs, now, graded=kind.graded, objective=kind.objective)
        fitted[kind.name] = fit(obs, graded=kind.graded, objective=kind.objective)
        evidence = {**rules[kind.name].as_json(), "grouped_by": _grouping(records)}
        sources[kind.name] = Provenance(
            origin.origin, origin.file, origin.sha256, origin.date, evidence
        )
    return Calibration(Cutoffs(fitted, sources), checks, rules, skipped)


def _grouping(records: Sequence[Mapping[str, Any]]) -> str:
    return "source.qid" if all((r.get("source") or {}).get("qid") for r in records) else "id"


#: what calibrate's output and the README say of figures measured on the calibration file
IN_SAMPLE = (
    "agreement measured later on this same file is in-sample (the stored cut-offs were fitted "
    "on all of it): measure a judge on labels no fit saw"
)


def calibration_table(calibration: Calibration, *, force: bool = False) -> str:
    """The held-out check as Markdown: per kind and fold, the baseline (the larger
    probability) and the cut-offs fitted on the other half, with 95% bootstrap intervals; then
    the storing rule per kind (cross-fitted against what is in use now, the paired difference)
    and what is stored."""
    lines = [
        "| decision | fold | cut-offs (fitted on the other half) | figure | baseline | fitted |",
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
    lines += [
        "",
        "Storing rule: every group judged by cut-offs fitted on the other half, against the "
        "cut-offs in use now on the same groups; stored only when the difference's lower 95% "
        "bound is above 0.",
        "",
        "| decision | figure | groups | in use now | fitted, held out | difference | stored |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rule in calibration.rules.items():
        now = "baseline" if rule.current_cutoffs is None else "current"
        verdict = "yes" if rule.store else ("yes (--force)" if force else "no: kept")
        lines.append(
            f"| {name} | {rule.objective} | {rule.groups} | "
            f"{_ci(rule.current, rule.current_ci95)} ({now}) | "
            f"{_ci(rule.fitted, rule.fitted_ci95)} | "
            f"{_ci(rule.difference, rule.difference_ci95, sign=True)} | {verdict} |"
        )
    lines.append("")
    stored = calibration.cutoffs.as_json()
    lines.append(
        "cut-offs fitted on the whole file: "
        + (", ".join(f"{k} = {_cuts(v)}" for k, v in stored.items()) or "none")
    )
    lines += [f"not fitted: {k}: {why}" for k, why in calibration.skipped.items()]
    if calibration.cutoffs:
        lines.append(f"note: {IN_SAMPLE}")
    return "\n".join(lines)


def _cuts(value: Any) -> str:
    return ", ".join(f"{v:.3f}" for v in value) if isinstance(value, list) else f"{value:.3f}"


def _ci(value: float | None, ci: Sequence[float] | None, *, sign: bool = False) -> str:
    if value is None:
        return "-"
    fmt = "{:+.3f}" if sign else "{:.3f}"
    return fmt.format(value) + (f" [{fmt.format(ci[0])}, {fmt.format(ci[1])}]" if ci else "")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _figure(figure: Mapping[str, Any]) -> str:
    ci = figure.get("ci95")
    tail = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return _num(figure.get("value")) + tail
