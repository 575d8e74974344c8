"""Cut-offs: reading them, fitting them on labels (pure), the held-out check and the rule
that decides whether fitted cut-offs are stored."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from localjudge.decisions import (
    KINDS,
    NO_CUTOFFS,
    Cutoffs,
    Provenance,
    hard_value,
    held_out_check,
    neutral,
    soft_value,
)
from localjudge.decisions.fit import (
    MAX_EXCESS_SHARE,
    Observation,
    agreement,
    fit,
    hard_values,
    split_groups,
    two_fold,
)
from localjudge.metrics import instructions
from localjudge.metrics.asks import Decision

YES_NO = Decision("recall.supported", "supported", ("yes", "no"))
GRADE = Decision("relevance.grade", "grade", (0, 1, 2, 3))


def binary(n: int = 200, seed: int = 0, shift: float = 0.15) -> list[Observation]:
    """A judge that says yes too rarely: P(yes) low for everything, higher for the positives."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        human = int(rng.integers(0, 2))
        soft = float(np.clip(0.05 + shift * human + rng.normal(0, 0.05), 0, 1))
        out.append(Observation(f"g{i % 40}", soft, human))
    return out


def graded(n: int = 400, seed: int = 1) -> list[Observation]:
    """A judge whose expected grade piles up in the middle but follows the people's order."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        human = int(rng.integers(0, 4))
        soft = float(np.clip(1.2 + 0.25 * human + rng.normal(0, 0.15), 0, 3))
        out.append(Observation(f"q{i % 25}", soft, human))
    return out


def test_cutoffs_read_from_json_and_back():
    cuts = Cutoffs.from_json({"recall.supported": 0.2, "relevance.grade": [0.5, 1.5, 2.5]}, "x")
    assert cuts.values == {"recall.supported": (0.2,), "relevance.grade": (0.5, 1.5, 2.5)}
    assert cuts.as_json() == {"recall.supported": 0.2, "relevance.grade": [0.5, 1.5, 2.5]}
    assert cuts.record() == {
        "cutoffs": cuts.as_json(),
        "cutoffs_source": {"recall.supported": "x", "relevance.grade": "x"},
    }
    assert not Cutoffs()
    assert cuts
    mine = Provenance("calibrate", "labels.jsonl", "ab" * 32, "2026-12-03")
    merged = cuts.merged(Cutoffs.from_json({"recall.supported": 0.4}, mine))
    assert merged.values["recall.supported"] == (0.4,)
    assert merged.values["relevance.grade"] == (0.5, 1.5, 2.5)
    # each kind keeps its own source; a row records a short reference, never a long string
    assert merged.refs() == {
        "recall.supported": "calibrate:labels.jsonl@abababababab",
        "relevance.grade": "x",
    }
    assert merged.source("recall.supported").sha256 == "ab" * 32
    assert merged.source("relevance.grade").sha256 == ""


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"recall.supported": "high"}, "'recall.supported'"),
        ({"recall.supported": float("nan")}, "'recall.supported'"),
        ({"relevance.grade": [2.0, 1.0, 2.5]}, "'relevance.grade'"),  # descending
        ({"recall.supported": []}, "'recall.supported'"),
        ({"recall.supported": None}, "'recall.supported'"),
        ({"position.relevnt": 0.5}, "'position.relevnt'"),  # unknown kind
        ({"relevance.grade": [1.0, 2.0]}, "'relevance.grade' takes 3"),  # wrong count
        ({"recall.supported": [0.2, 0.4]}, "'recall.supported' takes 1"),
        ({"position.relevant": 1.01}, r"range \[0, 1\]"),  # beyond P(yes)
        ({"relevance.used": -0.1}, r"range \[0, 1\]"),
        ({"relevance.grade": [0.5, 1.5, 3.5]}, r"range \[0, 3\]"),  # beyond the expected grade
    ],
)
def test_bad_cutoffs_are_refused_naming_the_kind(raw, named):
    with pytest.raises(ValueError, match=named):
        Cutoffs.from_json(raw)


def test_every_kind_the_metrics_ask_is_a_known_kind_of_cutoff():
    decisions = [v for v in vars(instructions).values() if isinstance(v, Decision)]
    assert {d.kind for d in decisions} == set(KINDS)
    for d in decisions:
        assert KINDS[d.kind].graded == d.graded
        assert KINDS[d.kind].high == (max(d.values) if d.graded else 1.0)


def test_hard_value_against_cutoffs():
    # no cut-off: the larger probability (never the greedy token against its own probabilities)
    yes_no, grades = NO_CUTOFFS.of(YES_NO.kind), NO_CUTOFFS.of(GRADE.kind)
    assert hard_value(0.3, yes_no) == 0
    assert hard_value(0.5, yes_no) == 1
    assert hard_value(0.51, yes_no) == 1
    assert [hard_value(e, grades) for e in (0.49, 0.5, 1.49, 1.5, 2.6)] == [0, 1, 1, 2, 3]
    cuts = Cutoffs.from_json({"recall.supported": 0.3}).of(YES_NO.kind)
    assert hard_value(0.3, cuts) == 1  # at the cut-off: yes
    assert hard_value(0.29, cuts) == 0
    grade = Cutoffs.from_json({"relevance.grade": [0.5, 1.5, 2.5]}).of(GRADE.kind)
    assert [hard_value(e, grade) for e in (0.4, 0.5, 1.6, 2.5, 3.0)] == [0, 1, 2, 3, 3]
    assert neutral(graded=False) == (0.5,)
    assert hard_values([Observation("g", 0.5, 1), Observation("g", 0.49, 0)], None) == [1, 0]


def test_the_soft_value_is_the_expected_hard_value():
    assert soft_value((0.3, 0.7)) == 0.7  # (P(no), P(yes)): P(yes), exactly
    assert soft_value((0.1, 0.2, 0.3, 0.4)) == pytest.approx(2.0)  # the expected grade


def test_a_binary_fit_finds_the_cutoff_the_argmax_misses():
    obs = binary()
    before = agreement(obs, None, graded=False)
    cuts = fit(obs, graded=False)
    after = agreement(obs, cuts, graded=False)
    assert before["kappa"]["value"] == pytest.approx(0.0)  # P(yes) < 0.5: it never says yes
    assert 0.05 < cuts[0] < 0.25
    assert after["kappa"]["value"] > 0.7
    assert after["balanced_accuracy"]["value"] > 0.85
    low, high = after["kappa"]["ci95"]
    assert low <= after["kappa"]["value"] <= high


def test_balanced_accuracy_objective_on_unbalanced_labels():
    obs = [o for o in binary(400) if o.human == 1 or o.soft < 0.08]
    cuts = fit(obs, graded=False, objective="balanced_accuracy")
    judged = hard_values(obs, cuts)
    pairs = list(zip(judged, (o.human for o in obs), strict=True))
    rates = [np.mean([j == h for j, h in pairs if h == c]) for c in (0, 1)]
    assert min(rates) > 0.8


def test_statistics_match_scikit_learn():
    obs = graded()
    cuts = fit(obs, graded=True)
    figures = agreement(obs, cuts, graded=True)
    judged = hard_values(obs, cuts)
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


def test_a_fitted_cutoff_stays_inside_the_soft_values_range():
    obs = [Observation(f"g{i}", 1.0, i % 2) for i in range(40)]
    obs += [Observation(f"h{i}", 0.9, 0) for i in range(40)]
    assert 0.0 <= fit(obs, graded=False)[0] <= 1.0
    Cutoffs.from_json({"recall.supported": fit(obs, graded=False)[0]})  # a storable value


def test_a_split_with_too_few_groups_is_a_clear_error():
    obs = [Observation("one", 0.1 * (i % 10), i % 2) for i in range(100)]
    with pytest.raises(ValueError, match="1 group"):
        held_out_check(obs, None, graded=False)
    three = [Observation(f"g{i % 3}", o.soft, o.human) for i, o in enumerate(obs)]
    with pytest.raises(ValueError, match="3 group"):
        two_fold(three, graded=False)


def test_the_rule_stores_a_cutoff_that_clearly_wins_held_out():
    check = held_out_check(binary(), None, graded=False)
    assert check.current is not None
    assert check.fitted is not None
    assert check.current == pytest.approx(0.0)  # the neutral cut-off never says yes
    assert check.fitted > 0.7
    assert check.difference == pytest.approx(check.fitted - check.current)
    low, high = check.difference_ci95
    assert 0.0 < low <= check.difference <= high
    assert check.store
    evidence = check.as_json()
    assert (evidence["groups"], evidence["against"]) == (40, "neutral")
    assert (evidence["figure"], evidence["ci95"]) == ("kappa", check.fitted_ci95)


def test_the_rule_compares_with_the_cutoffs_in_use():
    obs = binary()
    good = fit(obs, graded=False)
    check = held_out_check(obs, good, graded=False)  # in use now: already the best cut
    assert check.current_cutoffs == good
    assert check.current >= check.fitted - 0.05
    assert not check.store


def calibrated(n: int, seed: int) -> list[Observation]:
    """A judge whose P(yes) is the true probability: its neutral cut-off (P >= 0.5) is the best cut
    there is, so fitting can only add noise."""
    rng = np.random.default_rng(seed)
    soft = rng.uniform(0, 1, n)
    human = (rng.uniform(0, 1, n) < soft).astype(int)
    return [
        Observation(f"g{i // 2}", float(p), int(h))
        for i, (p, h) in enumerate(zip(soft, human, strict=True))
    ]


def test_the_rule_rarely_ships_noise_where_the_neutral_cutoff_is_best():
    """The old rule (the mean of the two folds above the neutral cut-off by any amount) shipped such
    a judge's cut-off about a quarter of the time; the paired lower bound keeps it rare."""
    runs = [held_out_check(calibrated(106, seed), None, graded=False,
                           objective="balanced_accuracy") for seed in range(30)]  # fmt: skip
    stored = sum(r.store for r in runs)
    old_rule = sum(
        (r.fitted or 0) > (r.current or 0) for r in runs
    )  # a paired point estimate above 0, what a mean-beats-neutral rule looks at
    assert stored <= 3, stored
    assert old_rule > stored  # the point estimate alone is often above 0 on noise


def test_graded_rule_against_the_rounded_expected_grade():
    obs = graded()
    check = held_out_check(obs, None, graded=True, objective="qwk")
    rounded = agreement(obs, None, graded=True)["qwk"]["value"]
    assert check.current == pytest.approx(rounded)
    assert check.store  # the judge piles up in the middle: fitted grades clearly win
