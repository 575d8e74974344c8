"""Honest means from an imperfect judge: prediction-powered inference and the isotonic map.

A judge's mean score carries the judge's bias, and its bootstrap interval says nothing about
that bias. With human labels on a few items that the judge scored too, prediction-powered
inference (Angelopoulos et al., Science 2023) corrects the judge's mean on every item by the
judge's error on the labelled ones, and gives an interval for the *human-scale* mean::

    estimate = mean(lam * judge[all]) + mean(human[labelled] - lam * judge[labelled])

``lam`` is PPI++'s power tuning (Angelopoulos, Duchi & Zrnic 2023): the weight that minimises the
estimate's variance, clipped to [0, 1]. ``lam = 1`` is plain PPI, ``lam = 0`` the classical
interval of the labelled items alone, so a useless judge costs at most the labels' own interval.
The interval is the normal one, ``estimate +- z * sqrt(var(lam * judge[all]) / N +
var(human - lam * judge)[labelled] / n)``. These are ``ppi_py.ppi_mean_ci``'s formulas (its
default, ``lam`` estimated and clipped); the tests check both against that library.

That interval is for the mean of the *population* the items come from: it counts the judge's
spread over the N items, not the human scores' own spread among exactly those N. For the human
mean of exactly the data's items (what a user who labels a sample of *these* logs asks), the
error is ``mean(r[labelled]) - mean(r[data])`` with ``r = human - lam * judge``, whose variance
is ``S^2 * (1/n + 1/N)``, S^2 the variance of r (the difference of two means of one population,
or of the two parts of one data set split at random). ``data_ci95`` is that interval, around the
same estimate, with S^2 estimated on the labelled items (``ddof=1``) and Student's t quantile
for n - 1 degrees of freedom, as for any mean whose variance is estimated from n items. With N
much larger than n the two intervals agree; with a small data set the population interval is
too narrow for its items' own mean (the coverage benchmark shows it), and ``data_ci95`` is the
honest one.

:func:`fit_isotonic` is the item-level counterpart: an isotonic map (scikit-learn's
``IsotonicRegression``) from judge score to human score fitted on the labelled items.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["PPIEstimate", "fit_isotonic", "ppi_mean"]


@dataclass(frozen=True)
class PPIEstimate:
    """The prediction-powered estimate of a metric's human-scale mean."""

    #: the estimate of the mean the human labels' formula would give over all items
    estimate: float
    #: its interval (``confidence``, normal) for the population's mean, clipped to [0, 1]
    ci95: list[float]
    #: the interval for the human mean of exactly the unlabelled items (see the module's text)
    data_ci95: list[float]
    #: the power-tuning weight used (1: plain PPI; 0: the labelled items alone)
    lam: float
    n_labelled: int
    n_unlabelled: int
    #: mean judge score minus mean human score on the labelled items
    judge_bias: float
    #: the classical interval of the human mean from the labelled items alone (``lam = 0``)
    labelled_ci95: list[float]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ppi_mean(
    human: Sequence[float],
    judge_labelled: Sequence[float],
    judge_unlabelled: Sequence[float],
    *,
    confidence: float = 0.95,
    lam: float | None = None,
) -> PPIEstimate | None:
    """PPI++ for a mean: ``human`` and ``judge_labelled`` pair up item by item;
    ``judge_unlabelled`` holds the judge's scores on the items the estimate is about.

    ``lam`` None tunes it (PPI++); give 1.0 for plain PPI. None with fewer than two labelled
    items or no unlabelled one.
    """
    from scipy.stats import norm, t  # noqa: PLC0415 (scipy's import is slow; only here)

    y = np.asarray(human, dtype=float)
    f = np.asarray(judge_labelled, dtype=float)
    fu = np.asarray(judge_unlabelled, dtype=float)
    if y.shape != f.shape:
        raise ValueError("human and judge_labelled must pair up item by item")
    n, big_n = len(y), len(fu)
    if n < 2 or big_n < 1:
        return None
    if lam is None:
        lam = _tuned_lambda(y, f, fu)
    estimate = float((lam * fu).mean() + (y - lam * f).mean())
    se = float(np.sqrt((lam * fu).std() ** 2 / big_n + (y - lam * f).std() ** 2 / n))
    data_se = float(np.sqrt((y - lam * f).var(ddof=1) * (1 / n + 1 / big_n)))
    z = float(norm.ppf(1 - (1 - confidence) / 2))
    labelled_se = float(y.std() / np.sqrt(n))
    return PPIEstimate(
        estimate=estimate,
        ci95=_clipped(estimate, z * se),
        data_ci95=_clipped(estimate, float(t.ppf(1 - (1 - confidence) / 2, n - 1)) * data_se),
        lam=float(lam),
        n_labelled=n,
        n_unlabelled=big_n,
        judge_bias=float(f.mean() - y.mean()),
        labelled_ci95=_clipped(float(y.mean()), z * labelled_se),
    )


def _tuned_lambda(y: np.ndarray, f: np.ndarray, fu: np.ndarray) -> float:
    """The variance-minimising weight, clipped to [0, 1]; 0 when the judge's scores are constant
    (they then carry no information)."""
    n, big_n = len(y), len(fu)
    cov = float(((y - y.mean()) * (f - f.mean())).mean())
    var = float(np.concatenate([f, fu]).var(ddof=1))
    if var <= 0.0 or not np.isfinite(var):
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def _clipped(centre: float, half: float) -> list[float]:
    return [max(0.0, centre - half), min(1.0, centre + half)]


def fit_isotonic(judge: Sequence[float], human: Sequence[float]) -> Callable[[float], float] | None:
    """An increasing map from judge score to human score, fitted on labelled pairs (isotonic
    regression, clipped at the ends). None with fewer than two distinct judge scores."""
    if len(set(judge)) < 2:
        return None
    from sklearn.isotonic import IsotonicRegression  # noqa: PLC0415 (heavy; only here)

    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    model.fit(np.asarray(judge, dtype=float), np.asarray(human, dtype=float))

    def mapped(score: float) -> float:
        return float(model.predict(np.asarray([score], dtype=float))[0])

    return mapped
