"""localjudge.run.report.diff: pairing two runs, the paired statistics, flipped verdicts, the
refusal of different data, and the console and HTML views."""

from __future__ import annotations

import json
import statistics

import pytest

from localjudge.console import render
from localjudge.decisions import CLOSE_CALL_MARGINS
from localjudge.errors import UsageError
from localjudge.run.report.diff import Run, diff_runs, verdict_changes, wilcoxon
from localjudge.run.report.diff_console import diff_close_line, diff_tables
from localjudge.run.report.render import render_diff
from localjudge.run.summary import CLOSE_CALLS_WHY
from localjudge.stats.bootstrap import interval


def row(index, score, *, metric="position", id=None, verdicts=None, reason="r", error=None):
    return {
        "index": index,
        "id": id if id is not None else f"item{index}",
        "metric": metric,
        "score": score,
        "reason": reason,
        "verdicts": verdicts,
        "error": error,
    }


def run(rows, sha="s" * 64, path="run"):
    return Run(path, {"run": {"data_sha256": sha, "settings": {}, "judge": {}}}, rows)


def pos(*relevant):
    return [{"index": i, "reason": "why", "relevant": r} for i, r in enumerate(relevant)]


# --------------------------------------------------------------------------- statistics


def test_wilcoxon_exact_p_for_five_positive_differences():
    # every one of 2^5 sign patterns is equally likely under H0; two-sided: 2 / 32
    out = wilcoxon([0.1, 0.2, 0.3, 0.4, 0.5])
    assert out["p_value"] == pytest.approx(2 / 32)
    assert out["statistic"] == 0.0
    assert out["n_nonzero"] == 5


def test_wilcoxon_all_zero_differences_mean_no_evidence():
    assert wilcoxon([0.0, 0.0, 0.0]) == {"statistic": 0.0, "p_value": 1.0, "n_nonzero": 0}
    assert wilcoxon([]) is None


def test_wilcoxon_drops_zero_differences():
    assert wilcoxon([0.0, 0.1, 0.2, 0.3, 0.4, 0.5]) == wilcoxon([0.1, 0.2, 0.3, 0.4, 0.5])


def test_verdict_changes_ignore_reasons_probabilities_and_readings():
    a = [{"index": 0, "reason": "x", "relevant": True, "probs": {"true": 0.9}}]
    b = [{"index": 0, "reason": "other", "relevant": True, "probs": {"true": 0.6}}]
    assert verdict_changes(a, b) == []
    # readings move with the arithmetic (another machine, another thread count) as the
    # probabilities do; the decision is what counts
    a = [{"index": 0, "relevant": True, "readings": {"relevant": {"judged": 2.19}}}]
    b = [{"index": 0, "relevant": True, "readings": {"relevant": {"judged": 2.2}}}]
    assert verdict_changes(a, b) == []
    assert verdict_changes(pos(True, False), pos(True, True)) == [
        {"piece": 1, "a": {"relevant": False}, "b": {"relevant": True}}
    ]
    assert verdict_changes(pos(True), pos(True, False)) == [
        {"piece": 1, "a": None, "b": {"relevant": False}}
    ]
    assert verdict_changes(None, pos(True)) == []


# --------------------------------------------------------------------------- diff


def test_diff_pairs_items_and_gives_the_paired_statistics():
    scores_a = [0.0, 0.5, 1.0, 0.5, 0.25, 0.75]
    scores_b = [0.5, 0.5, 1.0, 1.0, 0.5, 0.5]
    a = run([row(i, s) for i, s in enumerate(scores_a)])
    b = run([row(i, s) for i, s in enumerate(scores_b)])
    d = diff_runs(a, b, resamples=500)
    m = d["metrics"]["position"]
    diffs = [y - x for x, y in zip(scores_a, scores_b, strict=True)]
    assert m["n_paired"] == 6
    assert m["mean_a"] == pytest.approx(statistics.fmean(scores_a))
    assert m["mean_b"] == pytest.approx(statistics.fmean(scores_b))
    assert m["mean_diff"] == pytest.approx(statistics.fmean(diffs))
    # the paired bootstrap: the one bootstrap over the per-item differences
    assert m["ci95"] == pytest.approx(interval(diffs, statistics.fmean, resamples=500))
    assert m["ci95"][0] <= m["mean_diff"] <= m["ci95"][1]
    assert (m["n_improved"], m["n_worsened"]) == (3, 1)
    assert m["wilcoxon"]["n_nonzero"] == 4
    # the largest change first, unchanged items left out
    assert [it["id"] for it in m["top"]] == ["item0", "item3", "item4", "item5"]
    assert m["top"][0]["delta"] == pytest.approx(0.5)
    assert d["items_only_in_a"] == d["items_only_in_b"] == []
    json.dumps(d, allow_nan=False)  # machine-readable as it is


def test_the_diff_is_seeded():
    a = run([row(i, i / 10) for i in range(8)])
    b = run([row(i, (i % 3) / 3) for i in range(8)])
    assert diff_runs(a, b) == diff_runs(a, b)
    assert (
        diff_runs(a, b)["metrics"]["position"]["ci95"]
        != diff_runs(a, b, seed=1)["metrics"]["position"]["ci95"]
    )


def test_flipped_verdicts_are_listed_with_both_reasons():
    a = run([row(0, 1.0, verdicts=pos(True, True), reason="both"), row(1, 0.5, verdicts=pos(True))])
    b = run([row(0, 0.5, verdicts=pos(True, False), reason="one"), row(1, 0.5, verdicts=pos(True))])
    m = diff_runs(a, b)["metrics"]["position"]
    assert m["n_flipped"] == 1
    [item] = m["top"]
    assert item["flipped"] == [{"piece": 1, "a": {"relevant": True}, "b": {"relevant": False}}]
    assert (item["reason_a"], item["reason_b"]) == ("both", "one")


def test_same_score_but_flipped_verdicts_still_listed():
    a = run([row(0, 0.5, verdicts=pos(True, False))])
    b = run([row(0, 0.5, verdicts=pos(False, True))])
    m = diff_runs(a, b)["metrics"]["position"]
    assert m["n_flipped"] == 1
    assert m["top"][0]["delta"] == 0.0
    assert m["wilcoxon"] == {"statistic": 0.0, "p_value": 1.0, "n_nonzero": 0}
    assert m["ci95"] is None  # one item: no interval


def test_top_limits_the_listed_changes():
    a = run([row(i, 0.0) for i in range(5)])
    b = run([row(i, i / 4) for i in range(5)])
    m = diff_runs(a, b, top=2)["metrics"]["position"]
    assert [it["id"] for it in m["top"]] == ["item4", "item3"]
    assert m["n_changed"] == 4


def test_failures_are_not_paired_but_reported():
    a = run([row(0, 0.5), row(1, None, error={"message": "too long"}), row(2, 1.0)])
    b = run([row(0, 0.5), row(1, 0.75), row(2, None, error={"message": "boom"})])
    m = diff_runs(a, b)["metrics"]["position"]
    assert m["n_paired"] == 1
    assert m["scored_only_in_a"] == ["item2"]
    assert m["scored_only_in_b"] == ["item1"]
    assert {it["id"]: (it["error_a"], it["error_b"]) for it in m["top"]} == {
        "item1": ("too long", None),
        "item2": (None, "boom"),
    }


def test_different_data_is_refused_without_force():
    a = run([row(0, 0.5)], sha="a" * 64)
    b = run([row(0, 0.5)], sha="b" * 64)
    with pytest.raises(UsageError, match="different data") as info:
        diff_runs(a, b)
    assert "--by-id" in info.value.hint


def test_force_matches_by_id_and_lists_items_in_one_run_only():
    a = run([row(0, 0.0, id="x"), row(1, 1.0, id="y"), row(2, 0.5, id="only-a")], sha="a" * 64)
    b = run([row(0, 1.0, id="y"), row(1, 0.5, id="x"), row(2, 0.5, id="only-b")], sha="b" * 64)
    d = diff_runs(a, b, force=True)
    assert d["matched_by"] == "id"
    assert d["items_only_in_a"] == ["only-a"]
    assert d["items_only_in_b"] == ["only-b"]
    m = d["metrics"]["position"]
    assert m["n_paired"] == 2
    assert m["mean_diff"] == pytest.approx(0.25)  # x: +0.5, y: 0


def test_force_refuses_duplicate_ids():
    a = run([row(0, 0.0, id="x"), row(1, 1.0, id="x")], sha="a" * 64)
    b = run([row(0, 0.0, id="x")], sha="b" * 64)
    with pytest.raises(UsageError, match="more than once"):
        diff_runs(a, b, force=True)


def test_metrics_in_one_run_only_are_named():
    a = run([row(0, 0.5), row(0, 0.5, metric="recall")])
    b = run([row(0, 0.5)])
    d = diff_runs(a, b)
    assert list(d["metrics"]) == ["position"]
    assert d["metrics_only_in_a"] == ["recall"]


# --------------------------------------------------------------------------- close calls

NEAR = round(min(CLOSE_CALL_MARGINS.values()) / 2, 4)


def close(verdicts, piece, distance):
    """``verdicts`` with piece ``piece`` a close call at ``distance``."""
    verdicts[piece]["close_call"] = {"relevant": distance}
    return verdicts


def test_a_close_call_mark_alone_is_no_flip():
    assert verdict_changes(close(pos(True), 0, NEAR), pos(True)) == []


def test_a_flipped_verdict_says_it_was_a_close_call_in_either_run():
    a = run(
        [row(0, 1.0, verdicts=close(pos(True, True), 1, NEAR)), row(1, 0.5, verdicts=pos(True))]
    )
    b = run([row(0, 0.5, verdicts=close(pos(True, False), 1, -NEAR)),
             row(1, 0.0, verdicts=pos(False))])  # fmt: skip
    m = diff_runs(a, b)["metrics"]["position"]
    assert m["n_flipped"] == 2
    assert m["n_flipped_close"] == 1
    by_id = {it["id"]: it["flipped"] for it in m["top"]}
    assert by_id["item0"] == [
        {
            "piece": 1,
            "a": {"relevant": True},
            "b": {"relevant": False},
            "close_call_a": {"relevant": NEAR},
            "close_call_b": {"relevant": -NEAR},
        }
    ]
    assert by_id["item1"] == [{"piece": 0, "a": {"relevant": True}, "b": {"relevant": False}}]
    text = render(diff_tables(diff_runs(a, b)))
    assert f"#1 (close call in A: relevant {NEAR:+.4f}; in B: relevant {-NEAR:+.4f})" in text
    assert diff_close_line(diff_runs(a, b)) == (
        f"close calls among the flipped verdicts: position 1 ({CLOSE_CALLS_WHY}; "
        "docs/reliability.md#close-calls)"
    )
    html = render_diff(diff_runs(a, b))
    assert f"close call in A: relevant {NEAR:+.4f}; in B: relevant {-NEAR:+.4f}" in html
    assert '<td class="close-count some">1</td>' in html


def test_close_in_one_run_only_and_no_close_flip_at_all():
    a = run([row(0, 1.0, verdicts=pos(True))])
    b = run([row(0, 0.0, verdicts=close(pos(False), 0, -NEAR))])
    [item] = diff_runs(a, b)["metrics"]["position"]["top"]
    assert "close_call_a" not in item["flipped"][0]
    assert "(close call in B: relevant" in render(diff_tables(diff_runs(a, b)))
    plain = diff_runs(
        run([row(0, 1.0, verdicts=pos(True))]), run([row(0, 0.0, verdicts=pos(False))])
    )
    assert plain["metrics"]["position"]["n_flipped_close"] == 0
    assert diff_close_line(plain) is None


# --------------------------------------------------------------------------- views


def test_console_view_is_plain_text_off_a_terminal():
    a = run([row(i, 0.0) for i in range(4)])
    b = run([row(i, 0.5, reason="better") for i in range(4)])
    text = render(diff_tables(diff_runs(a, b)))
    assert "\x1b[" not in text
    lines = text.splitlines()
    header = lines[1].split()
    assert header[:6] == ["metric", "n", "mean", "A", "mean", "B"]
    assert set(lines[2]) == {"-"}
    assert lines[3].split()[:5] == ["position", "4", "0.000", "0.500", "+0.500"]
    assert "better" in text


def test_html_view_is_escaped_and_offline():
    evil = "<script>alert(1)</script>"
    a = run([row(0, 0.0, id=evil, verdicts=pos(False))])
    b = run([row(0, 1.0, id=evil, reason=evil, verdicts=pos(True))])
    html = render_diff(diff_runs(a, b))
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "default-src 'none'" in html
    assert "relevant=no / relevant=yes" in html
