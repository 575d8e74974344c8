"""The storing rule: whether fitted cut-offs replace the ones in use.

:func:`held_out_check` is the one rule that decides whether fitted cut-offs are stored (by
``localjudge calibrate``): every group's decisions are judged by cut-offs fitted on the half it
is not in (cross-fitting) and by the cut-offs in use now (or the neutral ones); the paired
difference of the two figures gets a bootstrap interval over groups, and the fitted cut-offs
are stored only when its lower 95% bound is above 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from localjudge.decisions.fit import (
    Observation,
    clusters_of,
    fit_folds,
    hard,
    over_clusters,
    split_groups,
    statistics,
)
from localjudge.stats.bootstrap import interval

__all__ = ["HeldOutCheck", "held_out_check"]


@dataclass(frozen=True)
class HeldOutCheck:
    """The paired held-out comparison that decides whether fitted cut-offs are stored.

    ``fitted``: the figure (``objective``) of every decision judged by cut-offs fitted on the
    half of the groups it is not in; ``current``: the same decisions under the cut-offs in use
    now (the baseline when ``current_cutoffs`` is None); ``difference``: fitted minus current.
    Each comes with its 95% bootstrap interval over the ``groups``; ``store`` is the rule: the
    difference's lower bound is above 0."""

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
        ci = self.difference_ci95
        return ci is not None and ci[0] > 0.0

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
            "against": "baseline" if self.current_cutoffs is None else list(self.current_cutoffs),
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
    """Cross-fitted cut-offs against ``current`` (None: the baseline) on the same decisions,
    with the paired bootstrap over groups (see :class:`HeldOutCheck`). ``fold_cutoffs``: the
    cut-offs already fitted on the first half of the split and on the second (what
    :func:`two_fold` reports as its folds' ``cutoffs``), so they are not fitted again.
    ``held_out_soft``: each decision's soft value under a model fitted on the half it is not in
    (a combination of readings, :func:`~localjudge.stats.combination_fit.cross_fit`), which the
    fold cut-offs then apply to; by default its own soft value (``current`` always applies to
    that)."""
    first = split_groups([o.group for o in obs])
    if fold_cutoffs is None:
        fold_cutoffs = fit_folds(obs, first, graded=graded, objective=objective)
    on_first, on_second = fold_cutoffs
    soft = [o.soft for o in obs] if held_out_soft is None else list(held_out_soft)
    # each decision judged by the cut-offs fitted on the half it is not in
    fitted = [
        hard(
            [Observation(o.group, v, o.human)],
            on_second if o.group in first else on_first,
            graded=graded,
        )[0]
        for o, v in zip(obs, soft, strict=True)
    ]
    now = hard(obs, current, graded=graded)
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
