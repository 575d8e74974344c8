"""Config files and environment variables for eval, bench and calibrate: each precedence level
(command line > LOCALJUDGE_<COMMAND>_<OPTION> > config file > default), file discovery, unknown
keys, --show-config, and the variables localjudge already read left alone."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_reply

from localjudge.cli import main
from localjudge.cli.config import env_name
from localjudge.judge.cache.caching import CachingJudge
from localjudge.run.settings import JudgeSettings, open_cache
from localjudge.testing import ScriptedJudge

RECORD = {
    "id": "r0",
    "user_input": "q?",
    "retrieved_contexts": ["yes fact.", "noise"],
    "reference": "yes fact. unknown.",
    "response": "yes fact.",
}
#: every variable localjudge read before options could come from the environment
OWN_VARIABLES = {
    "LOCALJUDGE_CACHE_DIR",
    "LOCALJUDGE_DEBUG",
    "LOCALJUDGE_IN_PROCESS",
    "LOCALJUDGE_MAX_RECORD_BYTES",
    "LOCALJUDGE_MODELS",
    "LOCALJUDGE_AMX",
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with data; runs start in its ``sub`` directory, no LOCALJUDGE_*
    option variables set."""
    for name in list(__import__("os").environ):
        if name.startswith(("LOCALJUDGE_EVAL_", "LOCALJUDGE_BENCH_", "LOCALJUDGE_CALIBRATE_")):
            monkeypatch.delenv(name)
    (tmp_path / "data.jsonl").write_text(json.dumps(RECORD) + "\n", "utf-8")
    labelled = {**RECORD, "labels": {"recall": 0.5, "relevant": [True, False]}}
    (tmp_path / "labelled.jsonl").write_text(json.dumps(labelled) + "\n", "utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


class Factory:
    def __init__(self) -> None:
        self.settings: list[JudgeSettings] = []

    def __call__(self, settings: JudgeSettings) -> Any:
        self.settings.append(settings)
        return ScriptedJudge(rule_reply, model=settings.name)


def run(factory: Any, *args: str) -> Result:
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def evaluate(project: Path, *args: str) -> JudgeSettings:
    """The settings one eval run hands the judge factory (a test's runs share ``o``)."""
    factory = Factory()
    result = run(factory, "eval", str(project / "data.jsonl"), "-o", str(project / "o"),
                 "--no-cache", "-q", "--overwrite", *args)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    [settings] = factory.settings
    return settings


def rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]


def write(path: Path, text: str) -> Path:
    path.write_text(text, "utf-8")
    return path


# ---------------------------------------------------------------- precedence, level by level


def test_defaults_without_a_file_or_variables(project: Path) -> None:
    settings = evaluate(project)
    assert (settings.n_ctx, settings.n_threads, settings.seed) == (8192, None, 0)


def test_the_file_overrides_the_defaults(project: Path) -> None:
    write(project / "localjudge.toml", "ctx-size = 4096\nseed = 3\n[eval]\nthreads = 2\n")
    settings = evaluate(project)
    assert (settings.n_ctx, settings.n_threads, settings.seed) == (4096, 2, 3)


def test_the_environment_overrides_the_file(project: Path, monkeypatch) -> None:
    write(project / "localjudge.toml", "ctx-size = 4096\nseed = 3\n")
    monkeypatch.setenv("LOCALJUDGE_EVAL_CTX_SIZE", "2048")
    settings = evaluate(project)
    assert (settings.n_ctx, settings.seed) == (2048, 3)  # seed still from the file


def test_the_command_line_overrides_the_environment(project: Path, monkeypatch) -> None:
    write(project / "localjudge.toml", "ctx-size = 4096\n")
    monkeypatch.setenv("LOCALJUDGE_EVAL_CTX_SIZE", "2048")
    monkeypatch.setenv("LOCALJUDGE_EVAL_SEED", "9")
    settings = evaluate(project, "--ctx-size", "1024")
    assert (settings.n_ctx, settings.seed) == (1024, 9)


def test_a_commands_table_overrides_the_top_level_for_that_command_only(project: Path) -> None:
    write(project / "localjudge.toml", "threads = 2\n[eval]\nthreads = 3\n")
    assert evaluate(project).n_threads == 3
    factory = Factory()
    result = run(factory, "bench", str(project / "labelled.jsonl"), "-o", str(project / "b"),
                 "--no-cache", "-q")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [s.n_threads for s in factory.settings] == [2]


def test_repeated_options_and_flags_from_file_and_environment(project, monkeypatch) -> None:
    write(project / "localjudge.toml", "metric = ['recall']\nfail-under = {recall = 0.9}\n")
    out = project / "o"
    result = run(Factory(), "eval", str(project / "data.jsonl"), "-o", str(out), "--no-cache")
    assert result.exit_code == 1  # the file's threshold: recall is 0.5
    assert "recall mean 0.5 < 0.9" in result.stderr
    assert {r["metric"] for r in rows(out)} == {"recall"}
    monkeypatch.setenv("LOCALJUDGE_EVAL_METRIC", "recall position")
    monkeypatch.setenv("LOCALJUDGE_EVAL_FAIL_UNDER", "recall=0.4")
    monkeypatch.setenv("LOCALJUDGE_EVAL_QUIET", "1")
    monkeypatch.setenv("LOCALJUDGE_EVAL_OVERWRITE", "1")  # other metrics than the first run
    result = run(Factory(), "eval", str(project / "data.jsonl"), "-o", str(out), "--no-cache")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""  # quiet, from the environment
    assert [r["metric"] for r in rows(out)] == ["recall", "position"]


def test_bench_models_from_the_environment(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("LOCALJUDGE_BENCH_MODEL", "a.gguf b.gguf")
    factory = Factory()
    result = run(factory, "bench", str(project / "labelled.jsonl"), "-o", str(project / "b"),
                 "--no-cache", "-q")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert [s.model for s in factory.settings] == ["a.gguf", "b.gguf"]


@pytest.mark.parametrize(
    ("text", "env"), [("[eval]\nisotonic = true\n", None), ("", "LOCALJUDGE_EVAL_ISOTONIC")]
)
def test_isotonic_from_file_and_environment(project, monkeypatch, text, env) -> None:
    write(project / "localjudge.toml", text)
    if env is not None:
        monkeypatch.setenv(env, "1")
    out = project / "o"
    result = run(Factory(), "eval", str(project / "data.jsonl"), "-o", str(out), "--no-cache",
                 "-q", "--labels", str(project / "labelled.jsonl"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    assert summary["run"]["settings"]["isotonic"] is True  # the fit was asked for
    assert "calibrate" not in summary["run"]["settings"]
    assert show(run(Factory(), "eval", "--show-config"))["--isotonic"][0] == "True"


def test_the_old_config_key_calibrate_is_refused(project: Path) -> None:
    path = write(project / "localjudge.toml", "[eval]\ncalibrate = true\n")
    result = run(Factory(), "eval", str(project / "data.jsonl"), "-o", str(project / "o"),
                 "--no-cache", "-q", "--labels", str(project / "labelled.jsonl"))  # fmt: skip
    assert result.exit_code == 2
    assert f"unknown key 'calibrate' in {path} [eval]" in " ".join(result.stderr.split())
    assert not (project / "o" / "summary.json").exists()


# ---------------------------------------------------------------- calibrate


def calibrate(project: Path, *args: str) -> tuple[JudgeSettings, Result]:
    """The settings one dry calibrate run hands the judge factory, and its result."""
    labelled = [
        {**RECORD, "id": f"r{i}", "user_input": f"q{i}?",
         "labels": {"recall": i % 2, "relevant": [True, False]}}
        for i in range(8)
    ]  # fmt: skip
    labels = write(project / "calibrate.jsonl", "".join(json.dumps(r) + "\n" for r in labelled))
    factory = Factory()
    result = run(factory, "calibrate", str(labels), "--no-cache", "--dry-run", *args)
    assert result.exit_code == 0, result.stderr
    [settings] = factory.settings
    return settings, result


def test_calibrate_reads_the_file_as_eval_does(project: Path) -> None:
    write(project / "localjudge.toml", "model = 'top.gguf'\nctx-size = 4096\nseed = 3\n"
          "fail-under = {recall = 0.5}\n"  # an eval option at the top level: not calibrate's
          "[calibrate]\nmodel = 'mine.gguf'\nmetric = ['recall']\n"
          "[eval]\nseed = 9\n")  # fmt: skip
    settings, result = calibrate(project)
    assert (settings.model, settings.n_ctx, settings.seed) == ("mine.gguf", 4096, 3)
    assert "position" not in result.stdout  # [calibrate] metric: recall's decisions only
    assert "recall" in result.stdout
    assert evaluate(project).model == "top.gguf"  # the [calibrate] table is calibrate's alone


def test_calibrate_precedence_command_line_over_environment_over_file(project, monkeypatch):
    write(project / "localjudge.toml", "[calibrate]\nctx-size = 4096\nseed = 3\nthreads = 2\n")
    monkeypatch.setenv("LOCALJUDGE_CALIBRATE_SEED", "5")
    monkeypatch.setenv("LOCALJUDGE_CALIBRATE_THREADS", "4")
    settings, _ = calibrate(project, "-t", "1")
    assert (settings.n_ctx, settings.seed, settings.n_threads) == (4096, 5, 1)
    config = project / "localjudge.toml"
    got = show(run(Factory(), "calibrate", "--show-config", "-t", "1"))
    assert got["--ctx-size"] == ("4096", f"config {config} [calibrate]")
    assert got["--seed"] == ("5", "env LOCALJUDGE_CALIBRATE_SEED")
    assert got["--threads"] == ("1", "command line")


def test_calibrate_config_names_its_options_and_refuses_its_old_key(project: Path) -> None:
    path = write(project / "localjudge.toml", "[calibrate]\nfail-under = {recall = 1}\n")
    refused = run(Factory(), "calibrate", str(project / "labelled.jsonl"))
    assert refused.exit_code == 2
    assert f"unknown key 'fail-under' in {path} [calibrate]" in " ".join(refused.stderr.split())
    write(project / "localjudge.toml", "[calibrate]\nforce = true\n")  # the name before 0.1
    old = run(Factory(), "calibrate", str(project / "labelled.jsonl"))
    assert old.exit_code == 2
    assert f"unknown key 'force' in {path} [calibrate]" in " ".join(old.stderr.split())
    write(project / "localjudge.toml", "[calibrate]\nstore-anyway = true\n")
    calibrate(project)  # accepted


# ---------------------------------------------------------------- which file


def test_the_nearest_file_wins_and_pyproject_needs_its_table(project: Path) -> None:
    write(project / "localjudge.toml", "seed = 1\n")
    write(project / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")  # no [tool.localjudge]
    assert evaluate(project).seed == 1  # the pyproject without the table is passed over
    write(project / "sub" / "pyproject.toml", "[tool.localjudge]\nseed = 2\n")
    assert evaluate(project).seed == 2  # nearer, and it has the table
    write(project / "sub" / "localjudge.toml", "seed = 3\n")
    assert evaluate(project).seed == 3  # localjudge.toml before pyproject.toml in a directory


def test_pyproject_command_tables(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.localjudge]\nseed = 4\n[tool.localjudge.eval]\n"
          "ctx_size = 2048\n")  # fmt: skip
    settings = evaluate(project)
    assert (settings.seed, settings.n_ctx) == (4, 2048)


def test_config_path_overrides_discovery(project: Path) -> None:
    write(project / "localjudge.toml", "seed = 1\n")
    other = write(project / "ci.toml", "seed = 7\n")
    assert evaluate(project, "--config", str(other)).seed == 7


def test_a_missing_config_path_exits_2(project: Path) -> None:
    result = run(Factory(), "eval", str(project / "data.jsonl"), "--config", "nope.toml")
    assert result.exit_code == 2
    assert "nope.toml" in result.stderr


# ---------------------------------------------------------------- errors in the file


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("localjudge.toml", "ctx-sise = 10\n", "unknown key 'ctx-sise' in {file}"),
        ("localjudge.toml", "[eval]\nlabels = 'x'\nmodels = 'a'\n", "unknown key 'models'"),
        ("localjudge.toml", "[bench]\nfail-under = {recall = 1}\n",
         "unknown key 'fail-under' in {file} [bench]"),
        ("pyproject.toml", "[tool.localjudge.eval]\nhtlm = true\n",
         "unknown key 'htlm' in {file} [tool.localjudge.eval]"),
        ("localjudge.toml", "config = 'x.toml'\n", "unknown key 'config'"),
        ("localjudge.toml", "threads = 'many'\n", "bad 'threads' in {file}"),
        ("localjudge.toml", "model = ['a', 'b']\n", "'model' in {file} takes one value"),
        ("localjudge.toml", "seed = \n", "is not valid TOML"),
    ],
)  # fmt: skip
def test_a_bad_file_is_a_usage_error_naming_the_key_and_file(project, name, text, words):
    path = write(project / name, text)
    factory = Factory()
    result = run(factory, "eval", str(project / "data.jsonl"), "-o", str(project / "o"))
    assert result.exit_code == 2, result.output
    assert words.format(file=path) in " ".join(result.stderr.split())
    assert "Traceback" not in result.stderr
    assert factory.settings == []


def test_without_a_toml_reader_a_file_is_a_clear_error(project, monkeypatch) -> None:
    write(project / "localjudge.toml", "seed = 1\n")
    real = importlib.import_module

    def python_310_without_tomli(name: str, *args: Any) -> Any:
        if name in ("tomllib", "tomli"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", python_310_without_tomli)
    result = run(Factory(), "eval", str(project / "data.jsonl"))
    assert result.exit_code == 2
    assert "install tomli" in result.stderr


# ---------------------------------------------------------------- --show-config


def show(result: Result) -> dict[str, tuple[str, str]]:
    """--show-config's lines: option -> (value, source)."""
    out = {}
    for line in result.stdout.splitlines()[1:]:
        option, rest = line.split(None, 1)
        value, _, source = rest.rpartition("  (")
        out[option] = (value.strip(), source.rstrip(")"))
    return out


def test_show_config_names_every_source_and_runs_nothing(project, monkeypatch) -> None:
    config = write(project / "localjudge.toml", "ctx-size = 4096\nseed = 3\nthreads = 1\n"
                   "[eval]\nthreads = 2\nfail-under = {recall = 0.8}\n")  # fmt: skip
    monkeypatch.setenv("LOCALJUDGE_EVAL_SEED", "5")
    factory = Factory()
    result = run(factory, "eval", "--show-config", "-m", "x.gguf", "-o", str(project / "o"))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"config file: {config}"
    got = show(result)
    assert got["--model"] == ("x.gguf", "command line")
    assert got["--seed"] == ("5", "env LOCALJUDGE_EVAL_SEED")
    assert got["--ctx-size"] == ("4096", f"config {config}")
    assert got["--threads"] == ("2", f"config {config} [eval]")
    assert got["--fail-under"] == ("[recall=0.8]", f"config {config} [eval]")
    assert got["--gpu-layers"] == ("auto", "default")
    assert got["--quiet"] == ("False", "default")
    assert "--config" not in got
    assert "--show-config" not in got
    assert factory.settings == []  # no judge was loaded
    assert not (project / "o").exists()  # nothing was run


def test_show_config_for_bench_without_a_file(project: Path) -> None:
    result = run(Factory(), "bench", "--show-config", "-m", "a", "-m", "b")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "config file: (none found)"
    got = show(result)
    assert got["--model"] == ("[a, b]", "command line")
    assert got["--out"] == ("localjudge-bench", "default")


def test_show_config_prints_what_a_run_uses_for_an_unset_option(project, monkeypatch) -> None:
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(project / "cachedir"))
    monkeypatch.setattr("localjudge.judge.llama.default_threads", lambda: 7)
    got = show(run(Factory(), "eval", "--show-config"))
    assert got["--threads"] == ("null -> 7 (the physical cores this process may use)", "default")
    assert got["--model"] == ("null -> qwen2.5-coder-1.5b (the default judge)", "default")
    assert got["--cache"] == (f"null -> {project / 'cachedir' / 'calls.sqlite3'}", "default")
    assert got["--parallel"] == ("null -> 1", "default")
    assert got["--seed"] == ("0", "default")  # a value of its own: nothing added
    given = show(run(Factory(), "eval", "--show-config", "-t", "3", "--no-cache"))
    assert given["--threads"] == ("3", "command line")
    assert given["--cache"] == ("null", "default")  # --no-cache: no file is used


def test_the_readmes_example_file_is_valid(project: Path) -> None:
    # the example lives in docs/cli.md, "Configuration", since the README was cut short
    readme = (Path(__file__).parents[2] / "docs" / "cli.md").read_text("utf-8")
    example = readme.split("An example `localjudge.toml`:\n\n```toml\n", 1)[1].split("```")[0]
    config = write(project / "localjudge.toml", example)
    got = show(run(Factory(), "eval", "--show-config"))
    assert got["--metric"] == ("[recall, position]", f"config {config} [eval]")
    assert got["--ctx-size"] == ("4096", f"config {config}")
    bench = run(Factory(), "bench", "--show-config")
    assert bench.exit_code == 0, bench.stderr
    assert show(bench)["--model"] == ("[smollm2-135m, gemma3-270m]", f"config {config} [bench]")


# ---------------------------------------------------------------- existing variables


def test_option_variables_never_collide_with_localjudges_own() -> None:
    names = {
        env_name(command, param)
        for command in ("eval", "bench", "calibrate")
        for param in main.commands[command].params
        if param.name not in ("config", "show_config", "help") and hasattr(param, "envvar")
        and param.envvar
    }  # fmt: skip
    assert "LOCALJUDGE_EVAL_CTX_SIZE" in names
    assert "LOCALJUDGE_CALIBRATE_MODEL" in names
    prefixes = ("LOCALJUDGE_EVAL_", "LOCALJUDGE_BENCH_", "LOCALJUDGE_CALIBRATE_")
    assert all(n.startswith(prefixes) for n in names)
    assert not names & OWN_VARIABLES
    for command in ("eval", "bench", "calibrate"):  # what Click actually reads
        for param in main.commands[command].params:
            if getattr(param, "envvar", None):
                assert param.envvar == env_name(command, param)


def test_cache_dir_variable_still_places_the_cache(project: Path, monkeypatch) -> None:
    write(project / "localjudge.toml", "seed = 1\n")
    cache_dir = project / "cache-here"
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(cache_dir))

    def cached(settings: JudgeSettings) -> Any:
        return CachingJudge(ScriptedJudge(rule_reply), open_cache(settings.cache))

    result = run(cached, "eval", str(project / "data.jsonl"), "-o", str(project / "o"), "-q")
    assert result.exit_code == 0, result.stderr
    assert [p.suffix for p in cache_dir.iterdir() if p.suffix == ".sqlite3"]
    shown = show(run(Factory(), "eval", "--show-config"))
    # not mistaken for --cache's own variable: the option is unset, the run puts its file there
    assert shown["--cache"] == (f"null -> {cache_dir / 'calls.sqlite3'}", "default")
