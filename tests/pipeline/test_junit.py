"""``eval --junit``: the file a CI system reads, checked with a real JUnit parser (junitparser):
suites, cases, counts, failures with their reasons, errors, properties; written on exit 1, on
Ctrl-C and on a fatal error with the cases finished so far, and never half-written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite
from pipeline_rules import EXPECTED, rule_reply

from localjudge.cli import main
from localjudge.errors import ConstraintError
from localjudge.testing import ScriptedJudge

RECORDS = [
    {  # recall 1.0
        "id": "all-found",
        "user_input": "q0?",
        "retrieved_contexts": ["yes fact 0.", "noise 0"],
        "reference": "yes fact 0.",
        "response": "yes fact 0.",
    },
    {  # recall 0.5: below 0.9
        "id": "half-found",
        "user_input": "q1?",
        "retrieved_contexts": ["yes fact 1.", "noise 1"],
        "reference": "yes fact 1. unknown 1.",
        "response": "yes fact 1.",
    },
    {  # recall fails (no reference); position and relevance score
        "id": "no-reference",
        "user_input": "q2?",
        "retrieved_contexts": ["noise 2", "yes fact 2."],
        "reference": "",
        "response": "yes fact 2.",
    },
]
METRICS = ("recall", "position", "relevance")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    return path


def invoke(reply: Any, *args: str) -> Result:
    def factory(settings: Any) -> ScriptedJudge:
        return ScriptedJudge(reply, model="rules.gguf")

    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def suites(path: Path) -> dict[str, TestSuite]:
    return {suite.name: suite for suite in JUnitXml.fromfile(str(path))}


def results(out: Path, name: str = "results.jsonl") -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / name).read_text("utf-8").splitlines()]


def outcome(case: Any) -> Any:
    return case.result[0] if case.result else None


def explained_reply(messages: Any, schema: Any) -> Any:
    """The rules, with a reason of its own for a statement the contexts do not support (its
    reason call shows that verdict)."""
    if schema.__name__ == "Reason" and 'VERDICT: {"supported":"no"}' in messages[-1]["content"]:
        return {"reason": "absent from the contexts"}
    return rule_reply(messages, schema)


def test_junit_has_a_suite_per_metric_and_a_case_per_item(data: Path, tmp_path: Path) -> None:
    out, junit = tmp_path / "o", tmp_path / "reports" / "junit.xml"
    # --reasons (off by default): a failure shows the judge's reasons for its decisions
    result = invoke(explained_reply, "eval", str(data), "-o", str(out), "--no-cache", "-q",
                    "--junit", str(junit), "--fail-under", "recall=0.9", "--reasons")  # fmt: skip
    assert result.exit_code == 1, result.stderr  # the threshold: written all the same
    rows = {(r["metric"], r["id"]): r for r in results(out)}
    got = suites(junit)
    assert list(got) == [f"localjudge.{m}" for m in METRICS]
    for metric in METRICS:
        suite = got[f"localjudge.{metric}"]
        cases = list(suite)
        assert [c.name for c in cases] == [r["id"] for r in RECORDS]
        assert {c.classname for c in cases} == {f"localjudge.{metric}"}
        for case in cases:
            seconds = rows[(metric, case.name)]["seconds"] or 0.0  # none for a failed item
            assert case.time == pytest.approx(seconds, abs=1e-3)
        props = {p.name: p.value for p in suite.properties()}
        assert props["model"] == "rules.gguf"
        assert props["model_sha256"] == rows[(metric, "all-found")]["judge"]["sha256"]
        assert props["complete"] == "true"
        run_settings = json.loads(props["run_settings"])
        assert (run_settings["n_ctx"], run_settings["reasons"]) == (8192, True)
        assert ("fail_under" in props) == (metric == "recall")
    recall = got["localjudge.recall"]
    assert (recall.tests, recall.failures, recall.errors, recall.skipped) == (3, 1, 1, 0)
    by_name = {c.name: c for c in recall}
    assert outcome(by_name["all-found"]) is None  # 1.0 passes
    failure = outcome(by_name["half-found"])
    assert isinstance(failure, Failure)
    assert failure.message == "score 0.5 < 0.9 (--fail-under recall=0.9)"
    assert rows[("recall", "half-found")]["reason"] in failure.text
    # the judge's reason for the statement it did not find, and only for that one
    [absent] = [line for line in failure.text.splitlines() if "absent" in line]
    assert '"statement":"unknown 1."' in absent
    error = outcome(by_name["no-reference"])
    assert isinstance(error, Error)
    assert error.message == rows[("recall", "no-reference")]["error"]["message"]
    for metric in ("position", "relevance"):  # no threshold: nothing fails
        suite = got[f"localjudge.{metric}"]
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (3, 0, 0, 0)
        for case in suite:
            assert rows[(metric, case.name)]["score"] == pytest.approx(
                EXPECTED[metric](next(r for r in RECORDS if r["id"] == case.name))
            )
    root = JUnitXml.fromfile(str(junit))
    assert (root.tests, root.failures, root.errors) == (9, 1, 1)
    assert "localjudge: below threshold: recall mean 0.75 < 0.9" in result.stderr
    assert not list(junit.parent.glob(".*.tmp"))

    # without --reasons the judge is asked none: the same failure, with no reason of the judge's
    plain = tmp_path / "plain.xml"
    again = invoke(explained_reply, "eval", str(data), "-o", str(tmp_path / "p"), "--no-cache",
                   "-q", "--junit", str(plain), "--fail-under", "recall=0.9")  # fmt: skip
    assert again.exit_code == 1, again.stderr
    [plain_failure] = [
        outcome(c) for c in suites(plain)["localjudge.recall"] if c.name == "half-found"
    ]
    assert isinstance(plain_failure, Failure)
    assert plain_failure.message == failure.message
    assert rows[("recall", "half-found")]["reason"] in plain_failure.text
    assert "absent" not in plain_failure.text


@pytest.mark.parametrize(("threshold", "failures"), [("0.3", 0), ("0.5", 1)])
def test_the_exit_code_gates_the_mean_and_junit_each_item(data, tmp_path, threshold, failures):
    # position scores 1, 1 and 1/3: the mean (7/9) passes both thresholds, one item fails 0.5
    junit = tmp_path / "junit.xml"
    result = invoke(rule_reply, "eval", str(data), "-o", str(tmp_path / "o"), "--no-cache",
                    "--junit", str(junit), "--fail-under", f"position={threshold}")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert f"junit: {junit}" in result.stdout
    position = suites(junit)["localjudge.position"]
    assert (position.tests, position.failures, position.errors) == (3, failures, 0)
    failed = [c.name for c in position if isinstance(outcome(c), Failure)]
    assert failed == (["no-reference"] if failures else [])


def test_ctrl_c_writes_the_cases_finished_so_far(data: Path, tmp_path: Path) -> None:
    seen: list[Any] = []

    def interrupting(messages: Any, schema: Any) -> Any:
        seen.append(schema)
        if len(seen) == 5:
            raise KeyboardInterrupt
        return rule_reply(messages, schema)

    junit = tmp_path / "junit.xml"
    result = invoke(interrupting, "eval", str(data), "-o", str(tmp_path / "o"), "--no-cache",
                    "-q", "--junit", str(junit))  # fmt: skip
    assert result.exit_code == 130
    got = suites(junit)
    run = got.pop("localjudge.run")
    [case] = list(run)
    assert isinstance(outcome(case), Error)
    assert "interrupted" in outcome(case).message
    finished = [(s.name, c.name) for s in got.values() for c in s]
    every = [(f"localjudge.{m}", r["id"]) for m in METRICS for r in RECORDS]
    assert 0 < len(finished) < len(every)
    assert set(finished) <= set(every)
    assert JUnitXml.fromfile(str(junit)).errors >= 1  # a stopped run never reads as green
    props = {p.name: p.value for p in run.properties()}
    assert props["complete"] == "false"


def test_a_fatal_error_mid_run_writes_why(data: Path, tmp_path: Path) -> None:
    calls: list[Any] = []

    def reply(messages: Any, schema: Any) -> Any:
        calls.append(schema)
        if len(calls) == 4:
            raise ConstraintError("grammar processor exploded")
        return rule_reply(messages, schema)

    junit = tmp_path / "junit.xml"
    result = invoke(reply, "eval", str(data), "-o", str(tmp_path / "o"), "--no-cache", "-q",
                    "--junit", str(junit))  # fmt: skip
    assert result.exit_code == 5
    [case] = list(suites(junit)["localjudge.run"])
    assert "grammar processor exploded" in outcome(case).message


def test_an_undefined_score_is_a_skipped_case(tmp_path: Path) -> None:
    from localjudge.run.report.junit import junit_xml, write_junit  # noqa: PLC0415

    rows = [
        {"id": "a", "metric": "recall", "score": None, "seconds": None, "error": None},
        {"id": "b", "metric": "recall", "score": 0.2, "seconds": 1.5, "error": None},
    ]
    path = write_junit(tmp_path / "j.xml", junit_xml(rows, fail_under={"recall": 0.1}))
    [suite] = list(JUnitXml.fromfile(str(path)))
    assert (suite.tests, suite.skipped, suite.failures, suite.errors) == (2, 1, 0, 0)
    assert isinstance(outcome(next(iter(suite))), Skipped)
    assert suite.time == pytest.approx(1.5)


def test_a_crashed_judge_process_replaces_an_older_report(tmp_path: Path) -> None:
    from localjudge.cli.eval import junit_after_crash  # noqa: PLC0415

    junit = tmp_path / "junit.xml"
    junit.write_text("<testsuites tests='99'/>", "utf-8")  # an older run's, all green
    junit_after_crash(junit, 139)
    root = JUnitXml.fromfile(str(junit))
    assert (root.tests, root.errors) == (1, 1)
    [case] = list(suites(junit)["localjudge.run"])
    assert "signal 11" in outcome(case).message
