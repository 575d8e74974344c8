"""`localjudge diff` on two real eval runs made with scripted judges: the console table,
--json-out, --html-out, the refusal of runs over different data and --by-id, and the old
spellings --json PATH, --html PATH and --force."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_records, rule_reply

from localjudge.cli import main
from localjudge.cli.exits import EXIT_OK
from localjudge.errors import UsageError
from localjudge.testing import ScriptedJudge

RECORDS = rule_records(4)


def everything_relevant(messages: Any, schema: Any) -> Any:
    """rule_reply, but position calls every piece relevant (the 'noise' piece flips)."""
    if schema.__name__ == "RelevantDecision":
        return {"relevant": "yes"}
    if schema.__name__ == "Reason" and 'VERDICT: {"relevant":' in messages[-1]["content"]:
        return {"reason": "everything counts"}
    return rule_reply(messages, schema)


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def invoke(*args: str, reply: Any = rule_reply) -> Result:
    factory = lambda settings: ScriptedJudge(reply, model=settings.name)  # noqa: E731
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def eval_run(data: Path, out: Path, reply: Any = rule_reply) -> Path:
    result = invoke("eval", str(data), "-o", str(out), "--no-cache", "-q", "--metric", "position",
                    "--metric", "recall", reply=reply)  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    return out


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    data = write(tmp_path / "data.jsonl", RECORDS)
    return eval_run(data, tmp_path / "a"), eval_run(data, tmp_path / "b", everything_relevant)


def test_diff_prints_the_change_and_writes_json_and_html(two_runs, tmp_path) -> None:
    a, b = two_runs
    out_json, out_html = tmp_path / "d.json", tmp_path / "d.html"
    result = invoke("diff", str(a), str(b), "--json-out", str(out_json), "--html-out",
                    str(out_html))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out_json.read_text("utf-8"))
    position = doc["metrics"]["position"]
    # position is 1.0 when the relevant piece comes first: both runs rank 'yes fact' first
    assert position["n_paired"] == 4
    assert position["n_flipped"] == 4
    assert {f["piece"] for it in position["top"] for f in it["flipped"]} == {1}
    assert all(it["reason_b"] for it in position["top"])
    assert doc["metrics"]["recall"]["n_changed"] == 0
    assert doc["metrics"]["recall"]["mean_diff"] == 0.0
    assert doc["metrics"]["recall"]["wilcoxon"]["p_value"] == 1.0
    lines = result.stdout.splitlines()
    [position_line] = [line for line in lines if line.startswith("position ")]
    assert position_line.split()[1] == "4"
    assert "r0" in result.stdout
    html = out_html.read_text("utf-8")
    assert "position: largest changes" in html
    assert "relevant=no / relevant=yes" in html


def test_diff_of_a_run_with_itself_changes_nothing(two_runs) -> None:
    a, _ = two_runs
    result = invoke("diff", str(a), str(a))
    assert result.exit_code == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("recall ")]
    assert line.split()[1:5] == ["4", "0.500", "0.500", "+0.000"]


def test_diff_refuses_runs_over_different_data_unless_by_id(two_runs, tmp_path) -> None:
    a, _ = two_runs
    other = write(tmp_path / "other.jsonl", [*RECORDS[1:], {**RECORDS[0], "id": "new"}])
    c = eval_run(other, tmp_path / "c", everything_relevant)
    refused = invoke("diff", str(a), str(c))
    assert refused.exit_code == UsageError.exit_code
    assert "different data" in refused.stderr
    assert "--by-id" in refused.stderr
    forced = invoke("diff", str(a), str(c), "--by-id", "--json-out", str(tmp_path / "f.json"))
    assert forced.exit_code == 0, forced.stderr
    doc = json.loads((tmp_path / "f.json").read_text("utf-8"))
    assert doc["matched_by"] == "id"
    assert doc["items_only_in_a"] == ["r0"]
    assert doc["items_only_in_b"] == ["new"]
    assert doc["metrics"]["position"]["n_paired"] == 3
    assert "1 item(s) only in A: r0" in forced.stdout


def test_diff_needs_two_eval_runs(two_runs, tmp_path) -> None:
    a, _ = two_runs
    result = invoke("diff", str(a), str(tmp_path / "nowhere"))
    assert result.exit_code != 0
    assert "no run directory" in result.stderr


@pytest.mark.parametrize(
    "old", [["--force"], ["--json", "d.json"], ["--html", "d.html"]], ids=lambda o: o[0]
)
def test_diff_old_spellings_are_refused(two_runs, tmp_path, monkeypatch, old) -> None:
    a, b = two_runs
    monkeypatch.chdir(tmp_path)
    result = invoke("diff", str(a), str(b), *old)
    assert result.exit_code == 2
    assert f"No such option: {old[0]}" in result.stderr
    assert not (tmp_path / "d.json").exists()
    assert not (tmp_path / "d.html").exists()


def test_diff_help_shows_the_new_spellings_only() -> None:
    options = set(re.findall(r"--[a-z-]+", invoke("diff", "--help").stdout))
    assert {"--by-id", "--json-out", "--html-out"} <= options
    assert not {"--force", "--json", "--html"} & options
