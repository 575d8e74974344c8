"""Combinations of readings: the fitted function's probabilities, its stored form, the
cut-offs object carrying it, the fit recovering a known model, and a decision read through it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from localjudge.decisions import Combination, Cutoffs, Provenance, decide, decide_all, readings
from localjudge.decisions.combination_fit import Reads, combined_soft, fit_combination
from localjudge.judge.protocol import Generation, GenerationStats, Reading, SoftDecision
from localjudge.metrics.asks import Ask
from localjudge.metrics.instructions import (
    GRADE,
    RELEVANT,
    baseline_ask,
    passage_ask,
    passage_opening,
)

STATS = GenerationStats(1, 1, 1, 0.0)


def test_a_yes_no_combination_is_a_logistic_function() -> None:
    c = Combination({"question": 2.0, "judged": 0.5}, (-1.0,))
    [p] = c.probs({"question": 1.0, "judged": 2.0}) or ()
    assert p == pytest.approx(1 / (1 + math.exp(-(2.0 + 1.0 - 1.0))))
    assert c.probs({"judged": 2.0}) is None  # a reading it weighs is missing


@given(
    z=st.floats(-50, 50),
    t=st.lists(st.floats(-20, 20), min_size=3, max_size=3).map(sorted),
)
def test_a_graded_combination_gives_a_distribution_over_the_grades(
    z: float, t: list[float]
) -> None:
    probs = Combination({"question": 1.0}, tuple(t)).probs({"question": z})
    assert probs is not None
    assert len(probs) == 4
    assert all(p >= 0 for p in probs)
    assert sum(probs) == pytest.approx(1.0)


def test_a_higher_reading_never_lowers_the_expected_grade() -> None:
    c = Combination({"question": 1.5}, (-1.0, 0.5, 2.0))
    expected = [
        sum(g * p for g, p in enumerate(c.probs({"question": z}) or ())) for z in (-3, 0, 1, 4)
    ]
    assert expected == sorted(expected)


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        ("position.relevant", {"weights": {"question": 1}, "intercepts": [0, 1]}, "1 ascending"),
        ("relevance.grade", {"weights": {"question": 1}, "intercepts": [2, 1, 3]}, "3 ascending"),
        ("relevance.grade", {"weights": {"vibes": 1}, "intercepts": [1, 2, 3]}, "'vibes'"),
        ("position.relevant", {"weights": {"question": math.nan}, "intercepts": [0]}, "finite"),
        ("position.relevant", {"intercepts": [0]}, "'weights'"),
        ("nope.kind", {"weights": {}, "intercepts": []}, "unknown kind"),
        # an earlier release's fit that read a passage against its list: refused, with why
        (
            "position.relevant",
            {"weights": {"judged": 0.1, "question_centred": 2.5}, "intercepts": [0]},
            "'question_centred', a reading this release no longer makes: .*neighbours",
        ),
    ],
)
def test_a_malformed_combination_is_refused(kind: str, data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Combination.from_json(kind, data)


def test_cutoffs_carry_combinations_through_json_merge_and_record() -> None:
    built_in = Cutoffs.from_json(
        {"relevance.grade": [1.0, 1.5, 2.0], "position.relevant": 0.4},
        Provenance("built-in"),
        {"relevance.grade": {"weights": {"question": 2}, "intercepts": [0, 1, 2]}},
    )
    assert built_in.kinds == ["position.relevant", "relevance.grade"]
    record = built_in.record()
    assert record["combinations"]["relevance.grade"]["weights"] == {"question": 2.0}
    assert record["cutoffs_source"]["relevance.grade"] == "built-in"
    # a user's kind replaces the built-in one whole: its cut-offs without the combination
    mine = Cutoffs.from_json({"relevance.grade": [0.5, 1.5, 2.5]}, Provenance("calibrate"))
    merged = built_in.merged(mine)
    assert "relevance.grade" not in merged.combinations
    assert merged.values["relevance.grade"] == (0.5, 1.5, 2.5)
    assert merged.values["position.relevant"] == (0.4,)
    assert not built_in.only({"position.relevant"}).combinations
    assert Cutoffs(combinations=built_in.combinations)  # a combination alone is something


def _yes_no(soft: float, reading: Reading | None) -> Generation[object]:
    decision = SoftDecision("relevant", {'"yes"': soft, '"no"': 1 - soft}, '"yes"')
    value = RELEVANT.schema()(relevant="yes")
    return Generation(value, '{"relevant":"yes"}', STATS, decisions=(decision,), reading=reading)


def _asks() -> list[Ask]:
    opening = passage_opening("what is x?", "x is y.")
    return [baseline_ask("what is x?"), passage_ask(opening, "Q?", RELEVANT, at=0)]


def test_the_question_reading_is_measured_against_the_items_baseline() -> None:
    base = Generation(GRADE.schema()(grade=0), '{"grade":0}', STATS, reading=Reading(-12.0, 4))
    gens = [base, _yes_no(0.9, Reading(-4.0, 4))]
    _, answer = decide_all(_asks(), gens)
    # against the baseline: -1 a token after the passage, -3 after none
    assert answer.readings == {
        "judged": pytest.approx(math.log(9)),
        "question": 2.0,
        "question_alone": -3.0,
    }
    assert answer.value == "yes"
    assert answer.soft == pytest.approx(0.9)
    # the combination decides where the cut-offs hold one: the reading outweighs P(yes)
    combined = Cutoffs(combinations={"position.relevant": Combination({"question": -3.0}, (0.0,))})
    _, answer = decide_all(_asks(), gens, combined)
    assert answer.soft == pytest.approx(1 / (1 + math.exp(6.0)))
    assert answer.value == "no"
    assert answer.probs == {"yes": answer.soft, "no": pytest.approx(1 - answer.soft)}


def _list_asks(n: int) -> list[Ask]:
    asks = [baseline_ask("what is x?")]
    for i in range(n):
        opening = passage_opening("what is x?", f"passage {i}.")
        asks.append(passage_ask(opening, "Q?", RELEVANT, at=i))
    return asks


def _readings(means: list[float], base: float) -> list[dict[str, float]]:
    base_gen = Generation(GRADE.schema()(grade=0), '{"grade":0}', STATS, reading=Reading(base, 1))
    gens = [base_gen, *(_yes_no(0.5, Reading(m * 3, 3)) for m in means)]
    return [dict(a.readings or {}) for a in decide_all(_list_asks(len(means)), gens)[1:]]


def test_a_passage_reads_the_same_alone_and_among_any_neighbours() -> None:
    # each passage against the item's baseline only: the other passages, their number and
    # their order move nothing
    found = _readings([-1.0, -3.0, -5.0], base=-6.0)
    assert [r["question"] for r in found] == pytest.approx([5.0, 3.0, 1.0])
    assert {r["question_alone"] for r in found} == {-6.0}
    assert _readings([-3.0], base=-6.0) == [found[1]]
    assert _readings([-5.0, -1.0], base=-6.0) == [found[2], found[0]]


def test_without_a_baseline_reading_the_call_decides_alone() -> None:
    combined = Cutoffs(combinations={"position.relevant": Combination({"question": 5.0}, (0.0,))})
    answer = decide(_asks()[1], _yes_no(0.2, Reading(-1.0, 2)), combined)
    assert answer.readings == {"judged": pytest.approx(math.log(0.25))}
    assert answer.soft == pytest.approx(0.2)
    assert answer.value == "no"


def test_log_odds_are_clipped() -> None:
    assert readings(False, 1.0, None, None) == {"judged": 10.0}
    assert readings(True, 2.5, None, None) == {"judged": 2.5}


def _synthetic(graded: bool, n: int = 400) -> list[Reads]:
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        q, j = rng.normal(), rng.normal()
        z = 2.0 * q + 0.0 * j + rng.logistic()
        human = int(np.sum(z > np.array([-1.0, 0.5, 2.0]))) if graded else int(z > 0.3)
        out.append(Reads(f"g{i % 40}", {"question": q, "judged": j}, human))
    return out


@pytest.mark.parametrize("graded", [False, True])
def test_the_fit_recovers_the_reading_that_carries_the_labels(graded: bool) -> None:
    reads = _synthetic(graded)
    c = fit_combination(reads, ["question", "judged"], graded=graded)
    assert c.weights["question"] == pytest.approx(2.0, abs=0.5)
    assert abs(c.weights["judged"]) < 0.4
    if graded:
        assert list(c.intercepts) == sorted(c.intercepts)
        assert c.intercepts == pytest.approx((-1.0, 0.5, 2.0), abs=0.5)
    else:
        assert c.intercepts[0] == pytest.approx(-0.6, abs=0.4)
    soft = combined_soft(c, reads, graded=graded)
    assert all(0.0 <= s <= (3.0 if graded else 1.0) for s in soft)


def test_a_reading_that_separates_the_labels_stays_finite() -> None:
    reads = [Reads("g", {"question": float(x)}, int(x > 0)) for x in range(-5, 6) if x]
    c = fit_combination(reads, ["question"], graded=False)
    assert math.isfinite(c.weights["question"])
    assert c.weights["question"] > 0
    with pytest.raises(ValueError, match="at least one reading"):
        fit_combination(reads, [], graded=False)
