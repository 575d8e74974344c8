"""Prediction-powered means and calibration, checked against ppi-python and by simulation."""

from __future__ import annotations

import numpy as np
import ppi_py  # the reference implementation, in [dev]
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as scipy_t

from localjudge.stats.ppi import fit_isotonic, ppi_mean

scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def _library(y, f, fu, lam=None):
    low, high = ppi_py.ppi_mean_ci(
        np.asarray(y), np.asarray(f), np.asarray(fu), alpha=0.05, lam=lam
    )
    point = ppi_py.ppi_mean_pointestimate(np.asarray(y), np.asarray(f), np.asarray(fu), lam=lam)
    return float(np.ravel(point)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(st.tuples(scores, scores), min_size=3, max_size=40),
    unlabelled=st.lists(scores, min_size=2, max_size=80),
    lam=st.sampled_from([None, 1.0, 0.5]),
)
def test_matches_ppi_python(pairs, unlabelled, lam):
    y = [h for h, _ in pairs]
    f = [j for _, j in pairs]
    if lam is None and np.var(np.concatenate([f, unlabelled])) < 1e-12:
        # the library divides by a zero (or underflowing) variance here; ours falls back to
        # lam = 0 (tested below)
        return
    ours = ppi_mean(y, f, unlabelled, lam=lam)
    assert ours is not None
    point, low, high = _library(y, f, unlabelled, lam)
    assert ours.estimate == pytest.approx(point, abs=1e-9)
    assert ours.ci95[0] == pytest.approx(max(0.0, low), abs=1e-9)
    assert ours.ci95[1] == pytest.approx(min(1.0, high), abs=1e-9)
    assert 0.0 <= ours.lam <= 1.0
    # the data interval: Student's t (n - 1 df) times sqrt(S^2 (1/n + 1/N)), S^2 the variance
    # (ddof 1) of human - lam * judge on the labelled items, around the same estimate
    n, big_n = len(y), len(unlabelled)
    r = np.asarray(y) - ours.lam * np.asarray(f)
    half = scipy_t.ppf(0.975, n - 1) * np.sqrt(r.var(ddof=1) * (1 / n + 1 / big_n))
    assert ours.data_ci95[0] == pytest.approx(max(0.0, point - half), abs=1e-9)
    assert ours.data_ci95[1] == pytest.approx(min(1.0, point + half), abs=1e-9)


def test_constant_judge_falls_back_to_the_labels_alone():
    y = [0.0, 1.0, 1.0, 0.0, 1.0]
    est = ppi_mean(y, [0.5] * 5, [0.5] * 20)
    assert est is not None
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(np.mean(y))
    assert est.ci95 == pytest.approx(est.labelled_ci95)
    # lam = 0: the human mean of the N items, from n labels of the same population
    y40 = [0.0, 1.0, 1.0, 0.0, 1.0] * 8
    est40 = ppi_mean(y40, [0.5] * 40, [0.5] * 60)
    assert est40 is not None
    half = scipy_t.ppf(0.975, 39) * np.std(y40, ddof=1) * np.sqrt(1 / 40 + 1 / 60)
    assert est40.data_ci95 == pytest.approx([0.6 - half, 0.6 + half])


def test_too_few_labels_give_nothing():
    assert ppi_mean([1.0], [1.0], [0.5, 0.5]) is None
    assert ppi_mean([1.0, 0.0], [1.0, 0.0], []) is None
    with pytest.raises(ValueError):
        ppi_mean([1.0, 0.0], [1.0], [0.5])


def test_bias_is_reported_and_corrected():
    rng = np.random.default_rng(1)
    human = rng.uniform(0, 1, 2000)
    judge = np.clip(human + 0.3 + rng.normal(0, 0.05, 2000), 0, 1)  # a judge that overrates
    est = ppi_mean(human[:100], judge[:100], judge[100:])
    assert est is not None
    assert est.judge_bias > 0.2
    assert est.ci95[0] <= human[100:].mean() <= est.ci95[1]
    assert not judge[100:].mean() <= est.ci95[1]  # the judge's own mean lies outside
    # an informative judge narrows the interval of the labels alone
    assert est.ci95[1] - est.ci95[0] < est.labelled_ci95[1] - est.labelled_ci95[0]


def test_coverage_near_nominal_for_a_biased_noisy_judge():
    rng = np.random.default_rng(7)
    covered, trials = 0, 400
    for _ in range(trials):
        human = (rng.uniform(0, 1, 600) < 0.4).astype(float)
        judge = np.clip(0.3 + 0.4 * human + rng.normal(0, 0.25, 600), 0, 1)
        est = ppi_mean(human[:50], judge[:50], judge[50:])
        assert est is not None
        covered += est.ci95[0] <= 0.4 <= est.ci95[1]
    assert 0.92 <= covered / trials <= 0.98


def test_data_interval_covers_the_mean_of_a_small_data_set():
    """Labels drawn from the data's own items: the human mean of the other N items is covered by
    ``data_ci95`` near the nominal rate, while the population interval, which ignores those
    items' own spread, is too narrow for it."""
    rng = np.random.default_rng(11)
    n, big_n, trials = 20, 20, 600
    data_hits = population_hits = 0
    for _ in range(trials):
        human = (rng.uniform(0, 1, n + big_n) < 0.4).astype(float)
        judge = np.clip(0.5 + 0.1 * human + rng.normal(0, 0.2, n + big_n), 0, 1)
        est = ppi_mean(human[:n], judge[:n], judge[n:])
        assert est is not None
        truth = human[n:].mean()
        data_hits += est.data_ci95[0] <= truth <= est.data_ci95[1]
        population_hits += est.ci95[0] <= truth <= est.ci95[1]
    assert 0.91 <= data_hits / trials <= 0.98
    assert population_hits / trials < 0.88


def test_calibration_is_monotone_and_fits_the_labels():
    cal = fit_isotonic([0.1, 0.4, 0.6, 0.9], [0.0, 0.2, 0.8, 1.0])
    assert cal is not None
    values = [cal(x) for x in np.linspace(0, 1, 21)]
    assert values == sorted(values)
    assert cal(0.9) == pytest.approx(1.0)
    assert cal(0.1) == pytest.approx(0.0)
    assert fit_isotonic([0.5, 0.5], [0.0, 1.0]) is None
