"""localjudge calibrate: cut-offs fitted on a labelled file, checked on held-out halves, stored
for the judge, and used (and recorded) by the next eval; changing them re-judges nothing."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from localjudge.cli import main
from localjudge.decisions import Cutoffs, Provenance, judge_cutoffs, store_cutoffs, user_cutoffs
from localjudge.errors import UsageError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import open_cache
from localjudge.judge.protocol import Generation, SoftDecision
from localjudge.judge.schemas import parse_output
from localjudge.metrics import ContextPosition
from localjudge.run.calibrate.calibration import (
    calibrate,
    check_labels,
    fit_cutoffs,
    judge_labelled,
)
from localjudge.run.calibrate.check import Group, group_of
from localjudge.run.calibrate.table import calibration_table
from localjudge.run.evaluate.evaluation import evaluate
from localjudge.testing import ScriptedJudge, prompt_data, says_no


class Hesitant(ScriptedJudge):
    """Says no to everything, but gives passages and statements with 'yes' in them a higher
    P(yes), always below 0.5: its baseline is useless, a cut-off makes it perfect."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(says_no, certain=False, **kwargs)

    def generate(self, prompt: Any, schema: Any) -> Generation[Any]:
        out = super().generate(prompt, schema)
        data = prompt_data(list(prompt))
        text = data.get("STATEMENT") or data.get("PASSAGE") or ""
        p = 0.3 if "yes" in text else 0.05
        key = next(iter(schema.model_fields))
        if schema.__name__ == "GradeDecision":
            probs = {"0": 0.5, "1": 0.3, "2": 0.1, "3": 0.1}
            if "yes" in text:
                probs = {"0": 0.4, "1": 0.2, "2": 0.2, "3": 0.2}
            decisions = (SoftDecision(key, probs, "0"),)
        elif key in ("supported", "relevant", "used", "repeats"):
            decisions = (SoftDecision(key, {'"yes"': p, '"no"': 1 - p}, '"no"'),)
        else:
            decisions = ()
        assert parse_output(schema, out.raw) == out.value
        return Generation(out.value, out.raw, out.stats, decisions=decisions, reading=out.reading)


class Reader(Hesitant):
    """Hesitant, but its P(yes) of a passage says nothing (0.2 for each); how well a passage
    predicts the QUESTION does: after a passage with 'yes' in it the QUESTION reads better than
    after none, after any other no better."""

    def __init__(self) -> None:
        super().__init__(reading=self.read)

    @staticmethod
    def read(messages: list[dict[str, str]], span: str) -> float:
        passage = prompt_data(messages).get("PASSAGE", "")
        return -1.0 if "yes" in passage else -3.0 + 0.01 * (len(passage) % 7)

    def generate(self, prompt: Any, schema: Any) -> Generation[Any]:
        out = super().generate(prompt, schema)
        if schema.__name__ != "RelevantDecision":
            return out
        flat = (SoftDecision("relevant", {'"yes"': 0.2, '"no"': 0.8}, '"no"'),)
        return Generation(out.value, out.raw, out.stats, decisions=flat, reading=out.reading)


def labelled(n: int = 40) -> list[dict[str, Any]]:
    """Items whose 'yes' passages and statements people call relevant and supported."""
    out = []
    for i in range(n):
        yes = i % 2 == 0
        out.append(
            {
                "id": f"i{i}",
                "user_input": f"question {i}?",
                "retrieved_contexts": [f"{'yes' if yes else 'no'} fact {i}.", f"noise {i}"],
                "reference": f"{'yes' if yes else 'no'} claim {i}.",
                "labels": {"recall": 1.0 if yes else 0.0, "relevant": [yes, False]},
                "source": {"qid": f"q{i // 2}"},
            }
        )
    return out


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "models.json"
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(path))
    return path


def test_calibrate_fits_cutoffs_that_the_held_out_half_confirms(registry):
    found = calibrate(labelled(), Hesitant(), metrics=["recall", "position"])
    # the items have a reference: position asks (and fits) its EXPECTED ANSWER phrasing
    assert set(found.cutoffs.values) == {"recall.supported", "position.relevant_answer"}
    for kind, check in found.checks.items():
        mean = check["mean"]
        assert mean["argmax"]["kappa"] == pytest.approx(0.0), kind  # it always says no
        assert mean["fitted"]["kappa"] == pytest.approx(1.0), kind
        assert 0.05 < found.cutoffs.values[kind][0] <= 0.3
        for fold in check["folds"]:
            assert fold["fitted"]["kappa"]["ci95"] is not None
        assert found.rules[kind].store  # the paired lower bound is above 0
        assert found.cutoffs.source(kind).heldout["value"] == pytest.approx(1.0)
    assert found.stored() == found.cutoffs
    assert not registry.exists()  # the library call stores nothing
    # the question-only phrasing is another kind, fitted on items without an expected answer
    bare = [{k: v for k, v in r.items() if k != "reference"} for r in labelled()]
    only = calibrate(bare, Hesitant(), metrics=["position"])
    assert set(only.cutoffs.values) == {"position.relevant"}


def test_calibrate_fits_a_combination_of_readings_under_the_same_rule(registry):
    bare = [{k: v for k, v in r.items() if k != "reference"} for r in labelled()]
    found = calibrate(bare, Reader(), metrics=["position"], current=Cutoffs())
    kind = "position.relevant"
    assert not found.rules[kind].store  # cut-offs on a P(yes) that says nothing gain nothing
    combined = found.combined[kind]
    assert combined.readings == ("judged", "question", "question_alone")
    assert combined.rule.store
    assert combined.rule.fitted == pytest.approx(1.0)  # held out: fitted on the other half
    assert combined.rule.current == pytest.approx(0.0)
    stored = found.stored()
    assert kind in stored.combinations
    assert stored.source(kind).heldout["readings"] == ["judged", "question", "question_alone"]
    assert found.kept() == []
    table = calibration_table(found)
    assert "| position.relevant | judged + question + question_alone | kappa |" in table
    # the stored combination decides as the labels do, from the cached readings
    results = list(evaluate(bare, [ContextPosition()], Reader(), cutoffs=stored))
    for record, res in zip(bare, results, strict=True):
        assert res.result is not None
        judged = [v["relevant"] for v in res.result.verdicts]
        assert judged == record["labels"]["relevant"]
    # a judge without readings gets no combination, and nothing else changes
    assert calibrate(bare, Hesitant(), metrics=["position"]).combined == {}


def test_the_cli_prints_the_check_stores_the_cutoffs_and_eval_uses_them(tmp_path, registry):
    data = write_labelled(tmp_path / "labelled.jsonl", labelled())
    judge = Hesitant()
    obj = {"open_judge": lambda settings: judge}
    runner = CliRunner()
    dry = runner.invoke(main, ["calibrate", str(data), "--dry-run", "--no-cache"], obj=obj)
    assert dry.exit_code == 0, dry.output
    assert "position.relevant_answer" in dry.output
    assert "neutral" in dry.output
    assert "nothing stored (--dry-run)" in dry.output
    assert not registry.exists()
    assert "in-sample" not in dry.output  # nothing stored: nothing to measure in-sample
    done = runner.invoke(main, ["calibrate", str(data), "--no-cache"], obj=obj)
    assert done.exit_code == 0, done.output
    assert "note: agreement measured later on this same file is in-sample" in done.output
    stored = user_cutoffs(judge.identity.sha256)
    assert set(stored.values) >= {"recall.supported", "position.relevant_answer"}
    source = stored.source("position.relevant_answer")
    assert (source.origin, source.file) == ("calibrate", "labelled.jsonl")
    assert source.sha256 == hashlib.sha256(data.read_bytes()).hexdigest()
    assert judge_cutoffs(judge.identity) == stored
    out = tmp_path / "out"
    ran = runner.invoke(
        main, ["eval", str(data), "-o", str(out), "--no-cache", "-q", "--metric", "position"],
        obj=obj,
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    # the fitted cut-off calls the 'yes' passages relevant, as people do
    assert all(r["verdicts"][0]["relevant"] == (int(r["id"][1:]) % 2 == 0) for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert "position.relevant_answer" in json.dumps(summary)
    assert "in-sample" not in ran.output
    # the file calibrated on, as eval's labelled file: its figures are in-sample, and eval says so
    again = runner.invoke(
        main,
        ["eval", str(data), "-o", str(tmp_path / "in"), "--no-cache", "-q", "--metric",
         "position", "--labels", str(data)],
        obj=obj,
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "warning: labelled.jsonl is the file the judge's cut-offs of" in again.output
    assert "position.relevant_answer" in again.output
    assert "in-sample" in again.output


def test_changing_cutoffs_rejudges_nothing(tmp_path, registry):
    records = [{k: v for k, v in r.items() if k not in ("labels", "source")} for r in labelled(6)]
    cache = open_cache(tmp_path / "calls.sqlite3")
    judge = CachingJudge(Hesitant(), cache)
    bare = ContextPosition(reasons=False)
    first = list(evaluate(records, [bare], judge, cutoffs=Cutoffs()))
    calls = len(judge.inner.calls)
    cuts = Cutoffs.from_json({"position.relevant_answer": 0.2}, "test")
    second = list(evaluate(records, [bare], judge, cutoffs=cuts))
    assert len(judge.inner.calls) == calls  # every call came from the cache
    assert [v["relevant"] for r in first for v in r.result.verdicts] == [False] * 12
    flipped = [i % 2 == 0 and k == 0 for i in range(6) for k in range(2)]
    assert [v["relevant"] for r in second for v in r.result.verdicts] == flipped
    # the soft values are the same: only the hard verdicts moved
    assert [r.result.soft_value for r in first] == [r.result.soft_value for r in second]
    # with reasons on, a reason explains the verdict made: only the flipped ones are asked anew
    list(evaluate(records, [ContextPosition(reasons=True)], judge, cutoffs=Cutoffs()))
    calls = len(judge.inner.calls)
    list(evaluate(records, [ContextPosition(reasons=True)], judge, cutoffs=cuts))
    assert len(judge.inner.calls) - calls == sum(flipped)


def test_stored_cutoffs_merge_kind_by_kind_and_a_bad_entry_names_itself(registry):
    store_cutoffs("a" * 64, Cutoffs.from_json({"recall.supported": 0.2}, "one"))
    store_cutoffs("a" * 64, Cutoffs.from_json({"position.relevant": 0.3}, "two"))
    assert user_cutoffs("a" * 64).as_json() == {
        "position.relevant": 0.3,
        "recall.supported": 0.2,
    }
    assert not user_cutoffs("b" * 64)
    data = json.loads(registry.read_text())
    data["cutoffs"]["a" * 64]["values"] = {"recall.supported": "high"}
    registry.write_text(json.dumps(data))
    from localjudge.errors import ModelError  # noqa: PLC0415

    with pytest.raises(ModelError, match=r"recall\.supported"):
        user_cutoffs("a" * 64)


class Decisive(Hesitant):
    """Already right at its baseline: P(yes) 0.9 for the 'yes' passages and statements, 0.1
    for the others. A fitted cut-off can only tie it, so the rule stores nothing."""

    def generate(self, prompt: Any, schema: Any) -> Generation[Any]:
        out = super().generate(prompt, schema)
        if not out.decisions or schema.__name__ == "GradeDecision":
            return out
        [d] = out.decisions
        p = 0.9 if d.probs['"yes"'] > 0.1 else 0.1
        return Generation(
            out.value,
            out.raw,
            out.stats,
            decisions=(
                SoftDecision(d.key, {'"yes"': p, '"no"': 1 - p}, '"yes"' if p > 0.5 else '"no"'),
            ),
        )


def test_a_gain_the_rule_does_not_confirm_is_stored_only_anyway(tmp_path, registry):
    data = write_labelled(tmp_path / "labelled.jsonl", labelled())
    judge = Decisive()
    obj = {"open_judge": lambda settings: judge}
    runner = CliRunner()
    kept = runner.invoke(main, ["calibrate", str(data), "--no-cache"], obj=obj)
    assert kept.exit_code == 0, kept.output
    assert "kept: recall.supported: the held-out gain is not confirmed" in kept.output
    assert "no: kept" in kept.output
    assert "nothing stored" in kept.output
    assert not user_cutoffs(judge.identity.sha256)
    forced = runner.invoke(main, ["calibrate", str(data), "--no-cache", "--store-anyway"], obj=obj)
    assert forced.exit_code == 0, forced.output
    assert "yes (--store-anyway)" in forced.output
    assert set(user_cutoffs(judge.identity.sha256).values) == {
        "recall.supported",
        "position.relevant_answer",
    }


def test_calibrate_force_the_old_spelling_of_store_anyway_is_refused(tmp_path, registry):
    data = write_labelled(tmp_path / "labelled.jsonl", labelled())
    judge = Decisive()
    obj = {"open_judge": lambda settings: judge}
    old = CliRunner().invoke(main, ["calibrate", str(data), "--no-cache", "--force"], obj=obj)
    assert old.exit_code == 2
    assert "No such option: --force" in old.stderr
    assert judge.calls == []
    assert not user_cutoffs(judge.identity.sha256)


def test_reset_restores_the_shipped_cutoffs_kind_by_kind(registry):
    judge = Hesitant()
    sha = judge.identity.sha256
    mine = Cutoffs.from_json({"recall.supported": 0.2, "position.relevant": 0.3}, "mine")
    store_cutoffs(sha, mine)
    store_cutoffs("b" * 64, mine)  # another judge's stay
    obj = {"open_judge": lambda settings: judge}
    runner = CliRunner()
    one = runner.invoke(main, ["calibrate", "--reset", "--metric", "recall"], obj=obj)
    assert one.exit_code == 0, one.output
    assert "removed recall.supported" in one.output
    assert set(user_cutoffs(sha).values) == {"position.relevant"}
    every = runner.invoke(main, ["calibrate", "--reset"], obj=obj)
    assert every.exit_code == 0, every.output
    assert not user_cutoffs(sha)
    assert judge_cutoffs(judge.identity) == Cutoffs()  # the scripted judge ships none
    assert user_cutoffs("b" * 64) == mine
    again = runner.invoke(main, ["calibrate", "--reset"], obj=obj)
    assert "no stored cut-offs" in again.output
    missing = runner.invoke(main, ["calibrate"], obj=obj)
    assert missing.exit_code == 2
    assert "needs LABELS" in missing.output


def write_labelled(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path


class Factory:
    """A judge factory for the CLI that counts how often it was asked for a judge."""

    def __init__(self) -> None:
        self.opened = 0
        self.judge = Hesitant()

    def __call__(self, settings: Any) -> Hesitant:
        self.opened += 1
        return self.judge


def test_limit_must_be_at_least_one(tmp_path, registry):
    data = write_labelled(tmp_path / "labelled.jsonl", labelled())
    factory = Factory()
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--limit", "0", "--no-cache"], obj={"open_judge": factory}
    )
    assert result.exit_code == 2
    assert "--limit" in result.output
    assert factory.opened == 0


def with_labels(n: int, **labels: Any) -> list[dict[str, Any]]:
    """labelled(), item ``i{n}``'s labels replaced by ``labels``."""
    records = labelled()
    records[n]["labels"] = labels
    return records


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"relevant": ["yes", "no"]}, 'labels.relevant[0] is "yes"; expected true, false, 1 or 0'),
        ({"relevant": [True, 2]}, "labels.relevant[1] is 2; expected true, false, 1 or 0"),
        ({"relevant": [True]}, "labels.relevant has 1 entries for 2 retrieved_contexts"),
        ({"relevant": True}, "labels.relevant must be a non-empty list, got true"),
        ({"recall": "yes"}, 'labels.recall must be a number in [0, 1], got "yes"'),
        ({"recall": 2}, "labels.recall must be a number in [0, 1], got 2"),
        ({"recall": True}, "labels.recall must be a number in [0, 1], got true"),
    ],
)
def test_a_refused_label_names_item_line_and_field_before_the_judge_loads(
    tmp_path, registry, labels, message
):
    data = write_labelled(tmp_path / "labelled.jsonl", with_labels(3, **labels))
    factory = Factory()
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--dry-run", "--no-cache"], obj={"open_judge": factory}
    )
    assert result.exit_code == 2, result.output
    assert f'localjudge: error: {data}: item "i3" (line 4): {message}' in result.output
    assert "accepted labels:" in result.output  # the hint lists the spellings
    assert factory.opened == 0
    assert factory.judge.calls == []


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"levels": ["high", "High"]}, 'labels.levels[1] is "High"; expected high, medium'),
        ({"levels": [4, 0]}, "labels.levels[0] is 4; expected high, medium, low, none or 3"),
        ({"levels": [True, 0]}, "labels.levels[0] is true"),
        ({"used": ["no", 1]}, 'labels.used[0] is "no"; expected true, false, 1 or 0'),
    ],
)
def test_relevance_labels_are_refused_too(tmp_path, registry, labels, message):
    data = write_labelled(tmp_path / "labelled.jsonl", with_labels(0, **labels))
    factory = Factory()
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--no-cache"], obj={"open_judge": factory}
    )
    assert result.exit_code == 2, result.output
    assert f'item "i0" (line 1): {message}' in result.output
    assert factory.opened == 0


def test_labels_not_an_object_and_a_count_of_the_other_problems(tmp_path, registry):
    records = with_labels(1, relevant=["no", "no"])
    records[0]["labels"] = ["relevant"]
    records[5]["labels"] = {"recall": -1}
    data = write_labelled(tmp_path / "labelled.jsonl", records)
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--no-cache"], obj={"open_judge": Factory()}
    )
    assert result.exit_code == 2
    assert 'item "i0" (line 1): labels must be an object, got list (and 2 more)' in result.output


def test_the_library_refuses_a_label_before_judging(registry):
    judge = Hesitant()
    with pytest.raises(UsageError, match=r'item "i3" \(record #3\): labels\.relevant\[0\]'):
        calibrate(with_labels(3, relevant=["yes", "no"]), judge)
    assert judge.calls == []


def test_numbers_for_flags_and_trec_grades_for_levels_fit_as_their_names_do(registry):
    def relevance_labelled(numbers: bool) -> list[dict[str, Any]]:
        records = labelled()
        for n, r in enumerate(records):
            yes = n % 2 == 0
            r["response"] = f"answer {n}."
            if numbers:
                r["labels"] = {"relevant": [int(yes), 0], "levels": [3 if yes else 1, 0],
                               "used": [int(yes), 0]}  # fmt: skip
            else:
                r["labels"] = {"relevant": [yes, False], "used": [yes, False],
                               "levels": ["high" if yes else "low", "none"]}  # fmt: skip
        return records

    named = calibrate(relevance_labelled(False), Hesitant(), metrics=["position", "relevance"])
    numbered = calibrate(relevance_labelled(True), Hesitant(), metrics=["position", "relevance"])
    assert set(named.checks) == {"position.relevant_answer", "relevance.grade", "relevance.used"}
    assert numbered.cutoffs.values == named.cutoffs.values
    assert numbered.checks == named.checks


def test_shares_of_recall_are_left_out_and_counted(tmp_path, registry):
    records = labelled()
    for r in records[:3]:
        r["labels"] = {"recall": 0.5}
    data = write_labelled(tmp_path / "labelled.jsonl", records)
    factory = Factory()
    result = CliRunner().invoke(
        main,
        ["calibrate", str(data), "--dry-run", "--no-cache", "--metric", "recall"],
        obj={"open_judge": factory},
    )
    assert result.exit_code == 0, result.output
    assert "left out: recall.supported: 3 items labelled with a share between 0 and 1" in (
        result.output
    )
    # the items left out are not judged
    prompts = [c.messages[-1]["content"] for c in factory.judge.calls]
    assert prompts
    assert not [p for p in prompts if any(f"claim {n}." in p for n in range(3))]


@pytest.mark.parametrize(
    ("records", "args", "message"),
    [
        (
            [{**r, "labels": {"recall": 0.5}} for r in labelled()],
            [],
            "nothing to fit cut-offs on for recall, position, relevance: recall.supported: no "
            "item has labels.recall 0 or 1 (40 shares between 0 and 1 left out); "
            "position.relevant: no item has labels.relevant",
        ),
        (labelled(), ["--metric", "relevance"], "relevance.grade: no item has labels.levels"),
        (labelled(6), ["--metric", "position"], "position.relevant_answer: 12 labelled decisions"),
        ([{k: v for k, v in r.items() if k != "labels"} for r in labelled()], [],
         "no record has a 'labels' object"),
    ],
)  # fmt: skip
def test_nothing_to_fit_on_is_said_before_the_judge_loads(
    tmp_path, registry, records, args, message
):
    data = write_labelled(tmp_path / "labelled.jsonl", records)
    factory = Factory()
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--no-cache", *args], obj={"open_judge": factory}
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert factory.opened == 0


def asking(questions: int, n: int = 40) -> list[dict[str, Any]]:
    """labelled(n) without query ids: item i asks question ``i % questions``."""
    records = labelled(n)
    for i, r in enumerate(records):
        del r["source"]
        r["user_input"] = f"question {i % questions}?"
    return records


def test_items_asking_one_question_stay_on_one_side_of_the_split(registry):
    found = calibrate(asking(10), Hesitant(), metrics=["position"])
    assert found.grouped == "grouped by user_input: 10 groups of 40 items"
    folds = found.checks["position.relevant_answer"]["folds"]
    # each half holds 5 questions, not 20 of the 40 items (a question on both sides)
    assert [fold["fitted"]["groups"] for fold in folds] == [5, 5]
    assert "grouped by user_input: 10 groups of 40 items" in calibration_table(found)


def test_an_items_group_is_its_qid_else_group_else_question_else_id():
    base = {"id": "a", "user_input": "  Where  is it? "}
    assert group_of({**base, "source": {"qid": 7}, "group": "g"}) == Group("7", "source.qid")
    assert group_of({**base, "group": "g"}) == Group("g", "group")
    assert group_of({**base, "source": {"other": 1}}) == Group("Where is it?", "user_input")
    assert group_of({"id": "a"}) == Group("a", "id")
    assert group_of({}, 3) == Group("#3", "id")


def test_mixed_records_are_counted_per_way(registry):
    records = labelled()
    for r in records[20:]:
        del r["source"]
    found = calibrate(records, Hesitant(), metrics=["position"])
    assert found.grouped == (
        "grouped by source.qid: 10 groups of 20 items, by user_input: 20 groups of 20 items"
    )


def test_one_group_is_refused_before_the_judge_loads(tmp_path, registry):
    data = write_labelled(tmp_path / "labelled.jsonl", asking(1))
    factory = Factory()
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--no-cache"], obj={"open_judge": factory}
    )
    assert result.exit_code == 2, result.output
    assert (
        "position.relevant_answer: grouped by user_input: 1 group of 40 items; the held-out check "
        "needs at least 4 groups, 2 on each side of its split"
    ) in result.output
    assert factory.opened == 0
    judge = Hesitant()
    with pytest.raises(UsageError, match="grouped by user_input: 3 groups of 40 items"):
        calibrate(asking(3), judge)
    assert judge.calls == []


def test_a_kind_with_too_few_groups_is_left_out_unjudged(tmp_path, registry):
    records = labelled()
    for i, r in enumerate(records):
        if i < 12:
            r["source"] = {"qid": f"g{i % 3}"}
        else:
            del r["labels"]["relevant"]
    data = write_labelled(tmp_path / "labelled.jsonl", records)
    factory = Factory()
    result = CliRunner().invoke(
        main, ["calibrate", str(data), "--dry-run", "--no-cache"], obj={"open_judge": factory}
    )
    assert result.exit_code == 0, result.output
    assert (
        "not fitted: position.relevant_answer: grouped by source.qid: 3 groups of 12 items; the "
        "held-out check needs at least 4 groups"
    ) in result.output
    assert "cut-offs fitted on the whole file: recall.supported = " in result.output
    assert {c.schema.__name__ for c in factory.judge.calls} == {"SupportedDecision"}
    assert "not fitted: relevance" not in result.output  # a kind nobody labelled goes unsaid


def test_fit_cutoffs_leaves_out_a_kind_whose_split_has_a_side_under_two_groups(registry):
    records = asking(1)
    results = judge_labelled(records, Hesitant(), metrics=["position"])
    found = fit_cutoffs(records, results, origin=Provenance("test"))
    assert not found.cutoffs
    assert found.skipped["position.relevant_answer"].startswith("1 group of labelled decisions; ")


def test_position_fits_each_phrasing_on_the_items_asked_it(registry):
    """Items with an expected answer are asked (and fitted) another prompt than those without:
    a cut-off is never applied to a prompt it was not fitted on."""
    records = labelled()
    for r in records[:20]:
        del r["reference"]
    check = check_labels(records, ["position"])
    assert set(check.usable["position.relevant"]) == set(range(20))
    assert set(check.usable["position.relevant_answer"]) == set(range(20, 40))
    found = calibrate(records, Hesitant(), metrics=["position"])
    assert {k: r.n for k, r in found.rules.items()} == {
        "position.relevant": 40,
        "position.relevant_answer": 40,
    }
    only_bare = [{k: v for k, v in r.items() if k != "reference"} for r in labelled()]
    with pytest.raises(UsageError) as refused:
        check_labels(only_bare[:4], ["position"])
    assert "no item with labels.relevant is asked with an EXPECTED ANSWER" in str(refused.value)


class ObviousBlind(Hesitant):
    """Hesitant on the labelled file; on the bundled obvious items P(yes) 0.6 for the passage
    that answers and 0.35 for the other: the larger probability gets both right, a cut-off
    fitted on the labels (at or below 0.3) calls the other relevant too."""

    def generate(self, prompt: Any, schema: Any) -> Generation[Any]:
        from localjudge.run.calibrate.contrast_items import contrast_items  # noqa: PLC0415

        out = super().generate(prompt, schema)
        passage = prompt_data(list(prompt)).get("PASSAGE")
        roles = {
            p: bool(w)
            for r in contrast_items()
            for p, w in zip(r["retrieved_contexts"], r["labels"]["relevant"], strict=True)
        }
        if passage not in roles or schema.__name__ != "RelevantDecision":
            return out
        p = 0.6 if roles[passage] else 0.35
        flat = (
            SoftDecision("relevant", {'"yes"': p, '"no"': 1 - p}, '"yes"' if p > 0.5 else '"no"'),
        )
        return Generation(out.value, out.raw, out.stats, decisions=flat, reading=out.reading)


def test_a_fit_that_loses_an_obvious_item_is_stored_only_anyway(tmp_path, registry):
    data = write_labelled(tmp_path / "labelled.jsonl", labelled())
    judge = ObviousBlind()
    obj = {"open_judge": lambda settings: judge}
    runner = CliRunner()
    args = ["calibrate", str(data), "--no-cache", "--metric", "position"]
    done = runner.invoke(main, args, obj=obj)
    assert done.exit_code == 0, done.output
    kind = "position.relevant_answer"
    # the larger probability (in use now) gets the obvious items right, the fit (0.05) calls
    # the other-subject passages relevant: it says so, names them, and stores nothing
    found = re.search(
        rf"obvious: {kind}: (\d+)/52 obvious decisions right .*; in use now: (\d+)/52",
        done.output,
    )
    assert found is not None, done.output
    assert int(found[1]) <= 30 < 50 <= int(found[2])
    assert f"not stored: {kind}: the fit loses" in done.output
    assert "fact-en-everest #1: relevant where a person says not relevant" in done.output
    assert kind not in user_cutoffs(judge.identity.sha256).values
    forced = runner.invoke(main, [*args, "--store-anyway"], obj=obj)
    assert forced.exit_code == 0, forced.output
    assert "not stored" not in forced.output
    assert kind in user_cutoffs(judge.identity.sha256).values
