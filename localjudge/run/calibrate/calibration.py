"""``localjudge calibrate``: fit a judge's cut-offs on a labelled file and show what they change.

:func:`calibrate` checks the labels first (:func:`check_labels`: nothing is judged when one is
refused, or when no kind of decision asked can be fitted), then judges the file's items with the
metrics its labels cover (reasons off: they never move a decision), once, without cut-offs
(the soft values are what the fit needs; with a cache, a later run re-judges nothing). Each
kind of decision is then paired with the human labels (:func:`observations`), checked two ways
round on held-out halves (:func:`~localjudge.decisions.fit.two_fold`: fit on half of the
groups, measure on the other) and finally fitted on the whole file. A kind's fitted cut-offs
are stored only under the one rule (:func:`~localjudge.decisions.held_out_check`): the
paired held-out difference, cut-offs fitted on the other half minus the cut-offs in use now
(the neutral ones where none), has a lower 95% bound (bootstrap over groups) above 0; otherwise the
value in use is kept (:meth:`Calibration.stored`; ``force`` stores regardless). Every figure is
measured on groups the fit did not see; agreement measured later on this same file is
in-sample.

Labels (bench's labelled format) and the decisions they check: ``recall`` against
``recall.supported`` (every statement of the item takes it); ``relevant`` against
``position.relevant`` (or, for an item with a reference or a response, which position asks
with the EXPECTED ANSWER, ``position.relevant_answer``); ``levels`` against
``relevance.grade``; ``used`` against ``relevance.used``. The labels are checked, and their
spellings accepted, by :mod:`localjudge.run.labels` as ``bench`` and ``eval --labels`` check
them; of ``recall``, only 0 and 1 are fitted on (a share between is left out, and counted).

The groups the held-out split keeps together (:func:`~localjudge.run.calibrate.check.group_of`):
an item's ``source.qid``, else its top-level ``group``, else its question (``user_input``: the
items asking one question are one group), else its id. A kind whose labelled items form fewer
than :data:`~localjudge.run.calibrate.check.MIN_GROUPS` groups (two on each side of the
split) is not fitted; a file where no kind asked has enough is refused before judging.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from localjudge.decisions import NO_CUTOFFS, Cutoffs, HeldOutCheck, Provenance, held_out_check
from localjudge.decisions.fit import MIN_GROUPS_PER_SIDE, Observation, fit, two_fold
from localjudge.errors import UsageError
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS, MetricSettings
from localjudge.run.calibrate.check import (
    MIN_DECISIONS,
    TOO_FEW_GROUPS,
    LabelCheck,
    check_kinds,
    grouping,
    per_piece,
    position_kind,
)
from localjudge.run.calibrate.combine import CombinedFit, combine
from localjudge.run.evaluate.evaluation import evaluate
from localjudge.run.labels import (
    GRADES,
    LABELS_HINT,
    applicable,
    human_value,
    item_where,
    label_problem,
    n_pieces,
)
from localjudge.run.results import ItemResult

__all__ = [
    "KINDS",
    "Calibration",
    "Kind",
    "LabelCheck",
    "calibrate",
    "check_labels",
    "fit_cutoffs",
    "judge_labelled",
    "observations",
]


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
    #: per kind, the labelled items not fitted on (a recall share between 0 and 1)
    left_out: Mapping[str, int] = field(default_factory=dict)
    #: how the items judged were grouped for the held-out split (``grouped by ...``)
    grouped: str = ""
    #: per kind whose verdicts carry two readings or more, their fitted combination and its
    #: rule (:mod:`localjudge.run.calibrate.combine`)
    combined: Mapping[str, CombinedFit] = field(default_factory=dict)
    #: the cut-offs in use when the fit was made (what the rule compared with)
    now: Cutoffs = NO_CUTOFFS

    def stored(self, *, force: bool = False) -> Cutoffs:
        """The cut-offs to store: the kinds whose rule passes (every fitted kind with
        ``force``), each with its provenance holding its held-out evidence; a kind whose
        fitted combination passes its rule stores that combination and its cut-offs
        instead (``force`` does not store a combination)."""
        combined = [c.cutoffs for c in self.combined.values() if c.rule.store]
        kinds = {k for k in self.cutoffs.values if force or self.rules[k].store}
        chosen = self.cutoffs.only(kinds)
        for fitted in combined:
            chosen = chosen.merged(fitted)
        return chosen

    def kept(self) -> list[str]:
        """The fitted kinds the rule does not store (the value in use stays)."""
        stored = {k for k, c in self.combined.items() if c.rule.store}
        return [k for k in self.cutoffs.values if not self.rules[k].store and k not in stored]


def check_labels(
    records: Sequence[Mapping[str, Any]],
    metrics: Sequence[str] | None = None,
    *,
    lines: Sequence[int | None] | None = None,
    path: str | None = None,
) -> LabelCheck:
    """Check the labels that the decisions of ``metrics`` (default: all) are fitted on, before
    anything is judged (see the module's docstring): what each kind can be fitted on, and how
    the items are grouped.

    Raises :class:`~localjudge.errors.UsageError` naming the item (its id, and its line from
    ``lines``: each record's line in the file ``path``) and the field of a label refused, or
    saying why when no kind of decision asked can be fitted."""
    names = list(metrics or METRICS)
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise UsageError(f"unknown metric {unknown[0]!r}", hint=f"one of {', '.join(METRICS)}")
    kinds = [k for k in KINDS if k.metric in names]
    return check_kinds(records, kinds, lines=lines, path=path)


def observations(
    records: Sequence[Mapping[str, Any]], results: Iterable[ItemResult]
) -> dict[str, list[Observation]]:
    """Each kind's judge decisions beside the human labels of ``records`` (by input index).

    A label :func:`check_labels` refuses raises its :class:`~localjudge.errors.UsageError`."""
    return {k: [o for o, _ in pairs] for k, pairs in labelled(records, results).items()}


def labelled(
    records: Sequence[Mapping[str, Any]], results: Iterable[ItemResult]
) -> dict[str, list[tuple[Observation, Mapping[str, float] | None]]]:
    """:func:`observations`, each with the decision's readings (None where its verdict has
    none)."""
    found: dict[str, list[tuple[Observation, Mapping[str, float] | None]]] = {
        k.name: [] for k in KINDS
    }
    groups = grouping(records)
    for res in results:
        if res.result is None:
            continue
        record = records[res.index]
        labels = record.get("labels") or {}
        group = groups.groups[res.index].key
        verdicts = res.result.verdicts
        asked = position_kind(record, res.index) if res.metric == "position" else None
        for kind in KINDS:
            if asked is not None and kind.name != asked:
                continue  # position asks one of its two kinds of an item
            if kind.metric == res.metric and kind.label in labels:
                if problem := label_problem(labels, n_pieces(record)):
                    where = item_where(record, res.index)
                    raise UsageError(f"{where}: {problem}", hint=LABELS_HINT)
                found[kind.name] += _pairs(kind, labels[kind.label], verdicts, group)
    return found


#: the key of a kind's readings in its verdicts (``verdict["readings"][key]``)
READING_KEYS = {
    "position.relevant": "relevant",
    "position.relevant_answer": "relevant",
    "relevance.grade": "relevance",
    "relevance.used": "used",
}


def _pairs(
    kind: Kind, label: Any, verdicts: Sequence[Mapping[str, Any]], group: str
) -> list[tuple[Observation, Mapping[str, float] | None]]:
    out = []
    humans: list[int | None]
    if not per_piece(kind):
        if label not in (0, 1):
            return []  # a share between 0 and 1: left out (counted in Calibration.left_out)
        humans = [int(label)] * len(verdicts)
    else:
        humans = [human_value(v, graded=kind.graded) for v in label]
    # checked labels have one entry per piece, as the verdicts do
    for verdict, human in zip(verdicts, humans, strict=True):
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
        assert human is not None  # checked: an accepted spelling
        key = READING_KEYS.get(kind.name)
        reads = (verdict.get("readings") or {}).get(key) if key else None
        out.append((Observation(group, float(soft), human), reads))
    return out


def judge_labelled(
    records: Sequence[Mapping[str, Any]],
    judge: Judge,
    *,
    metrics: Sequence[str] | None = None,
    settings: MetricSettings | None = None,
    only: Mapping[str, Collection[int]] | None = None,
    combinations: Cutoffs = NO_CUTOFFS,
) -> list[ItemResult]:
    """Judge each labelled record with the metrics its labels cover (or, with ``only``, the
    records it names per metric), with no cut-offs (the fit reads the soft values; with
    ``combinations``' combinations, where it holds any, the combined ones) and, by default,
    reasons off."""
    names = list(metrics or METRICS)
    if only is None:
        only = {
            name: {i for i, r in enumerate(records) if applicable(name, r.get("labels") or {})}
            for name in names
        }
    settings = settings or MetricSettings(reasons=False)
    chosen = [METRICS[n].from_settings(settings) for n in names if only.get(n)]
    cutoffs = Cutoffs(combinations=combinations.combinations)
    return list(evaluate(records, chosen, judge, only=only, cutoffs=cutoffs, keep=False))


def calibrate(
    records: Sequence[Mapping[str, Any]],
    judge: Judge,
    *,
    metrics: Sequence[str] | None = None,
    origin: Provenance | None = None,
    current: Cutoffs | None = None,
) -> Calibration:
    """Fit ``judge``'s cut-offs on the labelled ``records`` (see the module's docstring).
    ``current``: the cut-offs in use now (by default the judge's own, the registries'), which
    the storing rule compares with; ``origin``: the provenance the fitted kinds get (file,
    sha256, date), each with its held-out evidence added.

    The labels are checked first (:func:`check_labels`): a label refused, or nothing to fit on,
    raises :class:`~localjudge.errors.UsageError` before the judge is asked anything. Only the
    kinds of decision that can be fitted are judged, on the items they are fitted on."""
    from localjudge.run.evaluate.evaluation import resolve_cutoffs  # noqa: PLC0415

    check = check_labels(records, metrics)
    only = check.only
    names = [n for n in (metrics or METRICS) if n in only]
    now = resolve_cutoffs(judge, current)
    found = fit_cutoffs(
        records,
        judge_labelled(records, judge, metrics=names, only=only, combinations=now),
        origin=origin or Provenance("calibrate"),
        current=now,
    )
    # a labelled kind left unjudged says why (known before judging)
    unfit = {k: why for k, why in check.unfit.items() if check.usable[k] or check.left_out[k]}
    skipped = {
        k.name: why for k in KINDS if (why := unfit.get(k.name) or found.skipped.get(k.name))
    }
    return replace(found, skipped=skipped)


def fit_cutoffs(
    records: Sequence[Mapping[str, Any]],
    results: Sequence[ItemResult],
    *,
    origin: Provenance,
    current: Cutoffs = NO_CUTOFFS,
) -> Calibration:
    """The held-out checks and the cut-offs of every kind of decision ``results`` hold:
    ``current`` are the cut-offs the storing rule compares with (none: the neutral ones); a kind
    with too few labelled decisions, one class, or fewer than two groups on a side of the
    held-out split is left out (``skipped`` says why). Where ``current`` combines a kind's
    readings (``results`` were judged with that combination), the fitted cut-offs apply to the
    combined soft values and are stored with the combination."""
    pairs = labelled(records, results)
    found = {k: [o for o, _ in p] for k, p in pairs.items()}
    judged = {r.metric for r in results}
    fitted: dict[str, tuple[float, ...]] = {}
    sources: dict[str, Provenance] = {}
    checks: dict[str, Mapping[str, Any]] = {}
    rules: dict[str, HeldOutCheck] = {}
    combinations: dict[str, CombinedFit] = {}
    skipped: dict[str, str] = {}
    left_out: dict[str, int] = {}
    groups = grouping(records)
    for kind in KINDS:
        obs = found[kind.name]
        if kind.metric not in judged or (kind.metric == "position" and not obs):
            continue  # (position asks one of its two kinds of an item: the other is not news)
        if not per_piece(kind) and (shares := _shares(kind, records)):
            left_out[kind.name] = shares
        if len(obs) < MIN_DECISIONS or len({o.human for o in obs}) < 2:
            skipped[kind.name] = (
                f"{len(obs)} labelled decisions (at least {MIN_DECISIONS}, both classes)"
            )
            continue
        n_groups = len({o.group for o in obs})
        if n_groups // 2 < MIN_GROUPS_PER_SIDE:
            counted = f"{n_groups} group{'' if n_groups == 1 else 's'}"
            skipped[kind.name] = f"{counted} of labelled decisions; {TOO_FEW_GROUPS}"
            continue
        checks[kind.name] = two_fold(obs, graded=kind.graded, objective=kind.objective)
        now = current.values.get(kind.name)
        folds = [f["cutoffs"] for f in checks[kind.name]["folds"]]
        rule = held_out_check(
            obs, now, graded=kind.graded, objective=kind.objective, fold_cutoffs=folds
        )
        rules[kind.name] = rule
        fitted[kind.name] = fit(obs, graded=kind.graded, objective=kind.objective)
        mine = [r.index for r in results if r.result is not None and r.metric == kind.metric]
        evidence = {**rule.as_json(), "grouped": groups.describe(sorted(set(mine)))}
        sources[kind.name] = Provenance(
            origin.origin, origin.file, origin.sha256, origin.date, evidence
        )
        if found_combination := combine(
            kind.name,
            pairs[kind.name],
            now,
            graded=kind.graded,
            objective=kind.objective,
            origin=origin,
            evidence={"grouped": evidence["grouped"]},
        ):
            combinations[kind.name] = found_combination
    items = sorted({r.index for r in results if r.result is not None})
    grouped = groups.describe(items) if items else ""
    combined = {k: c for k, c in current.combinations.items() if k in fitted}
    cutoffs = Cutoffs(fitted, sources, combined)
    return Calibration(cutoffs, checks, rules, skipped, left_out, grouped, combinations, current)


def _shares(kind: Kind, records: Sequence[Mapping[str, Any]]) -> int:
    """How many records label ``kind`` with a share between 0 and 1 (not fitted on)."""
    values = [(r.get("labels") or {}).get(kind.label) for r in records]
    return sum(1 for v in values if isinstance(v, (int, float)) and 0 < v < 1)
