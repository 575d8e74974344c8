"""``localjudge calibrate``'s combinations: a kind's readings combined by a model fitted on the
user's labels, under the same rule as cut-offs.

Where a kind's verdicts carry two readings or more of those that mean the same in every
language (:data:`~localjudge.decisions.COMBINED_READINGS`: the call's own soft value and
how well the passage predicts the QUESTION against the item's other passages), calibrate also
fits their combination (logistic, or proportional odds for grades;
:mod:`localjudge.decisions.combination_fit`) over every reading all of the kind's decisions have,
one candidate, so nothing is chosen by the figures that judge it. The check is the cut-offs'
(:func:`~localjudge.decisions.held_out_check`), with the combination fitted on the half
of the groups each decision is not in as well as its cut-offs, against the product in use now
on the same decisions (its combination and cut-offs); the combination, refitted on the whole
file with its cut-offs, is stored only when the paired difference's lower 95% bound is above
0, and then replaces the kind's cut-offs fitted on the values in use. Nothing is judged again:
the readings are in the verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from localjudge.decisions import (
    COMBINED_READINGS,
    Cutoffs,
    HeldOutCheck,
    Provenance,
    held_out_check,
)
from localjudge.decisions.combination_fit import Reads, combined_soft, cross_fit, fit_combination
from localjudge.decisions.fit import Observation, fit, split_groups

__all__ = ["CombinedFit", "combine"]


@dataclass(frozen=True)
class CombinedFit:
    """A kind's combination fitted on the labels: the readings it weighs, its storing rule, and
    what would be stored (the combination and its cut-offs, fitted on the whole file, with
    their provenance)."""

    readings: tuple[str, ...]
    rule: HeldOutCheck
    cutoffs: Cutoffs


def combine(
    kind: str,
    pairs: Sequence[tuple[Observation, Mapping[str, float] | None]],
    current: Sequence[float] | None,
    *,
    graded: bool,
    objective: str,
    origin: Provenance,
    evidence: Mapping[str, object] | None = None,
) -> CombinedFit | None:
    """The combination of ``kind``'s readings checked and fitted (see the module's docstring),
    or None when its decisions do not all have two readings or more in common. ``current``:
    the cut-offs in use now (None: the baseline), which apply to the observations' soft values
    (already combined where a combination is in use)."""
    if not pairs or any(reads is None for _, reads in pairs):
        return None
    names = tuple(n for n in COMBINED_READINGS if all(n in (reads or {}) for _, reads in pairs))
    if len(names) < 2:
        return None
    obs = [o for o, _ in pairs]
    reads = [Reads(o.group, r or {}, o.human) for o, r in pairs]
    first = split_groups([o.group for o in obs])
    crossed = cross_fit(reads, names, first, graded=graded, objective=objective)
    rule = held_out_check(
        obs,
        current,
        graded=graded,
        objective=objective,
        fold_cutoffs=crossed.fold_cutoffs,
        held_out_soft=crossed.held_out,
    )
    combination = fit_combination(reads, names, graded=graded)
    soft = combined_soft(combination, reads, graded=graded)
    combined = [Observation(o.group, v, o.human) for o, v in zip(obs, soft, strict=True)]
    cuts = fit(combined, graded=graded, objective=objective)
    facts = {**rule.as_json(), "readings": list(names), **(evidence or {})}
    source = Provenance(origin.origin, origin.file, origin.sha256, origin.date, facts)
    return CombinedFit(names, rule, Cutoffs({kind: cuts}, {kind: source}, {kind: combination}))
