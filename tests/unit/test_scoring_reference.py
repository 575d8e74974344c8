"""The reference numbers of SPEC.md (sections 1-3) and the documented ValueError cases."""

import math

import numpy as np
import pytest

from localjudge.scoring import (
    LEVEL_WEIGHTS,
    RELEVANCE_LEVELS,
    RelevancePenalties,
    position_score,
    recall_score,
    relevance_score,
)

TOL = 1e-4

# --------------------------------------------------------------------------- recall


def test_recall_worked_example():
    # "埃菲尔铁塔位于巴黎。" supported, "他的名字叫汤姆。" not supported.
    assert recall_score([1, 0]) == pytest.approx(0.5, abs=TOL)
    assert recall_score([True, False]) == pytest.approx(0.5, abs=TOL)


def test_recall_empty_is_nan():
    assert math.isnan(recall_score([]))


@pytest.mark.parametrize(
    ("attributed", "expected"),
    [([1], 1.0), ([0], 0.0), ([1, 1, 1], 1.0), ([1, 0, 0], 1 / 3), ([0, 1, 1, 1], 0.75)],
)
def test_recall_fraction(attributed, expected):
    assert recall_score(attributed) == pytest.approx(expected, abs=TOL)


def test_recall_accepts_numpy_flags():
    assert recall_score(np.array([True, False, True, True])) == pytest.approx(0.75, abs=TOL)
    assert recall_score([np.int64(1), np.int64(0)]) == pytest.approx(0.5, abs=TOL)
    assert recall_score([np.bool_(True)]) == 1.0


# --------------------------------------------------------------------------- position

POSITION_REFERENCE = [
    ([1, 1, 1], 1.0),
    ([1, 0, 1], 0.7273),
    ([1, 1, 0], 0.8182),
    ([1, 0, 0], 0.5455),
    ([0, 1, 0], 0.2727),
    ([0, 0, 1], 0.1818),
    ([0, 1, 1], 0.4545),
    ([0, 0, 0], 0.0),
    ([1], 1.0),
    ([0, 1, 1, 0], 0.4),
    ([0, 0, 0, 1], 0.12),
    ([1, 1, 0, 1], 0.84),
]


@pytest.mark.parametrize(("relevant", "expected"), POSITION_REFERENCE)
def test_position_reference(relevant, expected):
    assert position_score(relevant) == pytest.approx(expected, abs=TOL)
    assert position_score([bool(v) for v in relevant]) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize(("relevant", "expected"), POSITION_REFERENCE)
def test_position_reference_scaled(relevant, expected):
    assert position_score(relevant, scale=10) == pytest.approx(10 * expected, abs=10 * TOL)


def test_position_empty_is_zero():
    assert position_score([]) == 0.0
    assert position_score([], scale=5.0) == 0.0


def test_position_all_relevant_is_exactly_scale():
    assert position_score([1] * 7) == 1.0
    assert position_score([True] * 4, scale=2.5) == 2.5


# --------------------------------------------------------------------------- relevance

H, M, L, N = "high", "medium", "low", "none"


def test_relevance_high_none_high():
    score = relevance_score([H, N, H], [True, False, True], 0)
    assert score == pytest.approx(0.6667, abs=TOL)


def test_relevance_three_high_used():
    assert relevance_score([H, H, H], [True, True, True], 0) == pytest.approx(1.0, abs=TOL)


FIVE_LEVELS = [H, H, M, N, H]
FIVE_USED = [True, True, False, False, False]


def test_relevance_unused_high_default_penalties():
    assert relevance_score(FIVE_LEVELS, FIVE_USED, 0) == pytest.approx(0.64, abs=TOL)


def test_relevance_unused_high_custom_penalties():
    penalties = RelevancePenalties(unused_high=0.05, missing_per_item=0.1, max_missing=0.3)
    score = relevance_score(FIVE_LEVELS, FIVE_USED, 0, penalties)
    assert score == pytest.approx(0.69, abs=TOL)
    assert relevance_score(FIVE_LEVELS, FIVE_USED, 0, penalties=penalties) == score


@pytest.mark.parametrize("low_used", [True, False])
@pytest.mark.parametrize("nones_used", [True, False])
def test_relevance_high_low_nones(low_used, nones_used):
    # The SPEC writes (low,·),(none,·): usage of non-high pieces does not matter.
    used = [True, low_used, nones_used, nones_used, nones_used]
    assert relevance_score([H, L, N, N, N], used, 0) == pytest.approx(0.26, abs=TOL)


def test_relevance_level_weights_and_order():
    assert dict(LEVEL_WEIGHTS) == {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}
    assert RELEVANCE_LEVELS == ("high", "medium", "low", "none")


@pytest.mark.parametrize(
    ("missing", "expected"),
    # base 1.0; missing penalty min(0.15 * k, 0.5)
    [(0, 1.0), (1, 0.85), (2, 0.70), (3, 0.55), (4, 0.5), (10, 0.5)],
)
def test_relevance_missing_penalty_is_capped(missing, expected):
    assert relevance_score([H, H], [True, True], missing) == pytest.approx(expected, abs=TOL)


def test_relevance_usage_penalty_is_not_capped_and_floored_at_zero():
    # base 1.0, 10 unused highs: 1.0 - 10 * 0.10 = 0 ; with 0.2 each it would be negative → 0.
    levels, used = [H] * 10, [False] * 10
    assert relevance_score(levels, used, 0) == pytest.approx(0.0, abs=TOL)
    penalties = RelevancePenalties(unused_high=0.2)
    assert relevance_score(levels, used, 0, penalties) == 0.0
    # 6 unused of 10 highs: 1 - 0.6 = 0.4 (not capped at any maximum)
    assert relevance_score(levels, [True] * 4 + [False] * 6, 0) == pytest.approx(0.4, abs=TOL)


def test_relevance_scale():
    assert relevance_score([H, N, H], [True, False, True], 0, scale=3) == pytest.approx(
        2.0, abs=TOL
    )


def test_penalties_defaults_and_frozen():
    p = RelevancePenalties()
    assert (p.unused_high, p.missing_per_item, p.max_missing) == (0.10, 0.15, 0.50)
    with pytest.raises(AttributeError):
        p.unused_high = 0.2  # type: ignore[misc]


# --------------------------------------------------------------------------- ValueError


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([1, 0, 2], r"attributed\[2\] must be 0/1 or bool, got 2"),
        ([-1], r"attributed\[0\] must be 0/1 or bool, got -1"),
        ([1, 0.5], r"attributed\[1\] must be 0/1 or bool, got 0.5"),
        ([1.0], r"attributed\[0\] must be 0/1 or bool, got 1.0"),
        (["1"], r"attributed\[0\] must be 0/1 or bool, got '1'"),
        ([None], r"attributed\[0\] must be 0/1 or bool, got None"),
        ([np.int64(2)], r"attributed\[0\] must be 0/1 or bool"),
        ("10", r"attributed must be a sequence"),
        (None, r"attributed must be a sequence"),
    ],
)
def test_recall_rejects_non_flags(bad, match):
    with pytest.raises(ValueError, match=match):
        recall_score(bad)


@pytest.mark.parametrize(
    ("relevant", "scale", "match"),
    [
        ([1, 2], 1.0, r"relevant\[1\] must be 0/1 or bool, got 2"),
        ([1, 0], 0, r"scale must be > 0, got 0"),
        ([1, 0], -1.5, r"scale must be > 0, got -1.5"),
        ([1, 0], math.nan, r"scale must be finite, got nan"),
        ([1, 0], math.inf, r"scale must be finite, got inf"),
        ([1, 0], "1", r"scale must be a real number"),
        ([1, 0], True, r"scale must be a real number"),
        ([], 0, r"scale must be > 0"),
    ],
)
def test_position_rejects_invalid(relevant, scale, match):
    with pytest.raises(ValueError, match=match):
        position_score(relevant, scale=scale)


@pytest.mark.parametrize(
    ("levels", "used", "missing", "match"),
    [
        ([H, H, N], [True, False], 0, r"levels and used differ in length \(3 vs 2\)"),
        ([H], [True, False], 0, r"levels and used differ in length \(1 vs 2\)"),
        (
            [H, "hgh"],
            [True, True],
            0,
            r"unknown relevance level 'hgh' at index 1; expected one of high, medium, low, none",
        ),
        ([H, "High"], [True, True], 0, r"unknown relevance level 'High' at index 1"),
        ([None], [True], 0, r"unknown relevance level None at index 0"),
        ([], [], 0, r"levels must not be empty"),
        ("high", [True] * 4, 0, r"levels must be a sequence"),
        ([H], [2], 0, r"used\[0\] must be 0/1 or bool, got 2"),
        ([H], [True], -1, r"missing must be a non-negative int"),
        ([H], [True], 1.0, r"missing must be a non-negative int"),
        ([H], [True], True, r"missing must be a non-negative int"),
        ([H], [True], None, r"missing must be a non-negative int"),
    ],
)
def test_relevance_rejects_invalid(levels, used, missing, match):
    with pytest.raises(ValueError, match=match):
        relevance_score(levels, used, missing)


@pytest.mark.parametrize(
    ("scale", "match"),
    [
        (0, r"scale must be > 0, got 0"),
        (-2, r"scale must be > 0, got -2"),
        (math.nan, r"scale must be finite"),
        (-math.inf, r"scale must be finite"),
    ],
)
def test_relevance_rejects_bad_scale(scale, match):
    with pytest.raises(ValueError, match=match):
        relevance_score([H], [True], 0, scale=scale)


def test_relevance_rejects_non_penalties_object():
    with pytest.raises(ValueError, match=r"penalties must be a RelevancePenalties"):
        relevance_score([H], [True], 0, {"unused_high": 0.1})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"unused_high": -0.1}, r"penalty unused_high must be >= 0, got -0.1"),
        ({"missing_per_item": -1}, r"penalty missing_per_item must be >= 0, got -1"),
        ({"max_missing": -0.5}, r"penalty max_missing must be >= 0, got -0.5"),
        ({"unused_high": math.nan}, r"penalty unused_high must be finite"),
        ({"max_missing": math.inf}, r"penalty max_missing must be finite"),
        ({"missing_per_item": "0.1"}, r"penalty missing_per_item must be a real number"),
        ({"unused_high": None}, r"penalty unused_high must be a real number"),
    ],
)
def test_penalties_reject_invalid(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RelevancePenalties(**kwargs)


def test_penalties_accept_zero_and_ints():
    p = RelevancePenalties(unused_high=0, missing_per_item=0, max_missing=0)
    assert (p.unused_high, p.missing_per_item, p.max_missing) == (0.0, 0.0, 0.0)
    assert isinstance(p.unused_high, float)
