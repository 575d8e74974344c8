"""The judge options added to the shared set (-t, -fa, --chat-template-kwargs) driven through
the CLI with the scripted judge: they reach the one JudgeSettings of eval and bench, and
summary.json records them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_reply

from localjudge.cli import main
from localjudge.judge.llama.options import default_threads
from localjudge.run.settings import JudgeSettings
from localjudge.testing import ScriptedJudge

RECORDS = [
    {
        "id": f"r{i}",
        "user_input": f"question {i}?",
        "retrieved_contexts": [f"yes fact {i}.", f"noise {i}"],
        "reference": f"yes fact {i}. unknown {i}.",
        "labels": {"recall": 0.5, "relevant": [True, False]},
    }
    for i in range(2)
]


class Factory:
    """A judge factory that records the settings it was given."""

    def __init__(self) -> None:
        self.settings: list[JudgeSettings] = []

    def __call__(self, settings: JudgeSettings) -> Any:
        self.settings.append(settings)
        return ScriptedJudge(rule_reply, model=settings.name)


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "labelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    return path


def invoke(factory: Factory, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def test_eval_hands_the_new_options_over_and_records_them(data: Path, tmp_path: Path) -> None:
    factory = Factory()
    out = tmp_path / "o"
    result = invoke(factory, "eval", str(data), "-o", str(out), "-q", "--no-cache",
                    "-t", "5", "-fa", "ON", "--chat-template-kwargs",
                    '{"enable_thinking": false, "depth": [1, 2]}')  # fmt: skip
    assert result.exit_code == 0, result.stderr
    [settings] = factory.settings
    assert settings.n_threads == 5
    assert settings.flash_attn == "on"
    assert settings.chat_template_kwargs == {"enable_thinking": False, "depth": [1, 2]}
    recorded = json.loads((out / "summary.json").read_text("utf-8"))["run"]["settings"]
    assert recorded["threads"] == 5
    assert recorded["flash_attn"] == "on"
    assert recorded["chat_template_kwargs"] == {"enable_thinking": False, "depth": [1, 2]}


def test_eval_defaults_record_the_threads_actually_used(data: Path, tmp_path: Path) -> None:
    factory = Factory()
    out = tmp_path / "o"
    result = invoke(factory, "eval", str(data), "-o", str(out), "-q", "--no-cache")
    assert result.exit_code == 0, result.stderr
    [settings] = factory.settings
    assert (settings.n_threads, settings.flash_attn, settings.chat_template_kwargs) == (
        None,
        "off",
        {},
    )
    recorded = json.loads((out / "summary.json").read_text("utf-8"))["run"]["settings"]
    assert recorded["threads"] == default_threads()
    assert (recorded["flash_attn"], recorded["chat_template_kwargs"]) == ("off", {})


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--threads", "2"], ("n_threads", 2)), (["--flash-attn", "auto"], ("flash_attn", "auto"))],
)
def test_long_spellings(data: Path, tmp_path: Path, args: list[str], expected: Any) -> None:
    factory = Factory()
    result = invoke(factory, "eval", str(data), "-o", str(tmp_path / "o"), "-q", "--no-cache",
                    *args)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert getattr(factory.settings[0], expected[0]) == expected[1]


def test_bench_takes_every_judge_option(data: Path, tmp_path: Path) -> None:
    factory = Factory()
    out = tmp_path / "bench"
    result = invoke(factory, "bench", str(data), "-m", "a", "-m", "b", "-o", str(out), "-q",
                    "--no-cache", "-c", "1024", "-ngl", "0", "-t", "1", "-s", "3", "-fa", "auto",
                    "--chat-template-kwargs", '{"x": 1}', "--no-chat-template", "-np", "2",
                    "--scale", "2", "--truncate")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert factory.settings == [
        JudgeSettings(
            model=name,
            n_ctx=1024,
            n_gpu_layers=0,
            n_threads=1,
            seed=3,
            chat_template=False,
            flash_attn="auto",
            chat_template_kwargs={"x": 1},
            use_cache=False,
            parallel=2,
        )
        for name in ("a", "b")
    ]
    run = json.loads((out / "judges" / "0-a" / "summary.json").read_text("utf-8"))["run"]
    assert run["settings"]["flash_attn"] == "auto"
    assert run["settings"]["chat_template_kwargs"] == {"x": 1}
    assert run["settings"]["metrics"]["position"]["scale"] == 2.0
    assert run["settings"]["metrics"]["position"]["truncate"] is True


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chat-template-kwargs", "{nope"], "is not valid JSON"),
        (["--chat-template-kwargs", "[1]"], "must be a JSON object, got list"),
        (["--chat-template-kwargs", '{"messages": 1}'], "cannot set messages"),
        (["-fa", "yes"], "'yes' is not one of 'on', 'off', 'auto'"),
        (["-t", "0"], "0 is not in the range x>=1"),
    ],
)
@pytest.mark.parametrize("command", ["eval", "bench"])
def test_bad_values_are_usage_errors_naming_the_option(
    data: Path, tmp_path: Path, command: str, args: list[str], message: str
) -> None:
    factory = Factory()
    result = invoke(factory, command, str(data), "-o", str(tmp_path / "o"), *args)
    assert result.exit_code == 2
    option = args[0]
    assert f"Invalid value for '{option}" in result.stderr
    assert message in result.stderr
    assert factory.settings == []  # refused before any judge
