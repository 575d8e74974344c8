"""A finished run is never replaced silently: the same run again rewrites it (and an interrupted
one resumes), a run of other data, judge or settings is refused unless --overwrite, for eval and
bench alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_reply

from localjudge.cli import main
from localjudge.errors import UsageError
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.rundir import run_differences
from localjudge.run.settings import build_metrics
from localjudge.stats import agreement
from localjudge.testing import ScriptedJudge

RECORDS = [
    {
        "id": f"r{i}",
        "user_input": f"question {i}?",
        "retrieved_contexts": [f"yes fact {i}.", f"noise {i}"],
        "reference": f"yes fact {i}. unknown {i}.",
    }
    for i in range(3)
]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def invoke(*args: str) -> Result:
    factory = lambda settings: ScriptedJudge(rule_reply, model=settings.name)  # noqa: E731
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write(tmp_path / "data.jsonl", RECORDS)


def run_eval(data: Path, out: Path, *args: str) -> Result:
    return invoke(
        "eval", str(data), "-o", str(out), "--no-cache", "-q", "--metric", "recall", *args
    )


def files(out: Path) -> dict[str, str]:
    return {name: (out / name).read_text("utf-8") for name in ("results.jsonl", "summary.json")}


def test_the_same_run_again_rewrites_it(data, tmp_path) -> None:
    out = tmp_path / "out"
    assert run_eval(data, out).exit_code == 0
    first = (out / "results.jsonl").read_text("utf-8")
    again = run_eval(data, out)
    assert again.exit_code == 0, again.stderr
    assert (out / "results.jsonl").read_text("utf-8").count("\n") == first.count("\n") == 3


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (["--limit", "2"], "setting limit"),
        (["--truncate"], "setting metrics"),
        (["-m", "another.gguf"], "judge model"),
        (["-s", "5"], "setting seed"),
    ],
)
def test_a_run_of_other_settings_is_refused_and_the_old_run_kept(data, tmp_path, change, named):
    out = tmp_path / "out"
    assert run_eval(data, out).exit_code == 0
    before = files(out)
    refused = run_eval(data, out, *change)
    assert refused.exit_code == UsageError.exit_code
    assert "holds a finished eval run that differs" in refused.stderr
    assert named in refused.stderr
    assert "--overwrite" in refused.stderr
    assert files(out) == before
    replaced = run_eval(data, out, *change, "--overwrite")
    assert replaced.exit_code == 0, replaced.stderr
    assert files(out) != before


def test_a_run_of_other_data_is_refused(data, tmp_path) -> None:
    out = tmp_path / "out"
    assert run_eval(data, out).exit_code == 0
    other = write(tmp_path / "other.jsonl", RECORDS[:2])
    refused = run_eval(other, out)
    assert refused.exit_code == UsageError.exit_code
    assert "data (sha256)" in refused.stderr
    # the same content under another name is the same data
    copy = write(tmp_path / "copy.jsonl", RECORDS)
    assert run_eval(copy, out).exit_code == 0


def test_an_unfinished_run_is_taken_over(data, tmp_path) -> None:
    """An interrupted run leaves only results.jsonl.partial: the rerun resumes into it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl.partial").write_text('{"index": 0}\n', "utf-8")
    result = run_eval(data, out)
    assert result.exit_code == 0, result.stderr
    assert not (out / "results.jsonl.partial").exists()
    assert len((out / "results.jsonl").read_text("utf-8").splitlines()) == 3


def test_the_library_refuses_too(data, tmp_path) -> None:
    out = tmp_path / "out"
    judge = ScriptedJudge(rule_reply)
    eval_file(data, out, judge=judge, metrics=build_metrics(["recall"]))
    with pytest.raises(UsageError, match="setting limit"):
        eval_file(data, out, judge=judge, metrics=build_metrics(["recall"]), limit=1)
    outcome = eval_file(data, out, judge=judge, metrics=build_metrics(["recall"]), limit=1,
                        overwrite=True)  # fmt: skip
    assert outcome.summary["run"]["n_items"] == 1


def test_other_cutoffs_or_their_source_make_another_run(data, tmp_path) -> None:
    from localjudge import Cutoffs  # noqa: PLC0415 (the public name)

    out = tmp_path / "out"
    judge = ScriptedJudge(rule_reply)
    metrics = build_metrics(["recall"])
    first = Cutoffs.from_json({"recall.supported": 0.4}, "one")
    eval_file(data, out, judge=judge, metrics=metrics, cutoffs=first)
    eval_file(data, out, judge=judge, metrics=metrics, cutoffs=first)  # the same run again
    for other in (
        Cutoffs.from_json({"recall.supported": 0.6}, "one"),  # another value
        Cutoffs.from_json({"recall.supported": 0.4}, "two"),  # the same value, fitted elsewhere
    ):
        with pytest.raises(UsageError, match="differs from this one"):
            eval_file(data, out, judge=judge, metrics=metrics, cutoffs=other)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["settings"]["cutoffs_source"]["recall.supported"] for r in rows} == {"one"}


def test_run_differences_lists_each_difference() -> None:
    previous = {"data_sha256": "a", "judge": {"model": "m", "sha256": "x"},
                "settings": {"limit": None, "metrics": {"recall": {"scale": 1.0}}}}  # fmt: skip
    same = {"data_sha256": "a", "judge": {"model": "m", "sha256": "x"},
            "settings": {"limit": None, "metrics": {"recall": {"scale": 1.0}}}}  # fmt: skip
    assert run_differences(previous, **same) == []
    other = {**same, "data_sha256": "b", "settings": {"limit": 3, "metrics": {}}}
    assert run_differences(previous, **other) == ["data (sha256)", "setting limit",
                                                  "setting metrics"]  # fmt: skip


# --------------------------------------------------------------------------- bench


@pytest.fixture
def labelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(agreement, "RESAMPLES", 20)
    return write(tmp_path / "labelled.jsonl", [{**r, "labels": {"recall": 0.5}} for r in RECORDS])


def run_bench(data: Path, out: Path, *args: str) -> Result:
    return invoke("bench", str(data), "-o", str(out), "--no-cache", "-q", *args)


def test_bench_refuses_to_replace_a_bench_of_other_judges(labelled, tmp_path) -> None:
    out = tmp_path / "bench"
    assert run_bench(labelled, out, "-m", "a").exit_code == 0
    assert run_bench(labelled, out, "-m", "a").exit_code == 0  # the same bench again
    before = (out / "bench.json").read_text("utf-8")
    refused = run_bench(labelled, out, "-m", "a", "-m", "b")
    assert refused.exit_code == UsageError.exit_code
    assert "holds a finished bench run that differs from this one (judges)" in refused.stderr
    assert (out / "bench.json").read_text("utf-8") == before
    replaced = run_bench(labelled, out, "-m", "a", "-m", "b", "--overwrite")
    assert replaced.exit_code == 0, replaced.stderr
    assert list(json.loads((out / "bench.json").read_text("utf-8"))["judges"]) == ["a", "b"]


def test_bench_refuses_a_judge_run_of_other_settings(labelled, tmp_path) -> None:
    out = tmp_path / "bench"
    assert run_bench(labelled, out, "-m", "a").exit_code == 0
    refused = run_bench(labelled, out, "-m", "a", "--limit", "2")
    assert refused.exit_code == UsageError.exit_code
    assert "setting limit" in refused.stderr
    assert run_bench(labelled, out, "-m", "a", "--limit", "2", "--overwrite").exit_code == 0
