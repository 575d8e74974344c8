"""CI-grade exit codes: 2 for usage errors (Click's own too), 7 for a cache that cannot be used,
8 for anything unexpected, as one line with a hint (LOCALJUDGE_DEBUG=1 shows the traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_reply

from localjudge.cli import main
from localjudge.cli.exits import EXIT_CACHE, EXIT_INTERNAL, EXIT_USAGE
from localjudge.errors import LocalJudgeError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.run.settings import open_cache
from localjudge.testing import ScriptedJudge

RECORD = {
    "id": "r0",
    "user_input": "q?",
    "retrieved_contexts": ["yes fact.", "noise"],
    "reference": "yes fact.",
    "response": "yes fact.",
}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCALJUDGE_DEBUG", raising=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(RECORD) + "\n", "utf-8")
    return path


def invoke(factory: Any, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_the_codes_are_distinct() -> None:
    assert len({1, EXIT_USAGE, EXIT_CACHE, EXIT_INTERNAL, 130}) == 5
    assert (EXIT_USAGE, EXIT_CACHE, EXIT_INTERNAL) == (2, 7, 8)


def test_an_unexpected_error_mid_run_is_one_line_and_exit_8(data: Path, tmp_path: Path) -> None:
    def reply(messages: Any, schema: Any) -> Any:
        raise RuntimeError("the scripted judge\nbroke")

    result = invoke(lambda s: ScriptedJudge(reply), "eval", str(data), "-o", str(tmp_path / "o"))
    assert result.exit_code == 8
    assert error_line(result) == (
        "localjudge: error: internal error: RuntimeError: the scripted judge broke"
    )
    assert "LOCALJUDGE_DEBUG=1" in result.stderr  # the hint


def test_an_unexpected_error_loading_the_judge_is_exit_8(data: Path) -> None:
    def factory(settings: Any) -> Any:
        raise KeyError("n_ctx")

    result = invoke(factory, "eval", str(data))
    assert result.exit_code == 8
    assert "internal error: KeyError: 'n_ctx'" in error_line(result)


@pytest.mark.parametrize("command", ["models", "doctor"])
def test_an_unexpected_error_outside_eval_is_exit_8_too(monkeypatch, command) -> None:
    import localjudge.doctor  # noqa: PLC0415
    import localjudge.judge.models  # noqa: PLC0415

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("exploded")

    monkeypatch.setattr(localjudge.judge.models, "list_models", broken)
    monkeypatch.setattr(localjudge.doctor, "run_checks", broken)  # doctor has no guard of its own
    result = CliRunner().invoke(main, [command], catch_exceptions=False)
    assert result.exit_code == 8
    assert "ValueError: exploded" in error_line(result)


def test_debug_shows_the_unexpected_traceback(data: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOCALJUDGE_DEBUG", "1")

    def factory(settings: Any) -> Any:
        raise KeyError("n_ctx")

    with pytest.raises(KeyError, match="n_ctx"):
        invoke(factory, "eval", str(data))


def test_a_localjudge_error_without_a_class_of_its_own_is_not_exit_1(data: Path) -> None:
    def factory(settings: Any) -> Any:
        raise LocalJudgeError("something unclassified", hint="report it")

    result = invoke(factory, "eval", str(data))
    assert result.exit_code == EXIT_INTERNAL  # 1 means a threshold, nothing else
    assert error_line(result) == "localjudge: error: something unclassified"


def test_a_cache_that_cannot_be_opened_exits_7(data: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", "utf-8")

    def factory(settings: Any) -> Any:
        return CachingJudge(ScriptedJudge(rule_reply), open_cache(settings.cache))

    result = invoke(factory, "eval", str(data), "--cache", str(blocker / "calls.sqlite3"))
    assert result.exit_code == 7
    assert "cache" in error_line(result)
    assert "--no-cache" in result.stderr  # the hint


@pytest.mark.parametrize(
    "args",
    [
        ["eval"],  # DATA missing
        ["eval", "d.jsonl", "--no-such-option"],
        ["eval", "d.jsonl", "--limit", "many"],
        ["bench"],
        ["no-such-command"],
    ],
)
def test_clicks_own_usage_errors_exit_2(args: list[str]) -> None:
    result = invoke(None, *args)
    assert result.exit_code == 2
    assert "Error:" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_closed_stdout_is_quiet_exit_141(monkeypatch: pytest.MonkeyPatch) -> None:
    import localjudge.judge.models  # noqa: PLC0415

    def closed(*args: Any, **kwargs: Any) -> Any:
        raise BrokenPipeError(32, "Broken pipe")  # what `localjudge models | head -1` meets

    monkeypatch.setattr(localjudge.judge.models, "list_models", closed)
    result = CliRunner().invoke(main, ["models"], catch_exceptions=False)
    assert result.exit_code == 141
    assert "error" not in result.stderr
