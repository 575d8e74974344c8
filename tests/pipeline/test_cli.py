"""The CLI driven with the scripted judge (Click's context object carries the judge factory):
every README exit code, option errors, judge settings reaching the factory, --html, --format,
bench in one process, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import EXPECTED, rule_records, rule_reply

from localjudge.cli import main
from localjudge.errors import ConstraintError, ModelError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.metrics.statements import split_statements
from localjudge.run.settings import JudgeSettings, open_cache
from localjudge.testing import ScriptedJudge

RECORDS = rule_records(3)


def calls_of(record: dict[str, Any], *, reasons: bool) -> int:
    """The judge calls an item makes for the three metrics: recall a decision per reference
    statement, position per piece; relevance per piece a grade and whether it was used, then one
    list of what is missing; with ``reasons`` on, one reason per decision (neither for used nor
    for missing); and the item's baseline call (no passage, no reason), which position and
    relevance share, so it is asked once."""
    pieces = len(record["retrieved_contexts"])
    decisions = len(split_statements(record["reference"])) + pieces + pieces  # the last: grades
    return (1 + reasons) * decisions + pieces + 1 + 1


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs without -o write to ./localjudge-out: keep that out of the checkout."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    return path


class Factory:
    """A judge factory that records the settings it was given."""

    def __init__(self, make: Any = None) -> None:
        self.settings: list[JudgeSettings] = []
        self.make = make or (lambda settings: ScriptedJudge(rule_reply, model=settings.name))

    def __call__(self, settings: JudgeSettings) -> Any:
        self.settings.append(settings)
        return self.make(settings)


def invoke(factory: Any, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# ---------------------------------------------------------------- exit 0


def test_eval_scores_every_item_and_metric(data: Path, tmp_path: Path) -> None:
    factory = Factory()
    out = tmp_path / "out"
    result = invoke(factory, "eval", str(data), "-o", str(out), "--no-cache")
    assert result.exit_code == 0, result.stderr
    got = rows(out)
    assert [(r["index"], r["metric"]) for r in got] == [
        (i, m) for i in range(3) for m in ("recall", "position", "relevance")
    ]
    for r in got:
        assert r["score"] == pytest.approx(EXPECTED[r["metric"]](RECORDS[r["index"]]))
    assert "metric" in result.stdout  # the summary table
    assert f"results: {out / 'results.jsonl'}" in result.stdout
    assert json.loads((out / "summary.json").read_text("utf-8"))["run"]["n_items"] == 3


def test_every_judge_option_reaches_the_factory(data: Path, tmp_path: Path) -> None:
    factory = Factory()
    cache = tmp_path / "c.sqlite3"
    args = ["-c", "2048", "-ngl", "-1", "-t", "3", "-s", "7", "--no-chat-template"]
    result = invoke(factory, "eval", str(data), "-m", "my.gguf", "-o", str(tmp_path / "o"),
                    "--cache", str(cache), "-q", *args)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert factory.settings == [
        JudgeSettings(
            model="my.gguf",
            n_ctx=2048,
            n_gpu_layers=-1,
            n_threads=3,
            seed=7,
            chat_template=False,
            cache=cache,
            use_cache=True,
        )
    ]
    summary = json.loads((tmp_path / "o" / "summary.json").read_text("utf-8"))
    settings = summary["run"]["settings"]
    assert (settings["n_ctx"], settings["n_gpu_layers"], settings["threads"]) == (2048, -1, 3)
    assert result.stdout == ""  # -q


@pytest.mark.parametrize(("args", "layers"), [([], "auto"), (["-ngl", "all"], "all"),
                                              (["--gpu-layers", "AUTO"], "auto"),
                                              (["--n-gpu-layers", "20"], 20)])  # fmt: skip
def test_gpu_layers_spellings(data, tmp_path, args, layers) -> None:
    assert settings_given(data, tmp_path, *args).n_gpu_layers == layers


@pytest.mark.parametrize(("args", "n_ctx"), [(["-c", "0"], 0), (["--ctx-size", "4096"], 4096),
                                             (["--n-ctx", "512"], 512)])  # fmt: skip
def test_ctx_size_spellings_and_zero_for_the_models_own(data, tmp_path, args, n_ctx) -> None:
    assert settings_given(data, tmp_path, *args).n_ctx == n_ctx


def settings_given(data: Path, tmp_path: Path, *args: str) -> JudgeSettings:
    """The one JudgeSettings an eval with ``args`` hands the judge factory."""
    factory = Factory()
    result = invoke(factory, "eval", str(data), "-o", str(tmp_path / "o"), "-q", "--no-cache",
                    *args)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    [settings] = factory.settings
    return settings


def test_no_cache_and_defaults(data: Path, tmp_path: Path) -> None:
    factory = Factory()
    result = invoke(factory, "eval", str(data), "-o", str(tmp_path / "o"), "-q", "--no-cache")
    assert result.exit_code == 0
    assert factory.settings == [JudgeSettings(use_cache=False)]


def test_format_reads_a_file_whatever_its_name(data: Path, tmp_path: Path) -> None:
    odd = tmp_path / "records.txt"
    odd.write_bytes(data.read_bytes())
    factory = Factory()
    result = invoke(factory, "eval", str(odd), "-o", str(tmp_path / "a"), "-q", "--format",
                    "jsonl", "--no-cache")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert len(rows(tmp_path / "a")) == 9
    summary = json.loads((tmp_path / "a" / "summary.json").read_text("utf-8"))
    assert summary["run"]["settings"]["format"] == "jsonl"
    # without --format the extension decides, and .txt is no format: exit 3
    result = invoke(factory, "eval", str(odd), "-o", str(tmp_path / "b"), "-q", "--no-cache")
    assert result.exit_code == 3
    assert "cannot tell the format" in error_line(result)


def test_html_writes_a_report_that_shows_the_contexts(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(Factory(), "eval", str(data), "-o", str(out), "--html", "--no-cache")
    assert result.exit_code == 0, result.stderr
    html = (out / "report.html").read_text("utf-8")
    assert "yes fact 1." in html
    assert f"report: {out / 'report.html'}" in result.stdout
    again = CliRunner().invoke(main, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert again.exit_code == 0
    assert (tmp_path / "r.html").read_text("utf-8") == html
    folder = tmp_path / "reports"
    folder.mkdir()  # -o names a file; a folder that exists gets report.html inside it
    inside = CliRunner().invoke(main, ["report", str(out), "-o", str(folder)])
    assert inside.exit_code == 0, inside.stderr
    assert inside.stdout.strip() == str(folder / "report.html")
    assert (folder / "report.html").read_text("utf-8") == html


def test_map_reads_fields_from_other_columns(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    renamed = [{"q": r["user_input"], "ctx": r["retrieved_contexts"]} for r in RECORDS]
    path.write_text("".join(json.dumps(r) + "\n" for r in renamed), "utf-8")
    result = invoke(Factory(), "eval", str(path), "-o", str(tmp_path / "o"), "-q", "--no-cache",
                    "--map", "user_input=q", "--map", "retrieved_contexts=ctx")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    got = rows(tmp_path / "o")
    assert {r["metric"] for r in got} == {"position"}  # the only metric these fields allow
    assert all(r["error"] is None for r in got)


# ---------------------------------------------------------------- exit 1


def test_fail_under_exits_1_and_names_the_metric(data: Path, tmp_path: Path) -> None:
    result = invoke(Factory(), "eval", str(data), "-o", str(tmp_path / "o"), "-q", "--no-cache",
                    "--fail-under", "recall=0.9", "--fail-under", "position=0.1")  # fmt: skip
    assert result.exit_code == 1
    assert "localjudge: below threshold: recall mean 0.5 < 0.9" in result.stderr
    assert "position" not in result.stderr
    assert (tmp_path / "o" / "results.jsonl").is_file()  # results are written all the same


@pytest.mark.parametrize(("rate", "code"), [("0.5", 0), ("0.25", 0), ("0.2", 1), ("0", 1)])
def test_max_failure_rate_gates_the_share_of_failed_items(tmp_path, rate, code) -> None:
    data = tmp_path / "d.jsonl"
    broken = {**RECORDS[0], "id": "no-ref", "reference": ""}  # recall fails, position scores
    data.write_text("".join(json.dumps(r) + "\n" for r in [*RECORDS, broken]), "utf-8")
    args = ["--metric", "recall", "--metric", "position", "--max-failure-rate", rate]
    result = invoke(Factory(), "eval", str(data), "-o", str(tmp_path / "o"), "-q", "--no-cache",
                    *args)  # fmt: skip
    assert result.exit_code == code, result.stderr
    if code:
        assert "recall: 1 of 4 items failed (25.0%), over --max-failure-rate" in result.stderr
    assert "position:" not in result.stderr
    assert (tmp_path / "o" / "results.jsonl").exists()  # the results are written either way


# ---------------------------------------------------------------- exit 2


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--fail-under", "recall"], "--fail-under expects METRIC=VALUE"),
        (["--fail-under", "recall=high"], "--fail-under expects METRIC=VALUE"),
        (["--fail-under", "precision=0.5"], "names metrics that are not run: precision"),
        (["--metric", "position", "--fail-under", "recall=0.5"], "not run: recall"),
        (["--map", "user_input"], "--map expects FIELD=COLUMN"),
        (["--map", "question=user_input"], "unknown field 'question'"),
        (["--map", "input=q"], "unknown field 'input'"),
        (["--map", "reference=a", "--map", "reference=b"], "gives field 'reference' twice"),
    ],
)
def test_bad_options_exit_2_with_one_error_line(data, tmp_path, args, words) -> None:
    factory = Factory()
    result = invoke(factory, "eval", str(data), "-o", str(tmp_path / "o"), "--no-cache", *args)
    assert result.exit_code == 2
    assert words in error_line(result)
    assert not (tmp_path / "o" / "results.jsonl").exists()


@pytest.mark.parametrize(
    "args",
    [["--metric", "precision"], ["--limit", "0"], ["-c", "10"], ["-c", "-1"], ["--scale", "0"],
     ["-ngl", "many"], ["-ngl", "-2"], ["-x"]],
)  # fmt: skip
def test_click_rejects_bad_values_with_exit_2(data: Path, args: list[str]) -> None:
    result = invoke(Factory(), "eval", str(data), *args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr or "Error:" in result.stderr


def test_no_metric_applies_exits_2_before_loading_a_judge(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"question": "q?", "answer": "a"}\n', "utf-8")
    factory = Factory()
    result = invoke(factory, "eval", str(path), "-o", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "no metric applies" in error_line(result)
    assert "--map" in result.stderr  # the hint
    assert factory.settings == []


# ---------------------------------------------------------------- exit 3, 4, 5, 130


def test_a_missing_data_file_exits_3(tmp_path: Path) -> None:
    factory = Factory()
    result = invoke(factory, "eval", str(tmp_path / "nope.jsonl"), "--metric", "recall")
    assert result.exit_code == 3
    assert "dataset file not found" in error_line(result)


def test_a_model_that_cannot_load_exits_4(data: Path, tmp_path: Path) -> None:
    def broken(settings: JudgeSettings) -> Any:
        raise ModelError("model file x.gguf is empty", hint="reinstall it")

    result = invoke(Factory(broken), "eval", str(data), "-o", str(tmp_path / "o"))
    assert result.exit_code == 4
    assert error_line(result) == "localjudge: error: model file x.gguf is empty"
    assert "localjudge: hint: reinstall it" in result.stderr


def test_constrained_decoding_failing_mid_run_exits_5(data: Path, tmp_path: Path) -> None:
    calls = []

    def reply(messages: Any, schema: Any) -> Any:
        calls.append(schema)
        if len(calls) == 4:
            raise ConstraintError("grammar processor exploded")
        return rule_reply(messages, schema)

    make = lambda settings: ScriptedJudge(reply)  # noqa: E731
    result = invoke(Factory(make), "eval", str(data), "-o", str(tmp_path / "o"), "--no-cache")
    assert result.exit_code == 5
    assert "grammar processor exploded" in error_line(result)
    assert not (tmp_path / "o" / "results.jsonl").exists()  # never a complete-looking file
    assert (tmp_path / "o" / "results.jsonl.partial").exists()


def test_ctrl_c_exits_130_and_a_rerun_resumes_from_the_cache(data, tmp_path) -> None:
    cache = tmp_path / "calls.sqlite3"
    seen: list[Any] = []

    def interrupting(messages: Any, schema: Any) -> Any:
        seen.append(schema)
        if len(seen) == 5:
            raise KeyboardInterrupt
        return rule_reply(messages, schema)

    def cached(reply: Any) -> Any:
        # a factory owns the whole judge, cache included, as open_judge does
        return lambda settings: CachingJudge(ScriptedJudge(reply), open_cache(settings.cache))

    out = tmp_path / "o"
    first = invoke(Factory(cached(interrupting)), "eval", str(data), "-o", str(out), "--cache",
                   str(cache), "-q")  # fmt: skip
    assert first.exit_code == 130
    assert "run the same command again to resume" in first.stderr
    resumed = Factory(cached(rule_reply))
    second = invoke(resumed, "eval", str(data), "-o", str(out), "--cache", str(cache), "-q")
    assert second.exit_code == 0
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["run"]["cache_hits"] == 4  # the calls finished before Ctrl-C
    # the run's own settings say whether it asked reasons (the same for every metric)
    [reasons] = {m["reasons"] for m in summary["run"]["settings"]["metrics"].values()}
    assert summary["run"]["judge_calls"] == sum(calls_of(r, reasons=reasons) for r in RECORDS) - 4


def _cached_factory() -> Factory:
    return Factory(
        lambda settings: CachingJudge(ScriptedJudge(rule_reply), open_cache(settings.cache))
    )


def test_a_damaged_cache_is_set_aside_and_the_run_gives_the_same_rows(data, tmp_path) -> None:
    clean = tmp_path / "clean"
    assert invoke(_cached_factory(), "eval", str(data), "-o", str(clean), "--cache",
                  str(tmp_path / "fresh.sqlite3"), "-q").exit_code == 0  # fmt: skip
    cache = tmp_path / "calls.sqlite3"
    cache.write_bytes(b"\x00garbage" * 500)
    out = tmp_path / "o"
    result = invoke(
        _cached_factory(), "eval", str(data), "-o", str(out), "--cache", str(cache), "-q"
    )
    assert result.exit_code == 0, result.stderr
    assert "is damaged" in result.stderr
    assert "Traceback" not in result.stderr
    assert [p.name for p in tmp_path.glob("calls.sqlite3.damaged-*")]
    drop = ("seconds",)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in drop} for r in rs]  # noqa: E731
    assert strip(rows(out)) == strip(rows(clean))


def test_a_foreign_sqlite_cache_exits_7_and_is_left_alone(data, tmp_path) -> None:
    import sqlite3  # noqa: PLC0415

    cache = tmp_path / "mine.sqlite3"
    conn = sqlite3.connect(cache)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()
    before = cache.read_bytes()
    result = invoke(_cached_factory(), "eval", str(data), "-o", str(tmp_path / "o"), "--cache",
                    str(cache), "-q")  # fmt: skip
    assert result.exit_code == 7
    assert "not a localjudge cache" in error_line(result)
    assert "--no-cache" in result.stderr
    assert cache.read_bytes() == before


def test_an_output_directory_in_use_exits_2_before_the_judge_loads(data, tmp_path) -> None:
    from filelock import FileLock  # noqa: PLC0415

    from localjudge.run.rundir import LOCK_NAME  # noqa: PLC0415

    out = tmp_path / "o"
    out.mkdir()
    factory = Factory()
    with FileLock(out / LOCK_NAME):  # what another process's run holds
        result = invoke(factory, "eval", str(data), "-o", str(out), "-q", "--no-cache")
        labelled = Path(__file__).parents[2] / "examples" / "labelled.jsonl"
        bench = invoke(factory, "bench", str(labelled), "-o", str(out), "-q")
    assert result.exit_code == 2
    assert "in use by another localjudge run" in error_line(result)
    assert factory.settings == []  # no judge was loaded
    assert sorted(p.name for p in out.iterdir() if p.name != LOCK_NAME) == []
    assert bench.exit_code == 2
    assert "in use by another localjudge run" in error_line(bench)
    assert invoke(factory, "eval", str(data), "-o", str(out), "-q", "--no-cache").exit_code == 0


def test_debug_shows_the_traceback(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALJUDGE_DEBUG", "1")

    def broken(settings: JudgeSettings) -> Any:
        raise ModelError("boom")

    with pytest.raises(ModelError, match="boom"):
        invoke(Factory(broken), "eval", str(data))


# ---------------------------------------------------------------- bench


def test_bench_in_one_process_with_every_judge_option(tmp_path: Path) -> None:
    path = tmp_path / "labelled.jsonl"
    labelled = [
        {**r, "labels": {"recall": 0.5, "relevant": [True, False], "levels": ["high", "none"]}}
        for r in RECORDS
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in labelled), "utf-8")
    factory = Factory()
    out = tmp_path / "bench"
    result = invoke(factory, "bench", str(path), "-m", "a", "-m", "b", "-o", str(out),
                    "-ngl", "5", "--no-chat-template", "--scale", "2", "--truncate", "-q",
                    "--no-cache", "--html")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [s.model for s in factory.settings] == ["a", "b"]
    assert all(s.n_gpu_layers == 5 and s.chat_template is False for s in factory.settings)
    report = json.loads((out / "bench.json").read_text("utf-8"))
    assert list(report["judges"]) == ["a", "b"]
    position = report["judges"]["a"]["metrics"]["position"]
    # the rule judge marks 'yes' pieces relevant: exactly the labels
    assert position["verdicts"]["relevant"]["accuracy"]["value"] == 1.0
    judge_rows = rows(out / "judges" / "0-a")
    assert {r["settings"].get("scale") for r in judge_rows if r["metric"] == "position"} == {2.0}
    assert all(r["settings"]["truncate"] for r in judge_rows)
    assert (out / "report.html").is_file()
    assert "judge" in result.stdout  # the table


def test_bench_all_judges_compares_every_installed_registered_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from localjudge.judge.models.registry import list_models  # noqa: PLC0415

    path = tmp_path / "labelled.jsonl"
    labelled = [{**r, "labels": {"relevant": [True, False]}} for r in RECORDS]
    path.write_text("".join(json.dumps(r) + "\n" for r in labelled), "utf-8")
    # a user registry with one judge whose file is here and one whose file is gone
    gguf = tmp_path / "here.gguf"
    gguf.write_bytes(b"GGUF")
    registry = tmp_path / "models.json"
    registry.write_text(
        json.dumps(
            {
                "format": 1,
                "judges": [
                    {"alias": "here", "path": str(gguf)},
                    {"alias": "gone", "path": str(tmp_path / "gone.gguf")},
                ],
            }
        ),
        "utf-8",
    )
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(registry))
    installed = [s.judge.alias for s in list_models() if s.present]
    assert "here" in installed
    assert "gone" not in installed
    factory = Factory()
    out = tmp_path / "bench"
    result = invoke(factory, "bench", str(path), "--all-judges", "-o", str(out), "-q",
                    "--no-cache")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [s.model for s in factory.settings] == installed
    report = json.loads((out / "bench.json").read_text("utf-8"))
    assert list(report["judges"]) == installed
    both = invoke(factory, "bench", str(path), "--all-judges", "-m", "here", "-q")
    assert both.exit_code == 2
    assert "not both" in error_line(both)


@pytest.mark.parametrize(
    ("command", "words"),
    [
        (["eval"], "-o, --out PATH Output folder"),
        (["bench"], "-o, --out PATH Output folder"),
        (["report"], "-o, --output PATH The HTML file to write: a file, where eval's and bench's "
         "-o is a folder"),
    ],
)  # fmt: skip
def test_help_says_whether_o_is_a_folder_or_a_file(command: list[str], words: str) -> None:
    shown = CliRunner().invoke(main, [*command, "--help"]).stdout
    assert words in " ".join(shown.split())
