"""Cut-offs: reading them, fitting them on labels (pure), and the held-out check."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from localjudge.judge.cutoffs import Cutoffs
from localjudge.metrics.asks import Decision, hard_value
from localjudge.stats.cutoffs_fit import (
    MAX_EXCESS_SHARE,
    Observation,
    agreement,
    fit,
    hard,
    split_groups,
    two_fold,
)

YES_NO = Decision("recall.supported", "supported", ("yes", "no"))
GRADE = Decision("relevance.grade", "grade", (0, 1, 2, 3))


def binary(n: int = 200, seed: int = 0, shift: float = 0.15) -> list[Observation]:
    """A judge that says yes too rarely: P(yes) low for everything, higher for the positives."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        human = int(rng.integers(0, 2))
        soft = float(np.clip(0.05 + shift * human + rng.normal(0, 0.05), 0, 1))
        out.append(Observation(f"g{i % 40}", soft, int(soft >= 0.5), human))
    return out


def graded(n: int = 400, seed: int = 1) -> list[Observation]:
    """A judge whose expected grade piles up in the middle but follows the people's order."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        human = int(rng.integers(0, 4))
        soft = float(np.clip(1.2 + 0.25 * human + rng.normal(0, 0.15), 0, 3))
        out.append(Observation(f"q{i % 25}", soft, round(soft), human))
    return out


def test_cutoffs_read_from_json_and_back():
    cuts = Cutoffs.from_json({"recall.supported": 0.2, "relevance.grade": [0.5, 1.5, 2.5]}, "x")
    assert cuts.values == {"recall.supported": (0.2,), "relevance.grade": (0.5, 1.5, 2.5)}
    assert cuts.as_json() == {"recall.supported": 0.2, "relevance.grade": [0.5, 1.5, 2.5]}
    assert cuts.record() == {"cutoffs": cuts.as_json(), "cutoffs_source": "x"}
    assert not Cutoffs()
    assert cuts
    merged = cuts.merged(Cutoffs.from_json({"recall.supported": 0.4}, "y"))
    assert merged.values["recall.supported"] == (0.4,)
    assert merged.values["relevance.grade"] == (0.5, 1.5, 2.5)
    assert merged.source == "x + y"


@pytest.mark.parametrize(
    "raw",
    [{"k": "high"}, {"k": float("nan")}, {"k": [2.0, 1.0]}, {"k": []}, {"k": None}],
)
def test_bad_cutoffs_are_refused_with_the_kind(raw):
    with pytest.raises(ValueError, match="'k'"):
        Cutoffs.from_json(raw)


def test_hard_value_against_cutoffs():
    assert hard_value(YES_NO, 0.3, "no") == "no"  # no cut-off: the judge's choice
    cuts = Cutoffs.from_json({"recall.supported": 0.3})
    assert hard_value(YES_NO, 0.3, "no", cuts) == "yes"  # at the cut-off: yes
    assert hard_value(YES_NO, 0.29, "yes", cuts) == "no"
    grade = Cutoffs.from_json({"relevance.grade": [0.5, 1.5, 2.5]})
    assert [hard_value(GRADE, e, 0, grade) for e in (0.4, 0.5, 1.6, 2.5, 3.0)] == [0, 1, 2, 3, 3]


def test_a_binary_fit_finds_the_cutoff_the_argmax_misses():
    obs = binary()
    before = agreement(obs, None, graded=False)
    cuts = fit(obs, graded=False)
    after = agreement(obs, cuts, graded=False)
    assert before["kappa"]["value"] == pytest.approx(0.0)  # it never says yes
    assert 0.05 < cuts[0] < 0.25
    assert after["kappa"]["value"] > 0.7
    assert after["balanced_accuracy"]["value"] > 0.85
    low, high = after["kappa"]["ci95"]
    assert low <= after["kappa"]["value"] <= high


def test_balanced_accuracy_objective_on_unbalanced_labels():
    obs = [o for o in binary(400) if o.human == 1 or o.soft < 0.08]
    cuts = fit(obs, graded=False, objective="balanced_accuracy")
    judged = hard(obs, cuts)
    pairs = list(zip(judged, (o.human for o in obs), strict=True))
    rates = [np.mean([j == h for j, h in pairs if h == c]) for c in (0, 1)]
    assert min(rates) > 0.8


def test_statistics_match_scikit_learn():
    obs = graded()
    cuts = fit(obs, graded=True)
    figures = agreement(obs, cuts, graded=True)
    judged = hard(obs, cuts)
    humans = [o.human for o in obs]
    expected = cohen_kappa_score(humans, judged, weights="quadratic", labels=[0, 1, 2, 3])
    assert figures["qwk"]["value"] == pytest.approx(expected)
    relevant = cohen_kappa_score([h >= 2 for h in humans], [j >= 2 for j in judged])
    assert figures["kappa_relevant"]["value"] == pytest.approx(relevant)
    obs2 = binary()
    auc = roc_auc_score([o.human for o in obs2], [o.soft for o in obs2])
    assert agreement(obs2, None, graded=False)["auc"]["value"] == pytest.approx(auc)


def test_graded_cutoffs_ascend_beat_the_argmax_and_keep_shares_near_the_peoples():
    obs = graded()
    cuts = fit(obs, graded=True)
    assert list(cuts) == sorted(cuts)
    figures = agreement(obs, cuts, graded=True)
    assert figures["qwk"]["value"] > agreement(obs, None, graded=True)["qwk"]["value"] + 0.2
    for judge, people in zip(figures["judge_shares"], figures["human_shares"], strict=True):
        assert judge <= people + MAX_EXCESS_SHARE + 1e-9


def test_two_fold_fits_on_one_half_and_measures_on_the_other():
    obs = binary()
    first = split_groups([o.group for o in obs])
    assert split_groups([o.group for o in reversed(obs)]) == first  # by name, not order
    assert len(first) == 20
    report = two_fold(obs, graded=False)
    assert len(report["folds"]) == 2
    for fold, measured in zip(report["folds"], (False, True), strict=True):
        held = [o for o in obs if (o.group in first) == measured]
        assert fold["fitted"]["n"] == len(held)
        assert fold["fitted"]["kappa"]["value"] == pytest.approx(
            agreement(held, fold["cutoffs"], graded=False)["kappa"]["value"]
        )
    kappas = [f["fitted"]["kappa"]["value"] for f in report["folds"]]
    assert report["mean"]["fitted"]["kappa"] == pytest.approx(sum(kappas) / 2)
    assert report["mean"]["fitted"]["kappa"] > report["mean"]["argmax"]["kappa"]


def test_fitting_nothing_is_an_error():
    with pytest.raises(ValueError, match="no labelled decision"):
        fit([], graded=False)
