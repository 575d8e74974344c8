"""The storing rule: whether a fit replaces what is in use, for a user's labels
(``localjudge calibrate``) and for the bundled judges (``fitting/build.py``) alike.

:func:`ship_rule` is the one rule. It reads, per source of labels, the paired difference of
one agreement figure (the fit's minus the fallback's, on the same decisions, with its 95%
bootstrap interval over the units that tie decisions together) and the obvious cases the fit
gets wrong where the fallback gets them right. A fit ships when

1. **gain**: the mean of the per-source differences has its lower bound above 0;
2. **no source worse**: no source's difference has its whole interval below 0. Its threshold
   moves with the sample's size: on few units an interval is wide and only a large loss
   counts; on many it is narrow and a small one does;
3. **obvious kept**: no obvious case is lost.

A user's labels are one source, measured by cross-fitting (:func:`held_out_check`: every
group judged by cut-offs fitted on the half it is not in); the bundled judges' sources are
measured on their validation parts, the fit made on their choice parts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from localjudge.decisions.fit import (
    Observation,
    clusters_of,
    fit_folds,
    hard_values,
    over_clusters,
    split_groups,
    statistics,
)
from localjudge.stats.bootstrap import interval

__all__ = ["CONDITIONS", "Difference", "HeldOutCheck", "Verdict", "held_out_check", "ship_rule"]

#: the rule's conditions, in the order they are checked and printed
CONDITIONS = ("gain", "no source worse", "obvious kept")


@dataclass(frozen=True)
class Difference:
    """A paired difference of one figure, the fit's minus the fallback's, on the same
    decisions, with its 95% bootstrap interval over units (None: too few to say)."""

    value: float | None
    ci95: Sequence[float] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"value": self.value, "ci95": None if self.ci95 is None else list(self.ci95)}


@dataclass(frozen=True)
class Verdict:
    """What the rule decided: ``ship``, and each condition of :data:`CONDITIONS` met or not."""

    ship: bool
    why: Mapping[str, bool]

    def line(self) -> str:
        """One line: ships, or refused and the conditions missed."""
        if self.ship:
            return "ships: " + ", ".join(CONDITIONS)
        return "refused: not " + ", not ".join(c for c in CONDITIONS if not self.why[c])


def ship_rule(
    per_source: Mapping[str, Difference],
    pooled: Difference | None = None,
    obvious_lost: Sequence[str] = (),
) -> Verdict:
    """The storing rule (see the module's docstring) on per-source paired differences and
    ``pooled``, the difference of the mean over sources (with one source: that source's)."""
    if pooled is None and len(per_source) == 1:
        pooled = next(iter(per_source.values()))
    gain = pooled is not None and pooled.ci95 is not None and pooled.ci95[0] > 0.0
    worse = any(d.ci95 is not None and d.ci95[1] < 0.0 for d in per_source.values())
    why = {"gain": gain, "no source worse": not worse, "obvious kept": not obvious_lost}
    return Verdict(all(why.values()), why)


@dataclass(frozen=True)
class HeldOutCheck:
    """The paired held-out comparison that decides whether fitted cut-offs are stored.

    ``fitted``: the figure (``objective``) of every decision judged by cut-offs fitted on the
    half of the groups it is not in; ``current``: the same decisions under the cut-offs in use
    now (the neutral ones when ``current_cutoffs`` is None); ``difference``: fitted minus
    current. Each comes with its 95% bootstrap interval over the ``groups``; ``store`` is
    :func:`ship_rule` on this one source (the obvious cases are the caller's)."""

    objective: str
    n: int
    groups: int
    fitted: float | None
    fitted_ci95: list[float] | None
    current: float | None
    current_ci95: list[float] | None
    difference: float | None
    difference_ci95: list[float] | None
    current_cutoffs: tuple[float, ...] | None

    @property
    def store(self) -> bool:
        return ship_rule({"labels": Difference(self.difference, self.difference_ci95)}).ship

    def as_json(self) -> dict[str, Any]:
        """The evidence a stored cut-off keeps: the held-out figures, intervals and groups."""
        return {
            "figure": self.objective,
            "value": self.fitted,
            "ci95": self.fitted_ci95,
            "current": self.current,
            "current_ci95": self.current_ci95,
            "difference": self.difference,
            "difference_ci95": self.difference_ci95,
            "decisions": self.n,
            "groups": self.groups,
            "against": "neutral" if self.current_cutoffs is None else list(self.current_cutoffs),
        }


def held_out_check(
    obs: Sequence[Observation],
    current: Sequence[float] | None,
    *,
    graded: bool,
    objective: str = "kappa",
    fold_cutoffs: Sequence[Sequence[float]] | None = None,
    held_out_soft: Sequence[float] | None = None,
) -> HeldOutCheck:
    """Cross-fitted cut-offs against ``current`` (None: the neutral ones) on the same decisions,
    with the paired bootstrap over groups (see :class:`HeldOutCheck`). ``fold_cutoffs``: the
    cut-offs already fitted on the first half of the split and on the second (what
    :func:`~localjudge.decisions.fit.two_fold` reports as its folds' ``cutoffs``), so they are
    not fitted again. ``held_out_soft``: each decision's soft value under a model fitted on the
    half it is not in (a combination of readings,
    :func:`~localjudge.decisions.combination_fit.cross_fit`), which the fold cut-offs then apply
    to; by default its own soft value (``current`` always applies to that)."""
    first = split_groups([o.group for o in obs])
    if fold_cutoffs is None:
        fold_cutoffs = fit_folds(obs, first, graded=graded, objective=objective)
    on_first, on_second = fold_cutoffs
    soft = [o.soft for o in obs] if held_out_soft is None else list(held_out_soft)
    # each decision judged by the cut-offs fitted on the half it is not in
    fitted = [
        hard_values(
            [Observation(o.group, v, o.human)],
            on_second if o.group in first else on_first,
            graded=graded,
        )[0]
        for o, v in zip(obs, soft, strict=True)
    ]
    now = hard_values(obs, current, graded=graded)
    stat = statistics(graded)[objective]
    clusters = clusters_of(obs)

    def of(judged: list[int]) -> Callable[[Sequence[list[int]]], float | None]:
        return over_clusters(obs, judged, stat)

    def difference(cs: Sequence[list[int]]) -> float | None:
        a, b = of(fitted)(cs), of(now)(cs)
        return None if a is None or b is None else a - b

    return HeldOutCheck(
        objective=objective,
        n=len(obs),
        groups=len(clusters),
        fitted=of(fitted)(clusters),
        fitted_ci95=interval(clusters, of(fitted)),
        current=of(now)(clusters),
        current_ci95=interval(clusters, of(now)),
        difference=difference(clusters),
        difference_ci95=interval(clusters, difference),
        current_cutoffs=None if current is None else tuple(current),
    )
