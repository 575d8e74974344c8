"""Close calls: a verdict's signed distance to the nearest cut-off it was decided against
(fitted or neutral, yes/no or graded, after a fitted combination), and the mark an answer
carries only when that distance is within its kind's margin. Near and far values come from
:data:`CLOSE_CALL_MARGINS` (near: inside every kind's; far: outside every kind's), so changing
a margin changes no test."""

from __future__ import annotations

import math

import pytest

from localjudge.decisions import (
    CLOSE_CALL_MARGINS,
    KINDS,
    NO_CUTOFFS,
    Combination,
    Cutoffs,
    close_call,
    close_call_margin,
    cutoff_distance,
    decide,
    hard_value,
)
from localjudge.judge.protocol import Generation, GenerationStats, SoftDecision
from localjudge.metrics.asks import Answer
from localjudge.metrics.base import mark_close_calls
from localjudge.metrics.instructions import (
    GRADE,
    RELEVANT,
    SUPPORTED,
    ask_request,
    passage_ask,
    passage_opening,
)

STATS = GenerationStats(1, 1, 1, 0.0)
#: P(yes) - 0.5 (and an expected grade's distance to its cut-off) inside every kind's margin,
#: and outside every kind's: a yes/no margin is in log-odds, and 0.5 + x has log-odds
#: 2 atanh(2x), so x is inside a margin m when x < tanh(m / 2) / 2
_YES_NO = [m for k, m in CLOSE_CALL_MARGINS.items() if k != "relevance.grade"]
_GRADE = CLOSE_CALL_MARGINS["relevance.grade"]
NEAR = min(math.tanh(min(_YES_NO) / 2) / 2, _GRADE) / 2
FAR = (max(math.tanh(max(_YES_NO) / 2) / 2, _GRADE) + 0.5) / 2


def test_a_yes_no_distance_is_signed_against_the_neutral_cut_off() -> None:
    assert cutoff_distance(SUPPORTED, 0.5 + NEAR) == pytest.approx(NEAR)
    assert cutoff_distance(SUPPORTED, 0.5 - NEAR) == pytest.approx(-NEAR)
    assert cutoff_distance(SUPPORTED, 0.5) == 0.0
    assert close_call(SUPPORTED, 0.5 + NEAR) == round(NEAR, 4)
    assert close_call(SUPPORTED, 0.5 - NEAR) == round(-NEAR, 4)
    assert close_call(SUPPORTED, 0.5 + FAR) is None
    assert close_call(SUPPORTED, 0.5 - FAR) is None


def test_a_yes_no_distance_takes_the_fitted_cut_off() -> None:
    fitted = Cutoffs(values={"recall.supported": (0.3,)})
    assert cutoff_distance(SUPPORTED, 0.3 - NEAR, fitted) == pytest.approx(-NEAR)
    assert close_call(SUPPORTED, 0.3 - NEAR, fitted) == round(-NEAR, 4)
    # near the neutral cut-off, far from the fitted one: no close call
    assert close_call(SUPPORTED, 0.5 + NEAR, fitted) is None
    # the sign agrees with the verdict: >= 0 is the positive value
    assert hard_value(0.3 - NEAR, fitted.of(SUPPORTED.kind)) == 0  # no
    assert hard_value(0.3 + NEAR, fitted.of(SUPPORTED.kind)) == 1  # yes


@pytest.mark.parametrize(
    ("cutoffs", "cuts"),
    [(NO_CUTOFFS, (0.5, 1.5, 2.5)), (Cutoffs(values={"relevance.grade": (0.8, 1.4, 2.9)}), None)],
    ids=["neutral", "fitted"],
)
def test_a_graded_distance_is_to_the_nearest_of_its_cut_offs(cutoffs, cuts) -> None:
    cuts = cuts or cutoffs.values["relevance.grade"]
    for cut in cuts:
        assert cutoff_distance(GRADE, cut + NEAR, cutoffs) == pytest.approx(NEAR)
        assert cutoff_distance(GRADE, cut - NEAR, cutoffs) == pytest.approx(-NEAR)
        assert close_call(GRADE, cut - NEAR, cutoffs) == round(-NEAR, 4)
        assert close_call(GRADE, cut + FAR, cutoffs) is None
        # a grade either side of the cut-off
        cuts_of = cutoffs.of(GRADE.kind)
        assert hard_value(cut - NEAR, cuts_of) + 1 == hard_value(cut + NEAR, cuts_of)
    # halfway between two cut-offs is no close call
    assert close_call(GRADE, (cuts[0] + cuts[1]) / 2, cutoffs) is None


def _yes_no(p_yes: float) -> Generation:
    decision = SoftDecision("relevant", {'"yes"': p_yes, '"no"': 1 - p_yes}, '"yes"')
    return Generation(
        RELEVANT.schema()(relevant="yes"), '{"relevant":"yes"}', STATS, decisions=(decision,)
    )


def _relevant_ask():
    return passage_ask(passage_opening("what is x?", "x is y."), "Q?", RELEVANT, at=0)


def test_an_answer_is_marked_only_when_close() -> None:
    ask = _relevant_ask()
    near = decide(ask, _yes_no(0.5 + NEAR))
    assert (near.value, near.close_call) == ("yes", round(NEAR, 4))
    below = decide(ask, _yes_no(0.5 - NEAR))
    assert (below.value, below.close_call) == ("no", round(-NEAR, 4))
    assert decide(ask, _yes_no(0.5 + FAR)).close_call is None
    # a judge without soft verdicts: nothing to measure
    plain = Generation(RELEVANT.schema()(relevant="yes"), '{"relevant":"yes"}', STATS)
    assert decide(ask, plain).close_call is None


def test_a_graded_answer_is_marked_with_its_expected_grade_s_distance() -> None:
    ask = passage_ask(passage_opening("q?", "p."), "Grade?", GRADE, at=0)
    # expected grade 1.5 + NEAR: 1 with probability 0.5 - NEAR, 2 with 0.5 + NEAR
    probs = {"0": 0.0, "1": 0.5 - NEAR, "2": 0.5 + NEAR, "3": 0.0}
    decision = SoftDecision("grade", probs, "2")
    gen = Generation(GRADE.schema()(grade=2), '{"grade":2}', STATS, decisions=(decision,))
    answer = decide(ask, gen)
    assert answer.soft == pytest.approx(1.5 + NEAR)
    assert (answer.value, answer.close_call) == (2, round(NEAR, 4))


def test_after_a_combination_the_distance_is_the_combined_value_s() -> None:
    # the call says P(yes) = 0.5 + NEAR (a close call on its own); the combination moves its
    # soft value far below the cut-off, and the verdict is decided on that: no close call
    ask = _relevant_ask()
    gen = _yes_no(0.5 + NEAR)
    far = Cutoffs(combinations={"position.relevant": Combination({"judged": 1.0}, (-4.0,))})
    answer = decide(ask, gen, far)
    assert answer.value == "no"
    assert answer.close_call is None
    # one whose intercept lands the combined value within the margin of the fitted cut-off
    judged = math.log((0.5 + NEAR) / (0.5 - NEAR))
    cut = 0.4
    target = cut - NEAR  # the combined P(yes)
    intercept = math.log(target / (1 - target)) - judged
    near = Cutoffs(
        values={"position.relevant": (cut,)},
        combinations={"position.relevant": Combination({"judged": 1.0}, (intercept,))},
    )
    answer = decide(ask, gen, near)
    assert answer.soft == pytest.approx(target)
    assert (answer.value, answer.close_call) == ("no", round(-NEAR, 4))


def test_a_verdict_carries_only_its_close_decisions() -> None:
    verdict: dict = {"index": 0}
    mark_close_calls(verdict, {"relevance": Answer(2, close_call=0.004), "used": Answer("yes")})
    assert verdict == {"index": 0, "close_call": {"relevance": 0.004}}
    plain: dict = {"index": 1}
    mark_close_calls(plain, {"attributed": Answer("yes")})
    assert plain == {"index": 1}


def test_the_recall_ask_s_decision_is_marked_too() -> None:
    ask = ask_request("sys", "shared", "own", SUPPORTED, at=0)
    decision = SoftDecision("supported", {'"yes"': 0.5 - NEAR, '"no"': 0.5 + NEAR}, '"no"')
    gen = Generation(
        SUPPORTED.schema()(supported="no"), '{"supported":"no"}', STATS, decisions=(decision,)
    )
    assert decide(ask, gen).close_call == round(-NEAR, 4)


def test_each_kind_has_its_margin_and_an_unknown_kind_the_widest() -> None:
    assert set(CLOSE_CALL_MARGINS) == set(KINDS)
    assert close_call_margin("no.such_kind") == max(CLOSE_CALL_MARGINS.values())
    # the kind decides: log-odds 0.3 from the neutral cut-off is close for position and clear
    # for recall
    p = 1 / (1 + math.exp(-0.3))
    assert CLOSE_CALL_MARGINS["recall.supported"] < 0.3 < CLOSE_CALL_MARGINS["position.relevant"]
    assert close_call(RELEVANT, p) == round(p - 0.5, 4)
    assert close_call(SUPPORTED, p) is None


def test_a_yes_no_margin_is_in_log_odds() -> None:
    # the same log-odds either side of a fitted cut-off low on the scale: close both ways,
    # though the distances in P(yes) differ
    margin = CLOSE_CALL_MARGINS["recall.supported"]
    cut = 0.1
    fitted = Cutoffs(values={"recall.supported": (cut,)})
    logit = math.log(cut / (1 - cut))
    for step in (0.9 * margin, -0.9 * margin):
        p = 1 / (1 + math.exp(-(logit + step)))
        assert close_call(SUPPORTED, p, fitted) == round(p - cut, 4)
    outside = 1 / (1 + math.exp(-(logit - 1.1 * margin)))
    assert close_call(SUPPORTED, outside, fitted) is None
