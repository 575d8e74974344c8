"""Progress on a terminal, and none elsewhere: eval's bar reads the data with the run's own
--format, bench draws one bar per judge; -q and a pipe draw nothing. The terminal is simulated
by making the CLI's stderr check say yes (Click's runner captures stderr in a buffer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import EXPECTED, rule_records, rule_reply

import localjudge.cli.progress
from localjudge.cli import main
from localjudge.stats import agreement
from localjudge.testing import ScriptedJudge

RECORDS = rule_records(3)
LABELS = {"recall": 0.5, "relevant": [True, False], "levels": ["high", "none"]}


def invoke(*args: str) -> Result:
    factory = lambda settings: ScriptedJudge(rule_reply, model=settings.name)  # noqa: E731
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(localjudge.cli.progress, "on_terminal", lambda: True)


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


@pytest.mark.usefixtures("terminal")
def test_eval_on_a_terminal_counts_the_records_in_the_given_format(tmp_path: Path) -> None:
    # a .txt file is JSONL only because --format says so: the bar's count must read it so too
    data = write(tmp_path / "data.txt", RECORDS)
    out = tmp_path / "out"
    result = invoke("eval", str(data), "--format", "jsonl", "-o", str(out), "--no-cache")
    assert result.exit_code == 0, result.stderr
    assert "3/3" in result.stderr  # the bar knew the total, and reached it
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]
    assert len(rows) == 3 * 3
    for r in rows:
        assert r["score"] == pytest.approx(EXPECTED[r["metric"]](RECORDS[r["index"]]))


@pytest.fixture(autouse=True)
def _few_resamples(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench's agreement intervals with 20 resamples: these tests look at progress only."""
    monkeypatch.setattr(agreement, "RESAMPLES", 20)


def bench(tmp_path: Path, *args: str) -> Result:
    data = write(tmp_path / "labelled.jsonl", [{**r, "labels": LABELS} for r in RECORDS])
    judges = ["-m", "judge-one", "-m", "judge-two"]
    out = ["-o", str(tmp_path / "bench")]
    result = invoke("bench", str(data), *judges, *out, "--no-cache", "--metric", "position", *args)
    assert result.exit_code == 0, result.stderr
    return result


@pytest.mark.usefixtures("terminal")
def test_bench_on_a_terminal_draws_a_bar_per_judge(tmp_path: Path) -> None:
    err = bench(tmp_path).stderr
    for name in ("judge-one", "judge-two"):
        assert f"{name}: 100%" in err, err
    assert err.count("3/3") >= 2
    assert "judging with" not in err  # the bars name their judges


def test_bench_off_a_terminal_draws_no_bar(tmp_path: Path) -> None:
    err = bench(tmp_path).stderr
    assert "100%" not in err
    assert "judging with judge-one ..." in err
    assert "judging with judge-two ..." in err


@pytest.mark.usefixtures("terminal")
def test_bench_quiet_draws_nothing_even_on_a_terminal(tmp_path: Path) -> None:
    result = bench(tmp_path, "-q")
    assert result.stderr == ""
    assert "judge-one" in result.stdout  # the table still
