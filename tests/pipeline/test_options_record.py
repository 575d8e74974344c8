"""The run's options as one typed object: what ``summary.json`` records of them is the record of
the runs made before the options were one object (byte for byte), whether they come from the
command line, an ``EvalOptions`` or keyword arguments; and ``evaluate`` takes the same object."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pipeline_rules import rule_records, rule_reply

from localjudge import EvalOptions, ScoringOptions, build_metrics, eval_file, evaluate
from localjudge.canonical import compact_json
from localjudge.cli import main
from localjudge.testing import ScriptedJudge

#: ``run.settings`` of the library run below, as the 20-keyword ``eval_file`` wrote it (b4010ae)
LIBRARY_RECORD = (
    '{"n_ctx":4096,"seed":7,"metrics":{"recall":{"truncate":true,"reasons":false,"cutoffs":{},'
    '"cutoffs_source":{}},"position":{"truncate":true,"scale":1.0,"reasons":false,"cutoffs":{},'
    '"cutoffs_source":{}}},"limit":3,"map":{"user_input":"question"},"format":"jsonl",'
    '"only_sha256":"9c968a6298ade2dabd83175daa100994c4da81d418553fc20ba613cc47b67018",'
    '"neutral_cutoffs":true,"labels":"TMP/labels.jsonl",'
    '"labels_sha256":"4dc59678e7207e2e7837deb546ac82bdec174c97160e69a83e4c2b1d4dbef68f",'
    '"isotonic":true}'
)
#: ``run.settings`` of the command line below, as ``eval`` wrote it before (b4010ae)
CLI_RECORD = (
    '{"n_ctx":4096,"n_gpu_layers":"auto","threads":2,"flash_attn":"off",'
    '"chat_template_kwargs":{},"seed":7,"parallel":1,"metrics":{"recall":{"truncate":true,'
    '"reasons":false,"cutoffs":{},"cutoffs_source":{}},"position":{"truncate":true,"scale":2.0,'
    '"reasons":false,"cutoffs":{},"cutoffs_source":{}}},"limit":3,'
    '"map":{"user_input":"question"},"format":"jsonl","neutral_cutoffs":true,'
    '"labels":"TMP/labels.jsonl",'
    '"labels_sha256":"4dc59678e7207e2e7837deb546ac82bdec174c97160e69a83e4c2b1d4dbef68f",'
    '"isotonic":true}'
)

OPTIONS: dict[str, Any] = {
    "mapping": {"user_input": "question"},
    "fmt": "jsonl",
    "limit": 3,
    "truncate": True,
    "isotonic": True,
    "only": {"recall": [0, 2], "position": [1]},
    "settings": {"n_ctx": 4096, "seed": 7},
    "fail_under": {"recall": 0.9},
    "max_failure_rate": 0.5,
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    records = [
        {("question" if k == "user_input" else k): v for k, v in r.items()} for r in rule_records(4)
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({**r, "labels": {"recall": 0.5}}) + "\n" for r in records), "utf-8"
    )
    return data, labels


def recorded(out: Path, tmp_path: Path) -> str:
    settings = json.loads((out / "summary.json").read_text("utf-8"))["run"]["settings"]
    settings["labels"] = settings["labels"].replace(str(tmp_path), "TMP")
    return compact_json(settings)


@pytest.mark.parametrize("spelling", ["options", "keywords", "both"])
def test_summary_records_the_options_as_before(files, tmp_path, spelling):
    data, labels = files
    given = {**OPTIONS, "labels": labels}
    how: dict[str, Any] = {
        "options": {"options": EvalOptions(**given)},
        "keywords": given,
        # keywords replace the fields of the object they come with
        "both": {"options": EvalOptions(**{**given, "limit": 1}), "limit": 3},
    }[spelling]
    outcome = eval_file(
        data,
        tmp_path / "out",
        judge=ScriptedJudge(rule_reply),
        metrics=build_metrics(["recall", "position"]),
        **how,
    )
    assert recorded(tmp_path / "out", tmp_path) == LIBRARY_RECORD
    assert outcome.failed_thresholds == ["recall mean 0.5 < 0.9"]


def test_the_command_line_records_its_options_as_before(files, tmp_path):
    data, labels = files
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            str(data),
            "-o",
            str(out),
            "--map",
            "user_input=question",
            "--format",
            "jsonl",
            "--limit",
            "3",
            "--truncate",
            "--labels",
            str(labels),
            "--isotonic",
            "--metric",
            "recall",
            "--metric",
            "position",
            "-t",
            "2",
            "-c",
            "4096",
            "-s",
            "7",
            "--scale",
            "2",
            "-q",
            "--no-cache",
        ],
        obj={"open_judge": lambda s: ScriptedJudge(rule_reply, model=s.name)},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    assert recorded(out, tmp_path) == CLI_RECORD


def test_a_bad_option_is_refused_before_any_file_is_made(files, tmp_path):
    data, _ = files
    with pytest.raises(TypeError, match=r"unexpected option.*limt"):
        eval_file(data, tmp_path / "a", judge=ScriptedJudge(rule_reply), metrics=[], limt=3)
    with pytest.raises(Exception, match=r"EvalOptions\.limit"):
        eval_file(data, tmp_path / "b", judge=ScriptedJudge(rule_reply), metrics=[], limit=0)
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def test_evaluate_takes_the_same_object_or_its_keywords():
    records = rule_records(3)
    metrics = ["recall", "position"]
    seen: list[Any] = []
    by_keywords = evaluate(
        records, metrics, ScriptedJudge(rule_reply), truncate=True, chunk_size=1,
        on_result=seen.append,
    )  # fmt: skip
    rows = by_keywords.rows()
    assert len(seen) == len(rows) == 6
    options = EvalOptions(truncate=True, chunk_size=1, limit=99)  # limit: eval_file's only
    by_object = evaluate(records, metrics, ScriptedJudge(rule_reply), options).rows()
    scoring = evaluate(records, metrics, ScriptedJudge(rule_reply), ScoringOptions(truncate=True))
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in by_object] == strip
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in scoring.rows()] == strip


def test_each_command_reads_its_click_parameters_into_one_typed_object():
    """A Click option renamed without its field (or the other way round) fails here, not in
    the middle of a run."""
    from localjudge.cli.bench import BenchArgs, bench_command  # noqa: PLC0415
    from localjudge.cli.calibrate import CalibrateArgs, calibrate_command  # noqa: PLC0415
    from localjudge.cli.eval import EvalArgs, eval_command  # noqa: PLC0415

    for command, args in (
        (eval_command, EvalArgs),
        (bench_command, BenchArgs),
        (calibrate_command, CalibrateArgs),
    ):
        # --config and --show-config are the config file's own, taken before the command runs
        own = {"config", "show_config"}
        params = {p.name for p in command.params if p.expose_value and p.name not in own}
        assert params == {f.name for f in dataclasses.fields(args)}, command.name
