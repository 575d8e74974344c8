"""eval --labels / eval_file(labels=...): the judged labelled items, the prediction-powered
estimate in the summary, calibrated scores, a bad label refused before judging, and the
cut-offs given judging the data and the labelled items alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pipeline_rules import expected_recall, rule_reply

from localjudge.cli import main
from localjudge.decisions import Cutoffs
from localjudge.errors import DataError, UsageError
from localjudge.judge.protocol import Generation, SoftDecision
from localjudge.metrics import METRICS, ContextPosition, ContextRecall
from localjudge.run.evaluate.file_run import eval_file
from localjudge.stats.ppi import ppi_mean
from localjudge.testing import ScriptedJudge


def item(i: int, found: int) -> dict[str, Any]:
    """An item whose reference has four sentences, ``found`` of them in a context."""
    facts = [f"yes fact {i}-{k}." for k in range(4)]
    return {
        "id": f"i{i}",
        "user_input": f"question {i}?",
        "retrieved_contexts": [" ".join(facts[:found]) or "nothing", f"noise {i}"],
        "reference": " ".join(facts),
    }


DATA = [item(i, i % 5) for i in range(12)]
#: the human says one statement more is supported than the rule judge finds (a biased judge)
LABELLED = [
    {**item(100 + i, i % 4), "labels": {"recall": (i % 4 + 1) / 4, "relevant": [True, False]}}
    for i in range(8)
]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path / "data.jsonl", DATA), write(tmp_path / "labelled.jsonl", LABELLED)


def test_summary_carries_the_corrected_mean(tmp_path, files):
    data, labels = files
    out = tmp_path / "out"
    outcome = eval_file(
        data, out, judge=ScriptedJudge(rule_reply), metrics=[ContextRecall()], labels=labels
    )
    judged = [r["score"] for r in lines(out / "results.jsonl")]
    assert judged == pytest.approx([expected_recall(r) for r in DATA])
    labelled_rows = lines(out / "labelled.jsonl")
    assert [r["id"] for r in labelled_rows] == [r["id"] for r in LABELLED]
    human = [r["labels"]["recall"] for r in LABELLED]
    judge_l = [expected_recall(r) for r in LABELLED]
    stats = outcome.summary["metrics"]["recall"]
    want = ppi_mean(human, judge_l, judged)
    assert want is not None
    assert stats["ppi"] == want.as_dict()
    assert stats["ppi"]["judge_bias"] == pytest.approx(-0.25)
    assert stats["mean"] == pytest.approx(sum(judged) / len(judged))  # the judge's mean stays
    assert stats["ppi"]["estimate"] > stats["mean"]  # corrected upwards by the labelled bias
    assert outcome.summary["run"]["settings"]["labels"] == str(labels)
    assert json.loads((out / "summary.json").read_text("utf-8"))["metrics"]["recall"]["ppi"]
    assert "calibrated_score" not in lines(out / "results.jsonl")[0]


def test_isotonic_adds_a_column_and_keeps_score(tmp_path, files):
    data, labels = files
    out = tmp_path / "out"
    outcome = eval_file(
        data,
        out,
        judge=ScriptedJudge(rule_reply),
        metrics=[ContextRecall()],
        labels=labels,
        isotonic=True,
    )
    assert outcome.summary["run"]["settings"]["isotonic"] is True
    rows = lines(out / "results.jsonl")
    assert [r["score"] for r in rows] == pytest.approx([expected_recall(r) for r in DATA])
    pairs = sorted((r["score"], r["calibrated_score"]) for r in rows)
    assert [c for _, c in pairs] == sorted(c for _, c in pairs)  # monotone in the score
    by_score = dict(pairs)
    assert by_score[0.0] == pytest.approx(0.25)  # the human says one more statement holds
    assert by_score[0.5] == pytest.approx(0.75)


def test_isotonic_without_labels_is_a_usage_error(tmp_path, files):
    data, _ = files
    with pytest.raises(UsageError, match="--isotonic needs --labels"):
        eval_file(
            data, tmp_path / "o", judge=ScriptedJudge([]), metrics=[ContextRecall()], isotonic=True
        )


def calibrated(rows: list[dict[str, Any]]) -> list[tuple[float, float | None]]:
    """Each row's score and calibrated score (a KeyError when a row has no calibrated score)."""
    return [(r["score"], r["calibrated_score"]) for r in rows]


def test_the_old_keyword_calibrate_is_refused(tmp_path, files):
    data, labels = files
    with pytest.raises(TypeError, match="calibrate"):
        eval_file(
            data,
            tmp_path / "old",
            judge=ScriptedJudge(rule_reply),
            metrics=[ContextRecall()],
            labels=labels,
            calibrate=True,
        )


def cli_eval(tmp_path: Path, files: tuple[Path, Path], *extra: str) -> Any:
    data, labels = files
    args = ["eval", str(data), "-o", str(tmp_path / "out"), "--labels", str(labels), "-q"]
    return CliRunner().invoke(
        main,
        [*args, "--metric", "recall", "--overwrite", *extra],
        obj={"open_judge": lambda settings: ScriptedJudge(rule_reply)},
        catch_exceptions=False,
    )


def test_cli_isotonic_and_the_refused_old_spelling_calibrate(tmp_path, files):
    assert "--isotonic" in CliRunner().invoke(main, ["eval", "--help"]).output
    new = cli_eval(tmp_path, files, "--isotonic")
    assert new.exit_code == 0, new.output
    rows = calibrated(lines(tmp_path / "out" / "results.jsonl"))
    assert all(c is not None for _, c in rows)
    old = cli_eval(tmp_path, files, "--calibrate")
    assert old.exit_code == 2
    assert "No such option: --calibrate" in old.stderr


def test_a_bad_label_is_refused_before_anything_is_judged(tmp_path, files):
    # as bench and calibrate refuse it (localjudge.run.labels): a typo never silently shrinks
    # the labelled items the estimate rests on
    data, _ = files
    broken = [dict(LABELLED[0], labels="not an object"), *LABELLED[1:]]
    labels = write(tmp_path / "broken.jsonl", broken)
    out = tmp_path / "out"
    judge = ScriptedJudge(rule_reply)
    with pytest.raises(
        DataError, match=r'item "i100" \(line 1\): labels must be an object, got str'
    ):
        eval_file(data, out, judge=judge, metrics=[ContextRecall()], labels=labels)
    assert judge.calls == []
    assert not (out / "results.jsonl").exists()


def test_a_metric_without_labels_gets_no_estimate(tmp_path, files):
    data, _ = files
    labels = write(tmp_path / "l.jsonl", [{**r, "labels": {"recall": 0.5}} for r in LABELLED])
    outcome = eval_file(
        data,
        tmp_path / "out",
        judge=ScriptedJudge(rule_reply),
        metrics=[ContextRecall(), ContextPosition()],
        labels=labels,
    )
    assert outcome.summary["metrics"]["position"]["ppi"] is None
    assert outcome.summary["metrics"]["recall"]["ppi"] is not None


def test_cli_prints_both_means(tmp_path, files):
    data, labels = files
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["eval", str(data), "-o", str(out), "--labels", str(labels), "--metric", "recall"],
        obj={"open_judge": lambda settings: ScriptedJudge(rule_reply)},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert "human-scale mean" in result.output
    estimate = json.loads((out / "summary.json").read_text("utf-8"))["metrics"]["recall"]["ppi"]
    assert f"{estimate['estimate']:.3f}" in result.output
    lo, hi = estimate["data_ci95"]
    assert "these items" in result.output  # the column of the interval for exactly this data
    [hard] = [c for c in map(str.split, result.output.splitlines()) if c[:2] == ["recall", "hard"]]
    assert hard[2] == f"{estimate['estimate']:.3f}"
    assert f"{lo:.3f}-{hi:.3f}" in hard


def test_report_shows_the_corrected_mean_beside_the_raw_one(tmp_path, files):
    from localjudge.run.report.render import render_report  # noqa: PLC0415

    data, labels = files
    out = tmp_path / "out"
    outcome = eval_file(
        data, out, judge=ScriptedJudge(rule_reply), metrics=[ContextRecall()], labels=labels
    )
    page = render_report(out)
    assert "Human-scale mean, corrected by labelled items" in page
    stats = outcome.summary["metrics"]["recall"]
    assert f"{stats['ppi']['estimate']:.3f}" in page
    lo, hi = stats["ppi"]["data_ci95"]
    assert f"[{lo:.3f}, {hi:.3f}]" in page
    plain = tmp_path / "plain"
    eval_file(data, plain, judge=ScriptedJudge(rule_reply), metrics=[ContextRecall()])
    assert "Human-scale mean" not in render_report(plain)


def test_soft_scores_give_their_own_estimate_and_calibration(tmp_path, files):
    data, labels = files
    out = tmp_path / "out"
    outcome = eval_file(
        data,
        out,
        judge=ScriptedJudge(rule_reply, certain=True),
        metrics=[ContextRecall()],
        labels=labels,
        isotonic=True,
    )
    stats = outcome.summary["metrics"]["recall"]
    assert stats["ppi_soft"] is not None
    # a certain judge's soft scores equal its scores, so both estimates agree
    assert stats["ppi_soft"]["estimate"] == pytest.approx(stats["ppi"]["estimate"])
    rows = lines(out / "results.jsonl")
    assert all(r["soft_score"] is not None for r in rows)
    assert {r["soft_score"]: r["calibrated_score"] for r in rows}[0.0] == pytest.approx(0.25)


class Hesitant(ScriptedJudge):
    """The rule judge, 70% sure of a relevant passage and 20% of an irrelevant one: a cut-off
    of 0 makes every passage relevant, one of 1 none, and its argmax follows the rules."""

    def __init__(self) -> None:
        super().__init__(rule_reply)

    def generate(self, prompt: Any, schema: Any) -> Any:
        out = super().generate(prompt, schema)
        if schema.__name__ != "RelevantDecision":
            return out
        relevant = out.value.relevant == "yes"
        p_yes = 0.7 if relevant else 0.2
        chosen = '"yes"' if relevant else '"no"'
        decision = SoftDecision("relevant", {'"yes"': p_yes, '"no"': 1 - p_yes}, chosen)
        return Generation(out.value, out.raw, out.stats, decisions=(decision,))


@pytest.mark.parametrize(("cut", "relevant"), [(0.0, True), (1.0, False)])
def test_the_cutoffs_given_judge_the_data_the_labels_and_the_correction(tmp_path, cut, relevant):
    data = write(tmp_path / "data.jsonl", DATA)
    people = [
        {**r, "labels": {"relevant": [k % 2 == 0, k % 3 == 0]}} for k, r in enumerate(LABELLED)
    ]
    labels = write(tmp_path / "labelled.jsonl", people)
    out = tmp_path / "out"
    # the items have a reference: position asks its EXPECTED ANSWER kind
    kind = "position.relevant_answer"
    cutoffs = Cutoffs.from_json({kind: cut}, "test")
    outcome = eval_file(
        data, out, judge=Hesitant(), metrics=[ContextPosition()], labels=labels, cutoffs=cutoffs
    )
    recorded = {"cutoffs": {kind: cut}, "cutoffs_source": {kind: "test"}}
    rows, labelled_rows = lines(out / "results.jsonl"), lines(out / "labelled.jsonl")
    assert len(rows) == len(DATA)
    assert len(labelled_rows) == len(LABELLED)
    score = 1.0 if relevant else 0.0  # every passage relevant, or none
    for row in rows + labelled_rows:  # the data as the labelled items: by the cut-off given
        assert [v["relevant"] for v in row["verdicts"]] == [relevant, relevant], row["id"]
        assert row["score"] == score
        assert {k: row["settings"][k] for k in recorded} == recorded
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["metrics"] == outcome.summary["metrics"]
    stats = summary["metrics"]["position"]
    assert stats["mean"] == score
    settings = summary["run"]["settings"]["metrics"]["position"]
    assert {k: settings[k] for k in recorded} == recorded
    # the correction pairs the labelled items' scores with the data's, both by the cut-off
    human = [METRICS["position"].human_score(r["labels"]) for r in people]
    want = ppi_mean(human, [r["score"] for r in labelled_rows], [r["score"] for r in rows])
    assert want is not None
    assert stats["ppi"] == want.as_dict()
    assert stats["ppi"]["judge_bias"] == pytest.approx(score - sum(human) / len(human))
