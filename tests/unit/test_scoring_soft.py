"""The soft scores: each metric's formula in expectation over the judge's probabilities."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localjudge.scoring import (
    LEVEL_WEIGHTS,
    RELEVANCE_LEVELS,
    RelevancePenalties,
    position_score,
    recall_score,
    relevance_score,
    soft_position_score,
    soft_recall_score,
    soft_relevance_score,
)

flags = st.lists(st.booleans(), min_size=1, max_size=12)
probabilities = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12)
scales = st.floats(0.1, 10.0)


@given(flags)
def test_certain_recall_is_the_hard_score(attributed):
    assert soft_recall_score([float(a) for a in attributed]) == recall_score(attributed)


@given(flags, scales)
def test_certain_position_is_the_hard_score(relevant, scale):
    soft = soft_position_score([float(r) for r in relevant], scale)
    assert soft == pytest.approx(position_score(relevant, scale), abs=1e-12)


@given(
    st.lists(st.tuples(st.sampled_from(RELEVANCE_LEVELS), st.booleans()), min_size=1, max_size=8),
    st.integers(0, 5),
    scales,
)
def test_certain_relevance_is_the_hard_score(pieces, missing, scale):
    levels = [lv for lv, _ in pieces]
    used = [u for _, u in pieces]
    dists = [{lv: 1.0 if lv == level else 0.0 for lv in RELEVANCE_LEVELS} for level in levels]
    soft = soft_relevance_score(dists, [float(u) for u in used], missing, scale=scale)
    assert soft == pytest.approx(relevance_score(levels, used, missing, scale=scale), abs=1e-12)


@given(probabilities, scales)
def test_soft_position_is_bounded_and_monotone(p, scale):
    value = soft_position_score(p, scale)
    assert 0.0 <= value <= scale + 1e-12
    higher = [min(1.0, q + 0.25) for q in p]
    assert soft_position_score(higher, scale) >= value - 1e-12


@given(probabilities)
def test_soft_recall_is_the_mean_probability(p):
    assert soft_recall_score(p) == pytest.approx(math.fsum(p) / len(p))


def test_soft_relevance_by_hand():
    # piece 0: high 0.5 / medium 0.5, used with p 0.4; piece 1: none for sure, used 0
    dists = [{"high": 0.5, "medium": 0.5}, {"none": 1.0}]
    # E[w] = (0.5 * 1.0 + 0.5 * 0.7, 0) -> base 0.425; usage 0.1 * 0.5 * (1 - 0.4) = 0.03;
    # one missing item: 0.15 -> 0.425 - 0.03 - 0.15 = 0.245
    assert soft_relevance_score(dists, [0.4, 0.0], 1) == pytest.approx(0.245)
    penalties = RelevancePenalties(unused_high=0.0, missing_per_item=0.0)
    assert soft_relevance_score(dists, [0.4, 0.0], 1, penalties, scale=2.0) == pytest.approx(
        2 * 0.425
    )
    assert LEVEL_WEIGHTS["medium"] == 0.7


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: soft_recall_score([1.5]), "probability"),
        (lambda: soft_position_score([-0.1]), "probability"),
        (lambda: soft_position_score([0.5], scale=0), "scale"),
        (lambda: soft_relevance_score([], [], 0), "must not be empty"),
        (lambda: soft_relevance_score([{"high": 1.0}], [0.5, 0.5], 0), "differ in length"),
        (lambda: soft_relevance_score([{"great": 1.0}], [0.5], 0), "unknown relevance level"),
        (lambda: soft_relevance_score([{"high": 0.5}], [0.5], 0), "must sum to 1"),
        (lambda: soft_relevance_score([{"high": 1.0}], [0.5], -1), "missing"),
    ],
)
def test_soft_scores_refuse_bad_arguments(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_no_statements_is_nan_and_no_pieces_is_zero():
    assert math.isnan(soft_recall_score([]))
    assert soft_position_score([]) == 0.0
