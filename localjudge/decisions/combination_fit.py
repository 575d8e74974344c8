"""Fitting a kind's combination of readings on human labels.

The combination is a :class:`~localjudge.decisions.cutoffs.Combination`.

Pure functions of :class:`Reads`: one decision's readings (the decision call's own soft value,
how well the passage predicts the QUESTION; :data:`~localjudge.decisions.kinds.READINGS`)
beside the human label, with the group it belongs to (a query), which is what data is split by.

- A yes/no kind: a logistic regression of the label on the readings.
- A graded kind (0-3): a proportional-odds model, P(grade >= k) = sigmoid(z - t_k), with one
  weight per reading and three ascending thresholds.

Both are fitted by maximum likelihood with a small ridge penalty on the weights (it keeps a
reading that separates the labels perfectly finite), with scipy's L-BFGS. The combined soft
value (P(yes), or the expected grade) is what a kind's cut-offs then apply to
(:mod:`localjudge.decisions.fit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from localjudge.decisions.cutoffs import Combination
from localjudge.decisions.decide import soft_value
from localjudge.decisions.fit import Observation, fit

__all__ = ["RIDGE", "CrossFit", "Reads", "combined_soft", "cross_fit", "fit_combination"]

#: the ridge penalty on the weights (the intercepts are free), per decision
RIDGE = 1e-3


@dataclass(frozen=True)
class Reads:
    """One decision's readings beside its human label (0/1, or the grade 0-3)."""

    group: str
    readings: Mapping[str, float]
    human: int


def fit_combination(
    obs: Sequence[Reads], names: Sequence[str], *, graded: bool, ridge: float = RIDGE
) -> Combination:
    """The combination of the readings ``names`` that fits ``obs`` best (maximum likelihood,
    ridge on the weights). Every decision must have every reading named."""
    from scipy.optimize import minimize  # noqa: PLC0415 (scipy is slow to import)

    if not names:
        raise ValueError("a combination weighs at least one reading")
    x = np.asarray([[o.readings[n] for n in names] for o in obs], dtype=np.float64)
    y = np.asarray([o.human for o in obs], dtype=int)
    k = len(names)
    if graded:
        levels = 3
        shares = [float(np.mean(y >= g)) for g in range(1, levels + 1)]
        # P(grade >= g) = sigmoid(-t_g) at z = 0: each threshold starts at the labels' share
        start = np.concatenate([np.zeros(k), [-_logit(s) for s in shares]])

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            return _ordinal_nll(theta, x, y, k, ridge)

    else:
        start = np.zeros(k + 1)
        start[-1] = _logit(float(np.mean(y)))

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            return _logistic_nll(theta, x, y, ridge)

    result = minimize(loss, start, jac=True, method="L-BFGS-B")
    theta = np.asarray(result.x, dtype=np.float64)
    weights = {n: float(w) for n, w in zip(names, theta[:k], strict=True)}
    intercepts = theta[k:]
    if graded:
        intercepts = np.maximum.accumulate(intercepts)  # ascending (they are at the optimum)
    return Combination(weights, tuple(float(t) for t in intercepts))


def combined_soft(combination: Combination, obs: Sequence[Reads], *, graded: bool) -> list[float]:
    """Each decision's soft value under ``combination``: P(yes), or the expected grade
    (:func:`~localjudge.decisions.decide.soft_value` of
    :meth:`~localjudge.decisions.cutoffs.Combination.levels`, as ``eval`` makes it). ``graded`` must
    match the combination's intercepts (one for yes/no, three for a grade)."""
    out = []
    for o in obs:
        levels = combination.levels(o.readings)
        if levels is None:
            raise ValueError(
                f"a decision of group {o.group!r} lacks a reading the combination weighs"
            )
        if (len(levels) > 2) != graded:
            raise ValueError(f"a {'graded' if graded else 'yes/no'} kind, {len(levels)} levels")
        out.append(soft_value(levels))
    return out


@dataclass(frozen=True)
class CrossFit:
    """A combination checked on held-out halves: ``held_out`` is each decision's soft value
    under the combination fitted on the half of the groups it is not in; ``fold_cutoffs`` the
    cut-offs fitted with each half's combination on that half's combined values (the half
    ``first`` first, as :func:`~localjudge.decisions.rule.held_out_check` takes them)."""

    held_out: list[float]
    fold_cutoffs: list[tuple[float, ...]]


def cross_fit(
    obs: Sequence[Reads], names: Sequence[str], first: set[str], *, graded: bool, objective: str
) -> CrossFit:
    """Fit the combination of ``names`` and its cut-offs on the groups in ``first``, apply them
    to the others, and the other way round (see :class:`CrossFit`)."""

    held_out = [0.0] * len(obs)
    fold_cutoffs = []
    for inside in (True, False):
        train = [o for o in obs if (o.group in first) == inside]
        combination = fit_combination(train, names, graded=graded)
        soft = combined_soft(combination, train, graded=graded)
        fitted = [Observation(o.group, v, o.human) for o, v in zip(train, soft, strict=True)]
        fold_cutoffs.append(fit(fitted, graded=graded, objective=objective))
        rest = [n for n, o in enumerate(obs) if (o.group in first) != inside]
        soft_rest = combined_soft(combination, [obs[n] for n in rest], graded=graded)
        for n, v in zip(rest, soft_rest, strict=True):
            held_out[n] = v
    return CrossFit(held_out, fold_cutoffs)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return float(np.log(p / (1 - p)))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


def _logistic_nll(
    theta: np.ndarray, x: np.ndarray, y: np.ndarray, ridge: float
) -> tuple[float, np.ndarray]:
    w, c = theta[:-1], theta[-1]
    z = x @ w + c
    # log(1 + e^z) - y z, stably
    nll = float(np.sum(np.logaddexp(0.0, z) - y * z)) + ridge * len(y) * float(w @ w)
    r = _sigmoid(z) - y
    grad = np.concatenate([x.T @ r + 2 * ridge * len(y) * w, [np.sum(r)]])
    return nll, grad


def _ordinal_nll(
    theta: np.ndarray, x: np.ndarray, y: np.ndarray, k: int, ridge: float
) -> tuple[float, np.ndarray]:
    """The proportional-odds model's negative log-likelihood and its gradient."""
    w, t = theta[:k], theta[k:]
    n, levels = len(y), len(t)
    z = x @ w
    # P(grade >= g) for g = 0..levels+1: 1, sigmoid(z - t_1..), 0
    s = np.ones((n, levels + 2))
    s[:, 1 : levels + 1] = _sigmoid(z[:, None] - t[None, :])
    s[:, levels + 1] = 0.0
    rows = np.arange(n)
    upper, lower = s[rows, y], s[rows, y + 1]
    p = np.maximum(upper - lower, 1e-12)
    nll = float(-np.sum(np.log(p))) + ridge * n * float(w @ w)
    # d s_g / d z = s_g (1 - s_g) for the inner g; 0 at the ends
    ds = s * (1.0 - s)
    d_up, d_low = ds[rows, y], ds[rows, y + 1]
    dz = -(d_up - d_low) / p
    grad_w = x.T @ dz + 2 * ridge * n * w
    grad_t = np.zeros(levels)
    for g in range(1, levels + 1):
        # t_g enters s_g with derivative -ds_g: through upper where y == g, through lower
        # where y + 1 == g
        at_upper = y == g
        at_lower = y + 1 == g
        grad_t[g - 1] = float(
            np.sum(ds[at_upper, g] / p[at_upper]) - np.sum(ds[at_lower, g] / p[at_lower])
        )
    return nll, np.concatenate([grad_w, grad_t])
