"""Fitting a judge's cut-offs on human labels, and measuring them on labels held back.

Pure functions of :class:`Observation` s: one judge decision (its soft value) beside the human
label of the same statement or passage, with the group it belongs to (a query, a claim, an
item), which is what the data is split and resampled by. The hard values are
:func:`~localjudge.decisions.decide.hard_value`'s, the one way ``eval`` decides too; without
cut-offs, against the neutral ones, the larger probability
(:func:`~localjudge.decisions.kinds.neutral`).

- A yes/no kind gets one cut-off on P(yes): the one that maximises balanced accuracy (recall,
  whose target is balanced accuracy) or Cohen's kappa (the others) on the fitted part.
- A graded kind (0-3) gets three ascending cut-offs on the expected grade, fitted by coordinate
  ascent on the quadratic-weighted kappa from the cut-offs that match the people's share of each
  grade, never letting a grade's share rise more than :data:`MAX_EXCESS_SHARE` above theirs.

:func:`two_fold` fits on half of the groups and measures on the other half, and the other way
round, beside the neutral cut-offs on the same halves, with bootstrap intervals over groups.

Whether fitted cut-offs are stored is :mod:`localjudge.decisions.rule`'s to say.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from localjudge.decisions.decide import hard_value
from localjudge.decisions.kinds import neutral
from localjudge.stats.agreement import cohen_kappa
from localjudge.stats.bootstrap import interval

__all__ = [
    "FIGURES",
    "MAX_EXCESS_SHARE",
    "Observation",
    "agreement",
    "clusters_of",
    "figure_of",
    "fit",
    "fit_folds",
    "hard_values",
    "over_clusters",
    "split_groups",
    "statistics",
    "two_fold",
]

#: a fitted grade's share may exceed the people's by at most this much
MAX_EXCESS_SHARE = 0.20
#: candidate cut-offs tried per position (quantiles of the soft values)
CANDIDATES = 200


@dataclass(frozen=True)
class Observation:
    """One decision beside its human label: ``soft`` (P(yes), or the expected grade) and
    ``human`` (0/1, or the grade 0-3); ``group``: what it is split and resampled by."""

    group: str
    soft: float
    human: int


#: an agreement statistic of decisions and their hard values (None where it is undefined)
Statistic = Callable[[Sequence[Observation], list[int]], Any]


def hard_values(
    obs: Sequence[Observation], cutoffs: Sequence[float] | None, *, graded: bool = False
) -> list[int]:
    """Each decision's hard value (:func:`~localjudge.decisions.decide.hard_value`): its soft
    value against ``cutoffs``, or against the neutral ones (the larger probability) without
    them."""
    cuts = tuple(cutoffs) if cutoffs is not None else neutral(graded)
    return [hard_value(o.soft, cuts) for o in obs]


# --------------------------------------------------------------------------- statistics


def _relevant(human: np.ndarray, judge: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Grades as relevant (2 or 3) or not."""
    return (human >= 2).astype(int), (judge >= 2).astype(int)


def _balanced_accuracy(human: np.ndarray, judge: np.ndarray) -> float | None:
    rates = [float(np.mean(judge[human == c] == c)) for c in (0, 1) if np.any(human == c)]
    return float(np.mean(rates)) if len(rates) == 2 else None


def _auc(human: np.ndarray, soft: np.ndarray) -> float | None:
    pos, neg = soft[human == 1], soft[human == 0]
    if len(pos) == 0 or len(neg) == 0:
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    values = np.concatenate([pos, neg])[order]
    ranks[order] = _average_ranks(values)
    u = float(ranks[: len(pos)].sum()) - len(pos) * (len(pos) + 1) / 2
    return u / (len(pos) * len(neg))


def _average_ranks(sorted_values: np.ndarray) -> np.ndarray:
    ranks = np.arange(1, len(sorted_values) + 1, dtype=float)
    start = 0
    for end in range(1, len(sorted_values) + 1):
        if end == len(sorted_values) or sorted_values[end] != sorted_values[start]:
            ranks[start:end] = (start + 1 + end) / 2
            start = end
    return ranks


#: each figure of hard values beside labels, as a function of the two integer arrays
FIGURE_OF_ARRAYS: dict[str, Callable[[np.ndarray, np.ndarray], float | None]] = {
    "kappa": lambda h, j: cohen_kappa(h, j, 2, quadratic=False),
    "balanced_accuracy": _balanced_accuracy,
    "qwk": lambda h, j: cohen_kappa(h, j, 4, quadratic=True),
    "kappa_relevant": lambda h, j: cohen_kappa(*_relevant(h, j), 2, quadratic=False),
}


def statistics(graded: bool) -> dict[str, Statistic]:
    def of(name: str) -> Statistic:
        def stat(obs: Sequence[Observation], judged: list[int]) -> float | None:
            human = np.asarray([o.human for o in obs], dtype=int)
            return FIGURE_OF_ARRAYS[name](human, np.asarray(judged, dtype=int))

        return stat

    names = ("qwk", "kappa_relevant") if graded else ("kappa", "balanced_accuracy")
    return {name: of(name) for name in names}


def agreement(
    obs: Sequence[Observation], cutoffs: Sequence[float] | None, *, graded: bool
) -> dict[str, Any]:
    """Agreement of the hard values (with ``cutoffs``, or the neutral ones) with the people, each
    figure with its bootstrap interval over groups; the soft values' ROC AUC (yes/no) and the
    judge's and the people's share of each value."""
    judged = hard_values(obs, cutoffs, graded=graded)
    clusters = clusters_of(obs)

    def over(stat: Statistic) -> Callable[[Sequence[list[int]]], float | None]:
        return over_clusters(obs, judged, stat)

    out: dict[str, Any] = {"n": len(obs), "groups": len(clusters)}
    for name, stat in statistics(graded).items():
        out[name] = {"value": over(stat)(clusters), "ci95": interval(clusters, over(stat))}
    if not graded:
        human = np.asarray([o.human for o in obs])
        soft = np.asarray([o.soft for o in obs])

        def auc(cs: Sequence[list[int]]) -> float | None:
            picked = [n for c in cs for n in c]
            return _auc(human[picked], soft[picked])

        out["auc"] = {"value": auc(clusters), "ci95": interval(clusters, auc)}
    k = 4 if graded else 2
    out["judge_shares"] = [float(np.mean(np.asarray(judged) == v)) for v in range(k)]
    out["human_shares"] = [
        float(np.mean(np.asarray([o.human for o in obs]) == v)) for v in range(k)
    ]
    return out


def clusters_of(obs: Sequence[Observation]) -> list[list[int]]:
    """The indices of ``obs`` per group, groups in order of first appearance."""
    by_group: dict[str, list[int]] = {}
    for n, o in enumerate(obs):
        by_group.setdefault(o.group, []).append(n)
    return list(by_group.values())


def over_clusters(
    obs: Sequence[Observation], judged: Sequence[int], stat: Statistic
) -> Callable[[Sequence[list[int]]], float | None]:
    """``stat`` of the hard values ``judged`` as a function of a draw of clusters (lists of
    indices into ``obs``): what the bootstrap resamples."""

    def value(cs: Sequence[list[int]]) -> float | None:
        picked = [n for c in cs for n in c]
        result: float | None = stat([obs[n] for n in picked], [judged[n] for n in picked])
        return result

    return value


#: the agreement figure each kind of decision is fitted for and judged by: balanced accuracy
#: for recall (its target), quadratic-weighted kappa for the grade, kappa for the others
FIGURES = {"recall.supported": "balanced_accuracy", "relevance.grade": "qwk"}


def figure_of(kind: str, human: Sequence[int], judged: Sequence[int]) -> float | None:
    """The figure of ``kind`` (:data:`FIGURES`, else kappa) of hard values beside labels."""
    figure = FIGURE_OF_ARRAYS[FIGURES.get(kind, "kappa")]
    return figure(np.asarray(human, dtype=int), np.asarray(judged, dtype=int))


# --------------------------------------------------------------------------- fitting


def fit(obs: Sequence[Observation], *, graded: bool, objective: str = "kappa") -> tuple[float, ...]:
    """The cut-offs that fit ``obs`` best (see the module's docstring); ``objective`` for a
    yes/no kind: ``"kappa"`` or ``"balanced_accuracy"``."""
    if not obs:
        raise ValueError("no labelled decision to fit cut-offs on")
    soft = np.asarray([o.soft for o in obs], dtype=float)
    human = np.asarray([o.human for o in obs], dtype=int)
    candidates = np.unique(np.quantile(soft, np.linspace(0, 1, CANDIDATES + 1)))
    high = 3.0 if graded else 1.0  # a cut-off stays inside the soft value's range
    candidates = np.unique(np.clip(np.concatenate([candidates, candidates + 1e-9]), 0.0, high))
    if not graded:
        return (_fit_binary(soft, human, candidates, objective),)
    return _fit_graded(soft, human, candidates)


def _fit_binary(
    soft: np.ndarray, human: np.ndarray, candidates: np.ndarray, objective: str
) -> float:
    best, best_value = 0.5, -np.inf
    for c in candidates:
        judged = (soft >= c).astype(int)
        if objective == "balanced_accuracy":
            value = _balanced_accuracy(human, judged)
        else:
            value = cohen_kappa(human, judged, 2, quadratic=False)
        if value is not None and value > best_value + 1e-12:
            best, best_value = float(c), value
    return best


def _fit_graded(soft: np.ndarray, human: np.ndarray, candidates: np.ndarray) -> tuple[float, ...]:
    shares = np.asarray([np.mean(human == g) for g in range(4)])
    limit = shares + MAX_EXCESS_SHARE

    def score(cuts: np.ndarray) -> float:
        judged = np.sum(soft[:, None] >= cuts[None, :], axis=1)
        if np.any(np.bincount(judged, minlength=4) / len(judged) > limit + 1e-12):
            return -np.inf
        value = cohen_kappa(human, judged, 4, quadratic=True)
        return -np.inf if value is None else value

    # start where the judge's shares match the people's
    cuts = np.quantile(soft, np.cumsum(shares)[:3])
    cuts = np.maximum.accumulate(cuts)
    best = score(cuts)
    for _ in range(4):
        improved = False
        for i in range(3):
            low = cuts[i - 1] if i > 0 else -np.inf
            high = cuts[i + 1] if i < 2 else np.inf
            for c in candidates[(candidates >= low) & (candidates <= high)]:
                trial = cuts.copy()
                trial[i] = c
                value = score(trial)
                if value > best + 1e-12:
                    cuts, best, improved = trial, value, True
        if not improved:
            break
    return tuple(float(c) for c in cuts)


# --------------------------------------------------------------------------- held-out check


#: each half of the split needs at least this many groups
MIN_GROUPS_PER_SIDE = 2


def split_groups(groups: Sequence[str], seed: str = "localjudge") -> set[str]:
    """Half of the distinct ``groups`` (by a seeded hash): the first fold. Fewer than
    :data:`MIN_GROUPS_PER_SIDE` groups on a side is a ValueError naming how many there are."""
    distinct = sorted(set(groups))
    if len(distinct) // 2 < MIN_GROUPS_PER_SIDE:
        raise ValueError(
            f"{len(distinct)} group(s) of labelled decisions: the held-out check needs at least "
            f"{MIN_GROUPS_PER_SIDE} on each side of the split ({2 * MIN_GROUPS_PER_SIDE} in all)"
        )
    ranked = sorted(distinct, key=lambda g: hashlib.sha256(f"{seed}/{g}".encode()).hexdigest())
    return set(ranked[: len(ranked) // 2])


def fit_folds(
    obs: Sequence[Observation], first: set[str], *, graded: bool, objective: str
) -> list[tuple[float, ...]]:
    """The cut-offs fitted on the groups in ``first``, then on the others."""
    return [
        fit([o for o in obs if (o.group in first) == inside], graded=graded, objective=objective)
        for inside in (True, False)
    ]


def two_fold(
    obs: Sequence[Observation], *, graded: bool, objective: str = "kappa"
) -> dict[str, Any]:
    """Fit on one half of the groups, measure on the other, and the other way round; each fold
    beside the neutral cut-offs on the same half (under the key ``argmax``); ``mean`` averages
    the two folds' figures."""
    first = split_groups([o.group for o in obs])
    halves = [
        [o for o in obs if o.group in first],
        [o for o in obs if o.group not in first],
    ]
    folds = []
    fits = fit_folds(obs, first, graded=graded, objective=objective)
    for cuts, measure_on in zip(fits, (halves[1], halves[0]), strict=True):
        folds.append(
            {
                "cutoffs": list(cuts),
                "argmax": agreement(measure_on, None, graded=graded),  # the neutral cut-offs
                "fitted": agreement(measure_on, cuts, graded=graded),
            }
        )
    mean: dict[str, dict[str, float | None]] = {}
    for which in ("argmax", "fitted"):
        mean[which] = {}
        figures: dict[str, Any] = folds[0][which]  # type: ignore[assignment]
        for name, figure in figures.items():
            if isinstance(figure, dict):
                values = [f[which][name]["value"] for f in folds]  # type: ignore[index]
                ok = [v for v in values if v is not None]
                mean[which][name] = float(np.mean(ok)) if len(ok) == len(values) else None
    return {"folds": folds, "mean": mean}
