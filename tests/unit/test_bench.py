"""localjudge.stats.agreement's statistics against hand-computed small cases, and
localjudge.run.bench.runner's joins and bench_file (with scripted judges).

Every expected number below is worked out by hand in the comments (never by calling the library
or its dependencies), so a wrong formula, a transposed matrix or a mis-ordered label list shows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from localjudge.errors import LocalJudgeError
from localjudge.judge.models.registry import DEFAULT_ALIAS
from localjudge.metrics import METRICS
from localjudge.metrics.instructions import NO_PASSAGE
from localjudge.metrics.relevance import LEVELS
from localjudge.run.bench.compare import compare, item_rows, judges_agreement, pair_up
from localjudge.run.bench.runner import bench_file, bench_table
from localjudge.run.results import read_results
from localjudge.run.settings import JudgeSettings
from localjudge.stats import agreement
from localjudge.stats.agreement import (
    Pair,
    accuracy,
    confusion,
    kappa,
    kendall,
    krippendorff_alpha_interval,
    mae,
    roc_auc,
    spearman,
    with_ci,
)
from localjudge.stats.bootstrap import interval as bootstrap
from localjudge.testing import ScriptedJudge, prompt_data

LEVEL_ORDER = LEVELS.values


def human_score(metric: str, labels: dict[str, Any]) -> float | None:
    """The metric's own human-derived score (each metric module knows its labels)."""
    return METRICS[metric].human_score(labels) if metric in METRICS else None


TOL = 1e-9
BINARY = (False, True)

# --------------------------------------------------------------------------- helpers: result rows


def _row(
    index: int,
    metric: str,
    score: float | None,
    verdicts: list[dict[str, Any]] | None = None,
    *,
    error: bool = False,
    item_id: str | None = None,
    seconds: float | None = 0.5,
    completion_tokens: int | None = 10,
) -> dict[str, Any]:
    """A results.jsonl row as localjudge.run.results.result_row writes it."""
    if error:
        return {
            "format": 1,
            "index": index,
            "id": item_id or f"i{index}",
            "metric": metric,
            "score": None,
            "reason": None,
            "verdicts": None,
            "details": None,
            "error": {"kind": "overflow", "field": None, "message": "too long", "hint": None},
            "judge": {"model": "m", "sha256": "0" * 64},
            "settings": {},
            "seconds": None,
            "prompt_tokens": None,
            "evaluated_prompt_tokens": None,
            "completion_tokens": None,
        }
    return {
        "format": 1,
        "index": index,
        "id": item_id or f"i{index}",
        "metric": metric,
        "score": score,
        "reason": f"reason {index}",
        "verdicts": verdicts or [],
        "details": None,
        "error": None,
        "judge": {"model": "m", "sha256": "0" * 64},
        "settings": {},
        "seconds": seconds,
        "prompt_tokens": 100 if seconds is not None else None,
        "evaluated_prompt_tokens": 100 if seconds is not None else None,
        "completion_tokens": completion_tokens if seconds is not None else None,
    }


def _pos(flags: list[bool]) -> list[dict[str, Any]]:
    return [{"index": i, "reason": "r", "relevant": f} for i, f in enumerate(flags)]


def _rel(levels: list[str], used: list[bool] | None = None) -> list[dict[str, Any]]:
    used = used if used is not None else [False] * len(levels)
    return [
        {"index": i, "reason": "r", "relevance": lv, "used": u}
        for i, (lv, u) in enumerate(zip(levels, used, strict=True))
    ]


@pytest.fixture
def fast_bootstrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 resamples instead of 1000 inside compare() (the tests using it check no interval
    bounds); the bootstrap tests below call the real function directly."""
    monkeypatch.setattr(agreement, "RESAMPLES", 100)


# --------------------------------------------------------------------------- accuracy


def test_accuracy_hand_computed():
    # agree at positions 0, 2, 4 of 5 -> 3 / 5 = 0.6
    human = [True, True, False, False, True]
    judge = [True, False, False, True, True]
    assert accuracy(human, judge) == pytest.approx(0.6, abs=TOL)
    assert accuracy(human, human) == pytest.approx(1.0, abs=TOL)
    # levels too: agree at 0 and 2 of 3 -> 2/3
    assert accuracy(["high", "low", "none"], ["high", "none", "none"]) == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- Cohen's kappa


def test_kappa_unweighted_2x2_hand_computed():
    # 2x2 table (rows human, cols judge), n = 10:
    #               judge T  judge F
    #   human T        4        2       (human T: 6)
    #   human F        1        3       (human F: 4)
    #   (judge T: 5, judge F: 5)
    # p_o = (4 + 3) / 10 = 0.7
    # p_e = P(h=T) P(j=T) + P(h=F) P(j=F) = 0.6 * 0.5 + 0.4 * 0.5 = 0.5
    # kappa = (p_o - p_e) / (1 - p_e) = 0.2 / 0.5 = 0.4
    human = [True] * 6 + [False] * 4
    judge = [True] * 4 + [False] * 2 + [True] * 1 + [False] * 3
    assert kappa(human, judge, labels=BINARY) == pytest.approx(0.4, abs=TOL)
    # symmetric in its arguments (p_o and p_e are)
    assert kappa(judge, human, labels=BINARY) == pytest.approx(0.4, abs=TOL)
    assert kappa(human, human, labels=BINARY) == pytest.approx(1.0, abs=TOL)


def test_kappa_all_wrong_is_zero_not_undefined():
    # human all T, judge all F: p_o = 0, p_e = 1 * 0 + 0 * 1 = 0 -> kappa = 0 / 1 = 0
    assert kappa([True, True], [False, False], labels=BINARY) == pytest.approx(0.0, abs=TOL)


def test_level_order_is_ordinal_lowest_first():
    assert LEVEL_ORDER == ("none", "low", "medium", "high")


def test_quadratic_weighted_kappa_4_levels_hand_computed():
    # levels none=0, low=1, medium=2, high=3; k = 4; w_ij = (i - j)^2 / (k - 1)^2 = (i - j)^2 / 9
    # human = [none, low,    medium, high, high]  -> [0, 1, 2, 3, 3]
    # judge = [none, medium, medium, high, low ]  -> [0, 2, 2, 3, 1]
    # observed weighted disagreement, mean over the 5 items:
    #   (0,0):0  (1,2):1/9  (2,2):0  (3,3):0  (3,1):4/9   -> (5/9) / 5 = 1/9 = 25/225
    # expected from the marginals: human counts [1,1,1,2], judge counts [1,1,2,1] (of 5 each)
    #   sum_ij h_i j_j (i-j)^2:
    #     i=0 (h=1): 1*0 + 1*1 + 2*4 + 1*9 = 18        -> 18
    #     i=1 (h=1): 1*1 + 1*0 + 2*1 + 1*4 =  7        ->  7
    #     i=2 (h=1): 1*4 + 1*1 + 2*0 + 1*1 =  6        ->  6
    #     i=3 (h=2): 1*9 + 1*4 + 2*1 + 1*0 = 15  (x2)  -> 30
    #   total 61 -> E_w = 61 / (25 * 9) = 61/225
    # kappa_w = 1 - O_w / E_w = 1 - 25/61 = 36/61 ~ 0.5902
    human = ["none", "low", "medium", "high", "high"]
    judge = ["none", "medium", "medium", "high", "low"]
    got = kappa(human, judge, labels=LEVEL_ORDER, weights="quadratic")
    assert got == pytest.approx(36 / 61, abs=TOL)
    # unweighted on the same data: p_o = 3/5; p_e = (1*1 + 1*1 + 1*2 + 2*1) / 25 = 6/25
    # kappa = (0.6 - 0.24) / 0.76 = 0.36 / 0.76 = 9/19 ~ 0.4737 (near misses not credited)
    assert kappa(human, judge, labels=LEVEL_ORDER) == pytest.approx(9 / 19, abs=TOL)


def test_quadratic_kappa_depends_on_the_ordinal_order():
    # With an alphabetical order (high, low, medium, none) 'none' vs 'medium' would be a near
    # miss; in the true order they are 2 apart. Check the function uses the order it is given:
    # human [none, high], judge [medium, high] -> indices h [0, 3], j [2, 3]
    #   O_w = mean weighted disagreement = ((0,2): 4/9 + (3,3): 0) / 2 = 2/9
    #   marginals h [1,0,0,1], j [0,0,1,1] (of 2); E_w = sum h_i j_j (i-j)^2 / (4 * 9)
    #     i=0: j=2 -> 4, j=3 -> 9  = 13
    #     i=3: j=2 -> 1, j=3 -> 0  =  1       total 14 -> E_w = 14/36 = 7/18
    #   kappa_w = 1 - (2/9) / (7/18) = 1 - 4/7 = 3/7
    got = kappa(["none", "high"], ["medium", "high"], labels=LEVEL_ORDER, weights="quadratic")
    assert got == pytest.approx(3 / 7, abs=TOL)


# --------------------------------------------------------------------------- confusion matrix


def test_confusion_rows_are_human_columns_are_judge():
    # human [T, T, T, F], judge [F, F, T, F]
    #   row human=F: judge F 1, judge T 0   -> [1, 0]
    #   row human=T: judge F 2, judge T 1   -> [2, 1]
    # (the transpose would be [[1, 2], [0, 1]])
    got = confusion([True, True, True, False], [False, False, True, False], BINARY)
    assert got == {"labels": ["false", "true"], "matrix": [[1, 0], [2, 1]]}


def test_confusion_levels_in_label_order():
    # human high judged none -> row 'high' (3), column 'none' (0);
    # human low judged low -> [1][1]; human low judged medium -> [1][2]
    got = confusion(["high", "low", "low"], ["none", "low", "medium"], LEVEL_ORDER)
    assert got["labels"] == ["none", "low", "medium", "high"]
    assert got["matrix"] == [
        [0, 0, 0, 0],
        [0, 1, 1, 0],
        [0, 0, 0, 0],
        [1, 0, 0, 0],
    ]


def test_confusion_empty_is_zero_matrix():
    assert confusion([], [], BINARY) == {"labels": ["false", "true"], "matrix": [[0, 0], [0, 0]]}


# --------------------------------------------------------------------------- rank correlations


def test_spearman_and_kendall_monotone_and_reversed():
    x = [0.1, 0.2, 0.5, 0.9]
    assert spearman(x, [1, 2, 3, 40]) == pytest.approx(1.0, abs=TOL)
    assert kendall(x, [1, 2, 3, 40]) == pytest.approx(1.0, abs=TOL)
    assert spearman(x, [40, 3, 2, 1]) == pytest.approx(-1.0, abs=TOL)
    assert kendall(x, [40, 3, 2, 1]) == pytest.approx(-1.0, abs=TOL)


def test_spearman_and_kendall_one_swap():
    # x = [1,2,3,4], y = [1,3,2,4]: rank differences d = [0,1,-1,0], sum d^2 = 2
    #   rho = 1 - 6 * 2 / (4 * (16 - 1)) = 1 - 12/60 = 0.8
    # pairs: 6, discordant only (2,3) -> tau = (5 - 1) / 6 = 2/3
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8, abs=TOL)
    assert kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3, abs=TOL)


def test_spearman_and_kendall_with_a_tie():
    # x = [1,2,3], y = [1,1,2]
    # Spearman = Pearson of the ranks: rx = [1,2,3], ry = [1.5,1.5,3] (tie gets the mean rank)
    #   dx = [-1,0,1], dy = [-0.5,-0.5,1]; sum dx dy = 0.5 + 0 + 1 = 1.5
    #   sum dx^2 = 2, sum dy^2 = 0.25 + 0.25 + 1 = 1.5 -> rho = 1.5 / sqrt(3) = sqrt(3)/2
    # Kendall tau-b: pairs (1,2) tied in y, (1,3) and (2,3) concordant: C = 2, D = 0,
    #   n0 = 3, ties in x n1 = 0, ties in y n2 = 1 -> tau_b = 2 / sqrt(3 * 2) = 2/sqrt(6)
    assert spearman([1, 2, 3], [1, 1, 2]) == pytest.approx(math.sqrt(3) / 2, abs=TOL)
    assert kendall([1, 2, 3], [1, 1, 2]) == pytest.approx(2 / math.sqrt(6), abs=TOL)


@pytest.mark.parametrize("fn", [spearman, kendall])
def test_rank_correlations_undefined_is_none(fn):
    assert fn([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) is None  # constant human scores
    assert fn([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]) is None  # constant judge scores
    assert fn([0.5], [0.5]) is None  # one point
    assert fn([], []) is None


# --------------------------------------------------------------------------- MAE, ROC AUC


def test_mae_hand_computed():
    # |0 - 0.25| + |0.5 - 0.5| + |1 - 0.5| = 0.25 + 0 + 0.5 = 0.75; / 3 = 0.25
    assert mae([0.0, 0.5, 1.0], [0.25, 0.5, 0.5]) == pytest.approx(0.25, abs=TOL)
    assert mae([0.3], [0.3]) == pytest.approx(0.0, abs=TOL)
    assert mae([], []) is None


def test_roc_auc_by_counting_pairs():
    # negatives score 0.1, 0.4; positives 0.35, 0.8. Positive-negative pairs (win = pos higher):
    #   0.35 > 0.1 win, 0.35 < 0.4 loss, 0.8 > 0.1 win, 0.8 > 0.4 win -> 3 / 4 = 0.75
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == pytest.approx(0.75, abs=TOL)
    # a tie counts one half: negative 0.5; positives 0.5 (tie: 0.5), 0.9 (win: 1) -> 1.5 / 2
    assert roc_auc([0.0, 1.0, 1.0], [0.5, 0.5, 0.9]) == pytest.approx(0.75, abs=TOL)
    # perfectly separated and perfectly inverted
    assert roc_auc([0, 1], [0.2, 0.9]) == pytest.approx(1.0, abs=TOL)
    assert roc_auc([0, 1], [0.9, 0.2]) == pytest.approx(0.0, abs=TOL)


def test_undefined_statistics_are_none():
    assert roc_auc([1, 1, 1], [0.1, 0.5, 0.9]) is None  # one class only
    assert roc_auc([0, 0], [0.1, 0.5]) is None
    assert roc_auc([], []) is None
    assert accuracy([], []) is None
    assert kappa([], [], labels=BINARY) is None
    # one class on both sides: p_e = 1, kappa = 0/0
    assert kappa([True, True], [True, True], labels=BINARY) is None
    assert (
        kappa(["high", "high"], ["high", "high"], labels=LEVEL_ORDER, weights="quadratic") is None
    )


# --------------------------------------------------------------------------- bootstrap


def _mean(xs):
    return sum(xs) / len(xs)


def test_bootstrap_is_deterministic_and_seeded():
    data = [0.1, 0.9, 0.4, 0.7, 0.3, 0.8, 0.2, 0.6]
    first = bootstrap(data, _mean)
    assert first == bootstrap(data, _mean)  # same seed (default) -> same interval
    assert bootstrap(data, _mean, seed=7) == bootstrap(data, _mean, seed=7)
    assert bootstrap(data, _mean, seed=7) != first  # the seed is used
    assert first is not None
    low, high = first
    assert low < high


def test_bootstrap_ci_contains_the_point_estimate():
    data = [0.1, 0.9, 0.4, 0.7, 0.3, 0.8, 0.2, 0.6]
    got = with_ci(data, _mean)
    # point estimate: (0.1+0.9+0.4+0.7+0.3+0.8+0.2+0.6) / 8 = 4.0 / 8 = 0.5
    assert got["value"] == pytest.approx(0.5, abs=TOL)
    low, high = got["ci95"]
    assert low <= 0.5 <= high
    # resample means lie within [min, max] of the data
    assert low >= 0.1
    assert high <= 0.9


def test_bootstrap_degenerate_cases_are_none():
    assert bootstrap([], _mean) is None
    assert bootstrap([0.5], _mean) is None  # fewer than 2 clusters
    assert with_ci([0.5], _mean) == {"value": 0.5, "ci95": None}
    # a statistic that is undefined on (almost) every resample gives no interval
    assert bootstrap([1.0, 2.0, 3.0], lambda xs: None) is None


def test_bootstrap_resamples_whole_clusters():
    # clusters are (human, judge) lists of one item: per-item verdicts must stay together. Each
    # cluster here is internally perfect, so every resample has accuracy 1.0 exactly.
    clusters = [([True, False], [True, False]), ([False], [False]), ([True, True], [True, True])]

    def acc(cs):
        return accuracy([h for hs, _ in cs for h in hs], [j for _, js in cs for j in js])

    assert bootstrap(clusters, acc) == [1.0, 1.0]


# --------------------------------------------------------------------------- human scores


def test_human_score_recall_is_passthrough():
    assert human_score("recall", {"recall": 0.75}) == 0.75
    assert human_score("recall", {"recall": 1}) == 1.0
    assert human_score("recall", {"relevant": [True]}) is None


def test_human_score_position_uses_harmonic_normaliser():
    # weights 1, 1/2, 1/3; H_3 = 11/6; relevant pieces 1 and 2 -> (1/2 + 1/3) / (11/6) = 5/11
    assert human_score("position", {"relevant": [False, True, True]}) == pytest.approx(5 / 11)
    # only the first of two: 1 / (1 + 1/2) = 2/3
    assert human_score("position", {"relevant": [True, False]}) == pytest.approx(2 / 3)
    assert human_score("position", {"relevant": [False, False]}) == 0.0
    assert human_score("position", {"recall": 1.0}) is None


def test_human_score_relevance_with_and_without_used():
    # base = mean level weight = (high 1.0 + low 0.3) / 2 = 0.65
    # without `used`: every piece counts as used, nothing missing -> 0.65
    assert human_score("relevance", {"levels": ["high", "low"]}) == pytest.approx(0.65)
    # with used [False, True]: one high piece unused -> 0.65 - 0.10 = 0.55
    got = human_score("relevance", {"levels": ["high", "low"], "used": [False, True]})
    assert got == pytest.approx(0.55)
    # used, but the unused piece is not high: no penalty; (0.7 + 0.0) / 2 = 0.35
    got = human_score("relevance", {"levels": ["medium", "none"], "used": [True, False]})
    assert got == pytest.approx(0.35)
    # binary labels only: no human relevance score
    assert human_score("relevance", {"relevant": [True, False]}) is None
    assert human_score("unknown", {"recall": 1.0}) is None


# --------------------------------------------------------------------------- pair_up


def test_pair_up_joins_by_index_and_skips_the_rest():
    labelled = {
        0: {"recall": 1.0, "relevant": [True]},
        2: {"relevant": [False, True]},
        3: {"recall": 0.5},  # no position labels
    }
    rows = [
        _row(0, "position", 1.0, _pos([True]), item_id="a"),
        _row(0, "recall", 1.0, item_id="a"),  # other metric
        _row(1, "position", 0.0, _pos([False]), item_id="b"),  # unlabelled
        _row(2, "position", 0.5, _pos([True, False]), item_id="c"),
        _row(3, "position", 0.0, _pos([False]), item_id="d"),  # labelled, not for position
    ]
    pairs = pair_up(labelled, rows, "position")
    assert [(p.index, p.id) for p in pairs] == [(0, "a"), (2, "c")]
    assert pairs[1].labels == labelled[2]
    assert pairs[1].row is rows[3]
    assert all(isinstance(p, Pair) for p in pairs)
    recall = pair_up(labelled, rows, "recall")
    assert [(p.index, p.row["metric"]) for p in recall] == [(0, "recall")]


def test_pair_up_follows_the_index_not_the_row_order():
    labelled = {0: {"recall": 0.0}, 1: {"recall": 1.0}}
    rows = [_row(1, "recall", 0.9, item_id="y"), _row(0, "recall", 0.1, item_id="x")]
    pairs = pair_up(labelled, rows, "recall")
    assert {p.id: p.labels["recall"] for p in pairs} == {"y": 1.0, "x": 0.0}


# --------------------------------------------------------------------------- compare


@pytest.fixture
def two_judges() -> tuple[dict[int, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Four labelled items; judge B fails item 2 for recall and position, A scores everything
    but is badly wrong on item 2 (so including it would change A's numbers)."""
    labelled = {
        0: {"recall": 1.0, "relevant": [True, False]},
        1: {"recall": 0.0, "relevant": [False, False]},
        2: {"recall": 1.0, "relevant": [True, True]},
        3: {"recall": 0.5, "relevant": [False, True]},
    }
    ids = ["a", "b", "c", "d"]
    a = [
        _row(0, "recall", 1.0, item_id=ids[0]),
        _row(1, "recall", 0.0, item_id=ids[1]),
        _row(2, "recall", 0.0, item_id=ids[2]),  # wrong by 1.0
        _row(3, "recall", 0.5, item_id=ids[3]),
        _row(0, "position", 1.0, _pos([True, False]), item_id=ids[0]),
        _row(1, "position", 0.0, _pos([False, False]), item_id=ids[1]),
        _row(2, "position", 0.0, _pos([False, False]), item_id=ids[2]),  # both verdicts wrong
        _row(3, "position", 1 / 3, _pos([False, True]), item_id=ids[3]),
    ]
    b = [
        _row(0, "recall", 0.5, item_id=ids[0]),
        _row(1, "recall", 0.0, item_id=ids[1]),
        _row(2, "recall", None, error=True, item_id=ids[2]),
        _row(3, "recall", 0.5, item_id=ids[3]),
        _row(0, "position", 1.0, _pos([True, False]), item_id=ids[0]),
        _row(1, "position", 2 / 3, _pos([True, False]), item_id=ids[1]),  # one verdict wrong
        _row(2, "position", None, error=True, item_id=ids[2]),
        _row(3, "position", 1 / 3, _pos([False, True]), item_id=ids[3]),
    ]
    return labelled, {"A": a, "B": b}


@pytest.mark.usefixtures("fast_bootstrap")
def test_compare_reports_the_most_common_verdict_vector(two_judges):
    labelled, rows = two_judges
    out = compare(labelled, rows, ["position"])
    # on the items both judges scored (0, 1, 3): B says [T, F] twice, A never repeats itself
    assert out["B"]["position"]["top_pattern"] == {
        "vector": [[True], [False]],
        "count": 2,
        "n_items": 3,
        "share": 2 / 3,
    }
    assert out["A"]["position"]["top_pattern"]["count"] == 1


@pytest.mark.usefixtures("fast_bootstrap")
def test_compare_uses_only_items_every_judge_scored(two_judges):
    labelled, rows = two_judges
    out = compare(labelled, rows, ["recall", "position"])
    a, b = out["A"]["recall"], out["B"]["recall"]
    assert (a["n_items"], a["n_scored"], a["n_failed"], a["failed_ids"]) == (4, 4, 0, [])
    assert (b["n_items"], b["n_scored"], b["n_failed"], b["failed_ids"]) == (4, 3, 1, ["c"])
    assert a["n_common"] == b["n_common"] == 3
    assert a["scores"]["n_items"] == b["scores"]["n_items"] == 3
    # A on the common items {0, 1, 3}: human [1, 0, 0.5], judge [1, 0, 0.5] -> MAE 0, rho 1
    # (with item 2 included MAE would be 1/4 and rho lower)
    assert a["scores"]["mae"]["value"] == pytest.approx(0.0, abs=TOL)
    assert a["scores"]["spearman"]["value"] == pytest.approx(1.0, abs=TOL)
    assert a["scores"]["human_mean"] == pytest.approx(0.5)  # (1 + 0 + 0.5) / 3
    # B: |1-0.5| + 0 + 0 = 0.5 -> MAE 1/6; ranks h [3,1,2], b [2.5,1,2.5]:
    #   dx [1,-1,0], dy [0.5,-1,0.5]; sum dxdy 1.5; sum dx^2 2, dy^2 1.5 -> rho = sqrt(3)/2
    assert b["scores"]["mae"]["value"] == pytest.approx(1 / 6, abs=TOL)
    assert b["scores"]["spearman"]["value"] == pytest.approx(math.sqrt(3) / 2, abs=TOL)
    assert b["scores"]["judge_mean"] == pytest.approx(1 / 3)  # (0.5 + 0 + 0.5) / 3
    # ROC AUC on the binary-labelled common items only (0 and 1; item 3's 0.5 is not binary)
    assert a["scores"]["roc_auc"]["n_items"] == 2
    assert a["scores"]["roc_auc"]["value"] == pytest.approx(1.0)
    assert b["scores"]["roc_auc"]["value"] == pytest.approx(1.0)  # 0.5 > 0.0
    # recall has no per-verdict labels
    assert a["verdicts"] == {} == b["verdicts"]


@pytest.mark.usefixtures("fast_bootstrap")
def test_compare_verdicts_on_common_items(two_judges):
    labelled, rows = two_judges
    out = compare(labelled, rows, ["recall", "position"])
    a, b = out["A"]["position"], out["B"]["position"]
    assert b["failed_ids"] == ["c"]
    assert b["n_failed"] == 1
    assert a["n_common"] == b["n_common"] == 3
    va, vb = a["verdicts"]["relevant"], b["verdicts"]["relevant"]
    # 3 common items x 2 pieces = 6 verdicts each; A's wrong item 2 is not among them
    assert va["n_verdicts"] == vb["n_verdicts"] == 6
    assert va["accuracy"]["value"] == pytest.approx(1.0)
    assert va["kappa"]["value"] == pytest.approx(1.0)
    assert va["kappa"]["weights"] == "none"
    # B: human [T,F, F,F, F,T], judge [T,F, T,F, F,T] -> 5/6 agree
    #   table: h T/j T 2, h T/j F 0, h F/j T 1, h F/j F 3
    #   p_o = 5/6; P(h=T) = 2/6, P(j=T) = 3/6 -> p_e = (2/6)(3/6) + (4/6)(3/6) = 1/2
    #   kappa = (5/6 - 1/2) / (1/2) = 2/3
    assert vb["accuracy"]["value"] == pytest.approx(5 / 6)
    assert vb["kappa"]["value"] == pytest.approx(2 / 3)
    assert vb["confusion"] == {"labels": ["false", "true"], "matrix": [[3, 1], [0, 2]]}
    # speed: every scored row took 0.5 s and 10 completion tokens -> 20 tokens/s
    assert a["seconds_per_item"] == pytest.approx(0.5)
    assert a["tokens_per_s"] == pytest.approx(20.0)


@pytest.mark.usefixtures("fast_bootstrap")
def test_compare_single_judge_and_per_metric_intersection(two_judges):
    labelled, rows = two_judges
    # B alone: its common set is its own scored items
    alone = compare(labelled, {"B": rows["B"]}, ["recall"])
    assert alone["B"]["recall"]["n_common"] == 3
    # B fails only recall on item 2 -> position keeps all 4 items in common
    b = [r for r in rows["B"] if not (r["index"] == 2 and r["metric"] == "position")]
    b.append(_row(2, "position", 1.0, _pos([True, True]), item_id="c"))
    out = compare(labelled, {"A": rows["A"], "B": b}, ["recall", "position"])
    assert out["A"]["recall"]["n_common"] == 3
    assert out["A"]["position"]["n_common"] == 4
    assert out["B"]["position"]["n_failed"] == 0


@pytest.mark.usefixtures("fast_bootstrap")
def test_compare_relevance_with_binary_labels_maps_high_and_medium():
    # human binary labels only; judge levels: high, medium -> relevant; low, none -> not
    labelled = {
        0: {"relevant": [True, False, True]},
        1: {"relevant": [True, True]},
    }
    rows = [
        _row(0, "relevance", 0.6, _rel(["high", "low", "medium"])),  # -> T, F, T (all agree)
        _row(1, "relevance", 0.5, _rel(["medium", "none"])),  # -> T, F (second disagrees)
    ]
    out = compare(labelled, {"J": rows}, ["relevance"])["J"]["relevance"]
    assert set(out["verdicts"]) == {"relevant"}
    v = out["verdicts"]["relevant"]
    # 5 verdicts, 4 agree -> 0.8
    # table: h T/j T 3, h T/j F 1, h F/j F 1, h F/j T 0
    # p_o = 0.8; P(h=T) = 4/5, P(j=T) = 3/5 -> p_e = 0.8*0.6 + 0.2*0.4 = 0.56
    # kappa = (0.8 - 0.56) / 0.44 = 6/11
    assert v["n_verdicts"] == 5
    assert v["accuracy"]["value"] == pytest.approx(0.8)
    assert v["kappa"]["value"] == pytest.approx(6 / 11)
    assert v["confusion"]["matrix"] == [[1, 0], [1, 3]]
    # no levels in the labels -> no human relevance score -> no score agreement
    assert out["scores"] is None


@pytest.mark.usefixtures("fast_bootstrap")
def test_compare_relevance_with_levels_and_used():
    labelled = {
        0: {"levels": ["high", "low"], "used": [True, False]},
        1: {"levels": ["none", "medium"], "used": [False, True]},
    }
    rows = [
        _row(0, "relevance", 0.65, _rel(["high", "low"], [True, False])),
        _row(1, "relevance", 0.5, _rel(["low", "medium"], [False, False])),
    ]
    out = compare(labelled, {"J": rows}, ["relevance"])["J"]["relevance"]
    assert list(out["verdicts"]) == ["levels", "used"]
    levels = out["verdicts"]["levels"]
    assert levels["kappa"]["weights"] == "quadratic"
    # human [high, low, none, medium] judge [high, low, low, medium]: 3/4 agree
    assert levels["accuracy"]["value"] == pytest.approx(0.75)
    # the one miss: human none (row 0) judged low (col 1)
    assert levels["confusion"]["matrix"][0] == [0, 1, 0, 0]
    # used: human [T, F, F, T] judge [T, F, F, F] -> 3/4
    assert out["verdicts"]["used"]["accuracy"]["value"] == pytest.approx(0.75)
    # human scores: item 0 (1.0 + 0.3)/2 = 0.65 (high used); item 1 (0 + 0.7)/2 = 0.35
    # MAE = (|0.65 - 0.65| + |0.35 - 0.5|) / 2 = 0.075
    assert out["scores"]["mae"]["value"] == pytest.approx(0.075)
    assert out["scores"]["human_mean"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- item_rows


def test_item_rows_sorted_by_abs_error(two_judges):
    labelled, rows = two_judges
    out = item_rows(labelled, rows, ["recall", "position"])
    # 2 judges x 2 metrics x 4 items
    assert len(out) == 16
    errors = [r["abs_error"] for r in out]
    numeric = [e for e in errors if e is not None]
    assert numeric == sorted(numeric, reverse=True)
    # A on item 2: position human [T,T] -> 1.0 vs 0.0, recall 1.0 vs 0.0; equal errors are
    # ordered by judge, metric, index
    top = [(r["judge"], r["metric"], r["id"], r["abs_error"]) for r in out[:2]]
    assert top == [("A", "position", "c", 1.0), ("A", "recall", "c", 1.0)]
    # failed rows carry the error and no abs_error
    failed = [r for r in out if r["error"] is not None]
    assert {(r["judge"], r["metric"], r["id"]) for r in failed} == {
        ("B", "recall", "c"),
        ("B", "position", "c"),
    }
    assert all(r["abs_error"] is None and r["judge_score"] is None for r in failed)
    pos = next(
        r for r in out if r["judge"] == "B" and r["metric"] == "position" and r["index"] == 1
    )
    # human position of [F, F] is 0; judge 2/3 -> abs_error 2/3
    assert pos["human_score"] == 0.0
    assert pos["abs_error"] == pytest.approx(2 / 3)
    assert pos["judge_verdicts"] == {"relevant": [True, False]}
    assert pos["labels"] == labelled[1]
    rec = next(r for r in out if r["judge"] == "A" and r["metric"] == "recall" and r["index"] == 0)
    assert rec["judge_verdicts"] == {}
    assert rec["reason"] == "reason 0"


def test_item_rows_order_is_total():
    # equal errors: ties broken by judge, metric, index
    labelled = {0: {"recall": 1.0}, 1: {"recall": 0.0}}
    rows = {
        "Z": [_row(0, "recall", 0.5), _row(1, "recall", 0.5)],
        "A": [_row(1, "recall", 0.5), _row(0, "recall", 0.5)],
    }
    out = item_rows(labelled, rows, ["recall"])
    assert [(r["judge"], r["index"]) for r in out] == [("A", 0), ("A", 1), ("Z", 0), ("Z", 1)]


# --------------------------------------------------------------------------- bench_table


@pytest.mark.usefixtures("fast_bootstrap")
def test_bench_table_has_a_line_per_judge_and_metric(two_judges):
    labelled, rows = two_judges
    metrics = ["recall", "position"]
    comparison = compare(labelled, rows, metrics)
    report = {
        "judges": {
            name: {"load_seconds": 1.25, "peak_rss_mb": 321.0, "metrics": comparison[name]}
            for name in rows
        }
    }
    table = bench_table(report)
    lines = table.splitlines()
    assert len(lines) == 2 + 2 * 2
    assert lines[0].split() == [
        "judge", "metric", "n", "fail", "acc", "kappa", "rho", "mae", "auc", "~rho", "~auc",
        "top", "s/item", "tok/s", "load", "s", "MB",
    ]  # fmt: skip
    assert set(lines[1]) == {"-"}
    body = [line.split() for line in lines[2:]]
    assert [(c[0], c[1]) for c in body] == [
        ("A", "recall"),
        ("A", "position"),
        ("B", "recall"),
        ("B", "position"),
    ]
    by = {(c[0], c[1]): c for c in body}
    # recall: n 3, no verdicts -> acc/kappa '-', mae 0.000, auc 1.000
    assert by["A", "recall"][2:9] == ["3", "0", "-", "-", "1.000", "0.000", "1.000"]
    assert by["B", "recall"][2:4] == ["3", "1"]
    assert by["B", "recall"][7] == f"{1 / 6:.3f}"
    # position: acc and kappa from the 'relevant' verdicts; no auc for position
    assert by["B", "position"][4:6] == [f"{5 / 6:.3f}", f"{2 / 3:.3f}"]
    assert by["B", "position"][8] == "-"
    # these rows have no soft scores: their agreement is '-'
    assert by["A", "recall"][9:11] == ["-", "-"]
    # top: the share of items with the most common verdict vector (A's are all different)
    assert by["A", "position"][11] == f"{1 / 3:.2f}"
    assert by["B", "position"][11] == f"{2 / 3:.2f}"
    assert by["A", "recall"][12:] == ["0.50", "20.0", "1.25", "321"]


def test_bench_table_truncates_long_names_and_handles_missing_numbers():
    m = {
        "n_common": 0,
        "n_failed": 2,
        "verdicts": {},
        "scores": None,
        "seconds_per_item": None,
        "tokens_per_s": None,
    }
    name = "/very/long/path/to/some-model-file.gguf"
    report = {"judges": {name: {"load_seconds": None, "peak_rss_mb": None, "metrics": {"x": m}}}}
    line = bench_table(report).splitlines()[2]
    assert line.startswith("…" + name[-23:] + " ")  # a path's end names the file
    assert line.split()[1:] == ["x", "0", "2"] + ["-"] * 12


def test_every_metric_names_its_labels():
    for cls in METRICS.values():
        assert cls.labels, cls.name
        for key in cls.labels:
            # a metric compared on a label gives a human score or per-piece judge values for it
            assert not cls.labels[key].per_piece or cls.judge_values([], key) == [], (cls, key)


# --------------------------------------------------------------------------- bench_file (no model)

LABELLED = [
    {
        "id": "p",
        "user_input": "q0",
        "retrieved_contexts": ["a", "b"],
        "reference": "r",
        "response": "s",
        "labels": {"recall": 1.0, "relevant": [True, False], "levels": ["high", "none"]},
    },
    {
        "id": "q",
        "user_input": "q1",
        "retrieved_contexts": ["c", "d"],
        "reference": "r",
        "response": "s",
        "labels": {"recall": 0.0, "relevant": [False, True], "levels": ["low", "medium"]},
    },
    {"id": "unlabelled", "user_input": "q2", "retrieved_contexts": ["e"], "reference": "r"},
]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


#: each record's contexts are unique to it: a call's PASSAGE or CONTEXT names its record
GRADES = {"high": 3, "medium": 2, "low": 1, "none": 0}


def _perfect_reply(messages: list[dict[str, str]], schema: type[Any]) -> dict[str, Any]:
    """A judge that answers every call about LABELLED with its labels (unlabelled: anything).
    One decision per call: the record and piece are read from the prompt's blocks."""
    data = prompt_data(messages)
    name = schema.__name__
    if name == "Reason":
        return {"reason": "r"}
    if name == "Missing":
        return {"missing": []}
    if name == "SupportedDecision":
        record = next(r for r in LABELLED if r["retrieved_contexts"][0] == data["CONTEXT 0"])
        supported = record.get("labels", {}).get("recall", 0) >= 0.5
        return {"supported": "yes" if supported else "no"}
    if data["PASSAGE"] == NO_PASSAGE:  # an item's baseline call: its answer is not used
        return {"grade": 0}
    record = next(r for r in LABELLED if data["PASSAGE"] in r["retrieved_contexts"])
    labels, piece = record.get("labels", {}), record["retrieved_contexts"].index(data["PASSAGE"])
    if name == "RelevantDecision":
        relevant = labels.get("relevant", [False] * (piece + 1))[piece]
        return {"relevant": "yes" if relevant else "no"}
    if name == "GradeDecision":
        return {"grade": GRADES[labels.get("levels", ["none"] * (piece + 1))[piece]]}
    assert name == "RepeatsDecision", name
    return {"repeats": "yes"}


class FakeJudges:
    """A judge factory for bench_file: a perfect scripted judge per name, names recorded."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, settings: JudgeSettings) -> ScriptedJudge:
        self.calls.append(settings.name)
        return ScriptedJudge(_perfect_reply, model=settings.name)


def calls_for(records: list[dict[str, Any]], metrics: list[str]) -> int:
    """The judge calls ``metrics`` make for ``records``: one per decision, and one per reason
    (reasons on, as bench's default metrics have them)."""
    from localjudge.data.item import make_item  # noqa: PLC0415
    from localjudge.metrics import METRICS  # noqa: PLC0415

    n = 0
    for i, record in enumerate(records):
        asked: set[str] = set()  # a call two metrics of an item ask (the baseline) is made once
        for name in metrics:
            metric = METRICS[name]()
            asks = metric.build(make_item(record, index=i))
            reasons = [a for a in asks if a.decision is not None and a.explain]
            asked.update(json.dumps([a.request.messages, a.request.read_chars]) for a in asks)
            n += len(reasons) if metric.reasons else 0
        n += len(asked)
    return n


@pytest.fixture
def fake_judges() -> FakeJudges:
    return FakeJudges()


@pytest.mark.usefixtures("fast_bootstrap")
def test_bench_file_writes_report_and_items(tmp_path, fake_judges):
    data = _write_jsonl(tmp_path / "labelled.jsonl", LABELLED)
    specs = [JudgeSettings(model="one"), JudgeSettings(model="two")]
    outcome = bench_file(data, tmp_path / "out", judges=specs, open_judge=fake_judges)
    assert fake_judges.calls == ["one", "two"]
    report = json.loads(outcome.bench_path.read_text("utf-8"))
    assert report == json.loads(json.dumps(outcome.report))
    assert report["n_labelled"] == 2  # the unlabelled record is not counted
    assert report["metrics"] == ["recall", "position", "relevance"]
    assert list(report["judges"]) == ["one", "two"]
    for name, judge in report["judges"].items():
        assert judge["identity"]["model"] == name
        assert judge["load_seconds"] >= 0.0
        assert judge["peak_rss_mb"] > 0.0
        # every call of every labelled item x metric (no cache); the unlabelled record is never
        # judged
        assert judge["judge_calls"] == calls_for(LABELLED[:2], ["recall", "position", "relevance"])
        for metric in report["metrics"]:
            m = judge["metrics"][metric]
            assert (m["n_common"], m["n_failed"]) == (2, 0)
            assert m["scores"]["mae"]["value"] == pytest.approx(0.0)
        assert judge["metrics"]["position"]["verdicts"]["relevant"]["accuracy"]["value"] == 1.0
        assert judge["metrics"]["relevance"]["verdicts"]["levels"]["kappa"]["value"] == 1.0
    items = [json.loads(line) for line in outcome.items_path.read_text("utf-8").splitlines()]
    assert len(items) == 2 * 3 * 2  # judges x metrics x labelled items
    assert (tmp_path / "out" / "judges" / "0-one" / "results.jsonl").is_file()
    assert (tmp_path / "out" / "judges" / "1-two" / "results.jsonl").is_file()


def test_bench_file_limit_and_metric_choice(tmp_path, fake_judges):
    data = _write_jsonl(tmp_path / "labelled.jsonl", LABELLED)
    outcome = bench_file(
        data,
        tmp_path / "out",
        judges=[JudgeSettings(model="one")],
        metrics=["recall"],
        limit=1,
        open_judge=fake_judges,
    )
    assert outcome.report["n_labelled"] == 1
    assert outcome.report["metrics"] == ["recall"]
    assert outcome.report["judges"]["one"]["metrics"]["recall"]["n_common"] == 1


def test_a_metric_judges_only_the_items_whose_labels_cover_it(tmp_path, fake_judges):
    """A claim-only item (recall labels alone) costs no position call, and an item with
    position labels alone no recall call; the judge's run has rows only where labels are."""
    claim_only = {**LABELLED[0], "id": "claim", "labels": {"recall": 1.0}}
    ranked_only = {**LABELLED[1], "id": "ranked", "labels": {"relevant": [False, True]}}
    data = _write_jsonl(tmp_path / "labelled.jsonl", [claim_only, ranked_only, LABELLED[2]])
    outcome = bench_file(
        data,
        tmp_path / "out",
        judges=[JudgeSettings(model="one")],
        metrics=["recall", "position"],
        open_judge=fake_judges,
    )
    judge = outcome.report["judges"]["one"]
    assert judge["judge_calls"] == calls_for([claim_only], ["recall"]) + calls_for(
        [ranked_only], ["position"]
    )
    rows = read_results(tmp_path / "out" / "judges" / "0-one" / "results.jsonl")
    assert [(r["id"], r["metric"]) for r in rows] == [("claim", "recall"), ("ranked", "position")]
    assert judge["metrics"]["recall"]["n_items"] == 1
    assert judge["metrics"]["position"]["n_items"] == 1


def test_bench_file_rejects_unlabelled_data_and_repeated_judges(tmp_path, fake_judges):
    data = _write_jsonl(tmp_path / "plain.jsonl", [LABELLED[2]])
    with pytest.raises(LocalJudgeError) as info:
        bench_file(
            data, tmp_path / "out", judges=[JudgeSettings(model=None)], open_judge=fake_judges
        )
    assert info.value.exit_code == 2
    labelled = _write_jsonl(tmp_path / "labelled.jsonl", LABELLED)
    with pytest.raises(LocalJudgeError) as info:
        bench_file(
            labelled,
            tmp_path / "out",
            judges=[JudgeSettings(model=None), JudgeSettings(model=DEFAULT_ALIAS)],
            open_judge=fake_judges,
        )
    assert info.value.exit_code == 2
    assert fake_judges.calls == []


@pytest.mark.parametrize(
    "labels",
    [
        {"levels": ["High", "none"]},  # not one of high/medium/low/none
        {"recall": "most"},  # not a number
        {"levels": ["high", "none"], "used": [True]},  # lengths differ
    ],
)
def test_bench_file_rejects_malformed_labels_before_judging(tmp_path, fake_judges, labels):
    record = {**LABELLED[0], "labels": labels}
    data = _write_jsonl(tmp_path / "labelled.jsonl", [record])
    with pytest.raises(LocalJudgeError) as info:
        bench_file(
            data, tmp_path / "out", judges=[JudgeSettings(model="one")], open_judge=fake_judges
        )
    assert info.value.exit_code in (2, 3)  # a usage or data error: one line, not a traceback
    assert fake_judges.calls == []  # found before any judge is loaded


# --------------------------------------------------------------------------- judge vs judge


def test_judges_agreement_hand_computed(fast_bootstrap) -> None:
    # position, 2 pieces per item. Judge a: [T,F] [T,F] [F,T]; judge b: [T,F] [F,F] [F,T],
    # and b failed item 3 (a scored it), so 3 items and 6 verdicts are compared.
    # Pairs (a, b): TT FF TF FF FF TT -> agree 5 of 6. Confusion a=T: b=T 2, b=F 1; a=F: b=F 3.
    # p_o = 5/6; a: T 3/6, F 3/6; b: T 2/6, F 4/6; p_e = 1/2*1/3 + 1/2*2/3 = 1/2;
    # kappa = (5/6 - 1/2) / (1 - 1/2) = 2/3.
    a = [
        _row(0, "position", 1.0, _pos([True, False])),
        _row(1, "position", 1.0, _pos([True, False])),
        _row(2, "position", 0.5, _pos([False, True])),
        _row(3, "position", 0.0, _pos([False, False])),
    ]
    b = [
        _row(0, "position", 1.0, _pos([True, False])),
        _row(1, "position", 0.0, _pos([False, False])),
        _row(2, "position", 0.5, _pos([False, True])),
        _row(3, "position", None, error=True),
    ]
    report = judges_agreement({"a": a, "b": b, "c": a}, ["position"])
    assert list(report) == ["a | b", "a | c", "b | c"]
    ab = report["a | b"]["position"]
    assert ab["n_items"] == 3
    assert ab["verdicts"]["relevant"]["n_verdicts"] == 6
    assert ab["verdicts"]["relevant"]["kappa"]["value"] == pytest.approx(2 / 3, abs=TOL)
    assert ab["verdicts"]["relevant"]["accuracy"]["value"] == pytest.approx(5 / 6, abs=TOL)
    # scores (1, 1), (1, 0), (0.5, 0.5): MAE = (0 + 1 + 0) / 3
    assert ab["mae"]["value"] == pytest.approx(1 / 3, abs=TOL)
    ac = report["a | c"]["position"]  # a judge against itself
    assert ac["n_items"] == 4
    assert ac["verdicts"]["relevant"]["kappa"]["value"] == pytest.approx(1.0)
    assert ac["spearman"]["value"] == pytest.approx(1.0)
    assert ac["mae"]["value"] == 0.0
    assert ac["alpha"]["value"] == 1.0
    # scores (1, 1), (1, 0), (0.5, 0.5): the interval alpha of these two raters
    assert ab["alpha"]["value"] == pytest.approx(
        krippendorff_alpha_interval([1.0, 1.0, 0.5], [1.0, 0.0, 0.5]), abs=TOL
    )
    table = bench_table({"judges": {}, "judge_pairs": report})
    assert "judge vs judge" in table
    assert "a | b" in table
    assert "0.667" in table


def _alpha_by_definition(x, y):
    """Krippendorff's alpha from its coincidence-matrix definition (two raters, no gaps)."""
    pooled = [*x, *y]
    n = len(pooled)
    observed = sum(2 * (a - b) ** 2 for a, b in zip(x, y, strict=True)) / n
    expected = sum((u - v) ** 2 for i, u in enumerate(pooled) for j, v in enumerate(pooled)
                   if i != j) / (n * (n - 1))  # fmt: skip
    return 1 - observed / expected


@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=12).filter(
        lambda ps: len({v for p in ps for v in p}) > 1
    )
)
def test_krippendorff_alpha_matches_its_definition(pairs):
    x, y = [float(a) for a, _ in pairs], [float(b) for _, b in pairs]
    assert krippendorff_alpha_interval(x, y) == pytest.approx(_alpha_by_definition(x, y))


def test_krippendorff_alpha_known_values():
    assert krippendorff_alpha_interval([1, 2, 3], [1, 2, 4]) == pytest.approx(
        1 - (1 / 3) / (82 / 30)
    )
    assert krippendorff_alpha_interval([0.0, 0.5, 1.0], [0.0, 0.5, 1.0]) == 1.0
    assert krippendorff_alpha_interval([1.0, 1.0], [1.0, 1.0]) is None
    assert krippendorff_alpha_interval([1.0], [0.0]) is None
