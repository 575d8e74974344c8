"""Property tests for localjudge.scoring.

Expected values are computed independently with exact ``fractions.Fraction`` arithmetic and plain
loops, never by calling the function under test a second way.
"""

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from localjudge.scoring import (
    LEVEL_WEIGHTS,
    RELEVANCE_LEVELS,
    RelevancePenalties,
    position_score,
    recall_score,
    relevance_score,
)

TOL = 1e-9

# Exact weights, written out independently of LEVEL_WEIGHTS.
EXACT_WEIGHT = {
    "high": Fraction(1),
    "medium": Fraction(7, 10),
    "low": Fraction(3, 10),
    "none": Fraction(0),
}

flag = st.one_of(st.booleans(), st.integers(min_value=0, max_value=1))
flags = st.lists(flag, max_size=30)
nonempty_flags = st.lists(flag, min_size=1, max_size=30)
scales = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)
level = st.sampled_from(RELEVANCE_LEVELS)
penalty_value = st.floats(min_value=0.0, max_value=2.0, allow_nan=False, allow_infinity=False)
penalties_st = st.builds(
    RelevancePenalties,
    unused_high=penalty_value,
    missing_per_item=penalty_value,
    max_missing=penalty_value,
)
missing_st = st.integers(min_value=0, max_value=20)


@st.composite
def relevance_inputs(draw, min_size=1, max_size=20):
    levels = draw(st.lists(level, min_size=min_size, max_size=max_size))
    used = draw(st.lists(st.booleans(), min_size=len(levels), max_size=len(levels)))
    return levels, used


def harmonic(n):
    return sum((Fraction(1, i + 1) for i in range(n)), Fraction(0))


def exact_position(values):
    n = len(values)
    if n == 0:
        return Fraction(0)
    numerator = sum((Fraction(1, i + 1) for i, v in enumerate(values) if v), Fraction(0))
    return numerator / harmonic(n)


def exact_relevance(levels, used, missing, penalties, scale):
    base = sum((EXACT_WEIGHT[lv] for lv in levels), Fraction(0)) / len(levels)
    unused_high = 0
    for lv, u in zip(levels, used, strict=True):
        if lv == "high" and not u:
            unused_high += 1
    usage = Fraction(penalties.unused_high) * unused_high
    missing_penalty = min(
        Fraction(penalties.missing_per_item) * missing, Fraction(penalties.max_missing)
    )
    return Fraction(scale) * max(Fraction(0), base - usage - missing_penalty)


# ----------------------------------------------------------------------------- recall


@given(nonempty_flags)
def test_recall_in_unit_interval(values):
    assert 0.0 <= recall_score(values) <= 1.0


@given(nonempty_flags)
def test_recall_is_mean_of_flags(values):
    supported = 0
    for v in values:
        if v:
            supported += 1
    expected = Fraction(supported, len(values))
    assert recall_score(values) == pytest.approx(float(expected), abs=TOL)


@given(st.data(), nonempty_flags)
def test_recall_order_invariant(data, values):
    shuffled = data.draw(st.permutations(values))
    assert recall_score(shuffled) == recall_score(values)


@given(st.data(), nonempty_flags)
def test_recall_adding_supported_never_lowers(data, values):
    at = data.draw(st.integers(min_value=0, max_value=len(values)))
    more = [*values[:at], True, *values[at:]]
    assert recall_score(more) >= recall_score(values)


@given(st.data(), nonempty_flags)
def test_recall_adding_unsupported_never_raises(data, values):
    at = data.draw(st.integers(min_value=0, max_value=len(values)))
    more = [*values[:at], 0, *values[at:]]
    assert recall_score(more) <= recall_score(values)


def test_recall_empty_is_nan():
    assert math.isnan(recall_score([]))


# ----------------------------------------------------------------------------- position


@given(flags, scales)
def test_position_in_range(values, scale):
    assert 0.0 <= position_score(values, scale) <= scale


@given(flags, scales)
def test_position_matches_exact_formula(values, scale):
    expected = Fraction(scale) * exact_position(values)
    assert position_score(values, scale) == pytest.approx(float(expected), abs=TOL * scale)


@given(st.integers(min_value=1, max_value=40), scales)
def test_position_all_relevant_is_scale(n, scale):
    assert position_score([1] * n, scale) == pytest.approx(scale, abs=TOL * scale)


@given(st.integers(min_value=0, max_value=40), scales)
def test_position_none_relevant_is_zero(n, scale):
    assert position_score([False] * n, scale) == 0.0


@given(st.data(), st.integers(min_value=1, max_value=40))
def test_position_denominator_is_harmonic_number(data, n):
    i = data.draw(st.integers(min_value=0, max_value=n - 1))
    values = [0] * n
    values[i] = 1
    expected = Fraction(1, i + 1) / harmonic(n)
    assert position_score(values) == pytest.approx(float(expected), abs=TOL)


@given(st.data(), st.integers(min_value=2, max_value=30), scales)
def test_position_moving_relevance_up_never_lowers(data, n, scale):
    values = data.draw(st.lists(flag, min_size=n, max_size=n))
    i = data.draw(st.integers(min_value=0, max_value=n - 2))
    j = data.draw(st.integers(min_value=i + 1, max_value=n - 1))
    values[i], values[j] = 0, 1  # irrelevant piece at i sits above a relevant one at j
    swapped = list(values)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    assert position_score(swapped, scale) >= position_score(values, scale)
    assert exact_position(swapped) > exact_position(values)  # the swap is a real improvement


@given(flags, scales)
def test_position_linear_in_scale(values, scale):
    unit = position_score(values)
    assert position_score(values, scale) == pytest.approx(scale * unit, abs=TOL * scale)
    assert position_score(values, 2 * scale) == pytest.approx(
        2 * position_score(values, scale), abs=TOL * scale
    )


# ----------------------------------------------------------------------------- relevance


@given(relevance_inputs(), missing_st, penalties_st, scales)
def test_relevance_in_range_and_never_negative(inputs, missing, penalties, scale):
    levels, used = inputs
    score = relevance_score(levels, used, missing, penalties, scale)
    assert 0.0 <= score <= scale


@given(relevance_inputs(), missing_st, penalties_st, scales)
def test_relevance_matches_exact_formula(inputs, missing, penalties, scale):
    levels, used = inputs
    expected = exact_relevance(levels, used, missing, penalties, scale)
    score = relevance_score(levels, used, missing, penalties, scale)
    assert score == pytest.approx(float(expected), abs=TOL * scale)


@given(relevance_inputs(), missing_st, scales)
def test_relevance_zero_penalties_is_base_times_scale(inputs, missing, scale):
    levels, used = inputs
    zero = RelevancePenalties(unused_high=0.0, missing_per_item=0.0, max_missing=0.0)
    total = Fraction(0)
    for lv in levels:
        total += EXACT_WEIGHT[lv]
    expected = Fraction(scale) * total / len(levels)
    assert relevance_score(levels, used, missing, zero, scale) == pytest.approx(
        float(expected), abs=TOL * scale
    )


@st.composite
def raised_level(draw):
    levels, used = draw(relevance_inputs())
    i = draw(st.integers(min_value=0, max_value=len(levels) - 1))
    rank = RELEVANCE_LEVELS.index(levels[i])
    assume(rank > 0)  # already "high": nothing to raise
    higher = draw(st.sampled_from(RELEVANCE_LEVELS[:rank]))
    raised = list(levels)
    raised[i] = higher
    return levels, raised, used, i


@given(raised_level(), missing_st, penalty_value, penalty_value, scales)
def test_relevance_raising_level_never_lowers_without_usage_penalty(
    case, missing, per_item, cap, scale
):
    levels, raised, used, _ = case
    penalties = RelevancePenalties(unused_high=0.0, missing_per_item=per_item, max_missing=cap)
    before = relevance_score(levels, used, missing, penalties, scale)
    assert relevance_score(raised, used, missing, penalties, scale) >= before


@given(raised_level(), missing_st, penalties_st, scales)
def test_relevance_raising_a_used_piece_never_lowers(case, missing, penalties, scale):
    levels, raised, used, i = case
    used = list(used)
    used[i] = True
    before = relevance_score(levels, used, missing, penalties, scale)
    assert relevance_score(raised, used, missing, penalties, scale) >= before


@given(st.data(), relevance_inputs(), missing_st, penalties_st, scales)
def test_relevance_using_an_unused_high_piece_never_lowers(data, inputs, missing, penalties, scale):
    levels, used = inputs
    candidates = [
        i for i, (lv, u) in enumerate(zip(levels, used, strict=True)) if lv == "high" and not u
    ]
    assume(candidates)
    i = data.draw(st.sampled_from(candidates))
    now_used = list(used)
    now_used[i] = True
    before = relevance_score(levels, used, missing, penalties, scale)
    assert relevance_score(levels, now_used, missing, penalties, scale) >= before


@given(st.data(), relevance_inputs(), missing_st, penalties_st, scales)
def test_relevance_usage_of_non_high_pieces_is_irrelevant(data, inputs, missing, penalties, scale):
    levels, used = inputs
    candidates = [i for i, lv in enumerate(levels) if lv != "high"]
    assume(candidates)
    i = data.draw(st.sampled_from(candidates))
    flipped = list(used)
    flipped[i] = not flipped[i]
    assert relevance_score(levels, flipped, missing, penalties, scale) == relevance_score(
        levels, used, missing, penalties, scale
    )


@given(relevance_inputs(), penalties_st, scales, missing_st, st.integers(0, 50))
def test_relevance_missing_penalty_saturates(inputs, penalties, scale, count, extra):
    levels, used = inputs
    assume(Fraction(penalties.missing_per_item) * count >= Fraction(penalties.max_missing))
    at_cap = relevance_score(levels, used, count, penalties, scale)
    assert relevance_score(levels, used, count + extra, penalties, scale) == at_cap


@given(relevance_inputs(), penalties_st, scales, missing_st)
def test_relevance_more_missing_never_raises(inputs, penalties, scale, count):
    levels, used = inputs
    fewer = relevance_score(levels, used, count, penalties, scale)
    assert relevance_score(levels, used, count + 1, penalties, scale) <= fewer


def test_relevance_missing_saturation_defaults():
    # 0.15 * 4 = 0.6 >= 0.5: from 4 missing items on, the penalty stays at 0.5.
    scores = [relevance_score(["high"], [True], k) for k in range(8)]
    assert scores[:4] == pytest.approx([1.0, 0.85, 0.70, 0.55], abs=TOL)
    assert all(s == pytest.approx(0.5, abs=TOL) for s in scores[4:])


def test_level_weights_agree_with_exact_weights():
    assert set(LEVEL_WEIGHTS) == set(RELEVANCE_LEVELS) == set(EXACT_WEIGHT)
    for name, weight in EXACT_WEIGHT.items():
        assert LEVEL_WEIGHTS[name] == pytest.approx(float(weight), abs=TOL)


# ----------------------------------------------------------------------------- invalid inputs

bad_flag = st.one_of(
    st.integers().filter(lambda v: v not in (0, 1)),
    st.floats(),
    st.text(max_size=3),
    st.none(),
)
bad_scale = st.one_of(
    st.floats(max_value=0.0),  # includes 0.0, -0.0 and -inf
    st.just(math.nan),
    st.just(math.inf),
    st.integers(max_value=0),
)


@st.composite
def flags_with_bad(draw):
    values = draw(flags)
    at = draw(st.integers(min_value=0, max_value=len(values)))
    return [*values[:at], draw(bad_flag), *values[at:]], at


@given(flags_with_bad())
def test_recall_rejects_non_flag(case):
    values, at = case
    with pytest.raises(ValueError, match=rf"attributed\[{at}\] must be 0/1 or bool"):
        recall_score(values)


@given(flags_with_bad())
def test_position_rejects_non_flag(case):
    values, at = case
    with pytest.raises(ValueError, match=rf"relevant\[{at}\] must be 0/1 or bool"):
        position_score(values)


@given(flags, bad_scale)
def test_position_rejects_bad_scale(values, scale):
    with pytest.raises(ValueError, match="scale must be"):
        position_score(values, scale)


@given(relevance_inputs(), bad_scale)
def test_relevance_rejects_bad_scale(inputs, scale):
    levels, used = inputs
    with pytest.raises(ValueError, match="scale must be"):
        relevance_score(levels, used, 0, scale=scale)


@given(
    st.lists(level, min_size=1, max_size=10),
    st.lists(st.booleans(), max_size=10),
)
def test_relevance_rejects_length_mismatch(levels, used):
    assume(len(levels) != len(used))
    with pytest.raises(ValueError, match="differ in length"):
        relevance_score(levels, used, 0)


@given(relevance_inputs(), st.data())
def test_relevance_rejects_unknown_level(inputs, data):
    levels, used = inputs
    bad = data.draw(st.text(max_size=8).filter(lambda s: s not in LEVEL_WEIGHTS))
    at = data.draw(st.integers(min_value=0, max_value=len(levels) - 1))
    levels = list(levels)
    levels[at] = bad
    with pytest.raises(ValueError, match=rf"unknown relevance level .* at index {at}"):
        relevance_score(levels, used, 0)


@given(relevance_inputs(), st.data())
def test_relevance_rejects_bad_used_flag(inputs, data):
    levels, used = inputs
    at = data.draw(st.integers(min_value=0, max_value=len(used) - 1))
    used = list(used)
    used[at] = data.draw(bad_flag)
    with pytest.raises(ValueError, match=rf"used\[{at}\] must be 0/1 or bool"):
        relevance_score(levels, used, 0)


@given(relevance_inputs(), st.integers(max_value=-1))
def test_relevance_rejects_negative_missing(inputs, missing):
    levels, used = inputs
    with pytest.raises(ValueError, match="missing must be a non-negative int"):
        relevance_score(levels, used, missing)


@given(
    st.sampled_from(["unused_high", "missing_per_item", "max_missing"]),
    st.floats(max_value=-1e-300, allow_nan=False),
)
def test_penalties_reject_negative(field, value):
    with pytest.raises(ValueError, match=rf"penalty {field} must be"):
        RelevancePenalties(**{field: value})


@settings(deadline=None)
@given(
    st.sampled_from(["unused_high", "missing_per_item", "max_missing"]),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
def test_penalties_reject_non_finite(field, value):
    with pytest.raises(ValueError, match=rf"penalty {field} must be"):
        RelevancePenalties(**{field: value})
