"""One record, one way: an `eval` run opens each of its files once, takes its output lock once,
and fixes its cut-offs and the settings its rows record once, whatever passes it makes (the
survey, the labelled items, the data)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pipeline_rules import rule_records, rule_reply

import localjudge.decisions
from localjudge.cli import main
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.rundir import LOCK_NAME
from localjudge.testing import ScriptedJudge


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    records = rule_records(20)
    labelled = [{**r, "id": f"l{i}", "labels": {"recall": 1.0}} for i, r in enumerate(records[:4])]
    return write(tmp_path / "data.jsonl", records), write(tmp_path / "labels.jsonl", labelled)


def spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, calls: Counter[str], key: str):
    """Count the calls of ``owner.name`` under ``key`` in ``calls`` (the real one still runs)."""
    real = getattr(owner, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[key] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)


def cli_eval(data: Path, labels: Path, out: Path, *extra: str) -> None:
    result = CliRunner().invoke(
        main,
        # not -q: the note on a judge without fitted cut-offs reads them too
        ["eval", str(data), "-o", str(out), "--labels", str(labels), "--no-cache", *extra],
        obj={"open_judge": lambda settings: ScriptedJudge(rule_reply)},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output


def test_an_eval_run_opens_its_files_and_takes_its_lock_once(tmp_path, files, opened) -> None:
    data, labels = files
    out = tmp_path / "out"
    # no --metric: the survey reads the data before the judge loads, the run reads it again
    cli_eval(data, labels, out, "--limit", "15")
    of = {p.name: opened[str(p.resolve())] for p in (data, labels, out / LOCK_NAME)}
    assert of == {data.name: 1, labels.name: 1, LOCK_NAME: 1}
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    # hashed as the passes read it (the limit cut them short: the rest was read for the hash)
    assert summary["run"]["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    labels_sha256 = hashlib.sha256(labels.read_bytes()).hexdigest()
    assert summary["run"]["settings"]["labels_sha256"] == labels_sha256
    assert summary["run"]["n_items"] == 15


@pytest.mark.parametrize("way", ["cli", "library"])
def test_an_eval_run_fixes_its_cut_offs_and_metric_settings_once(
    tmp_path, files, monkeypatch, way
) -> None:
    data, labels = files
    calls: Counter[str] = Counter()
    spy(monkeypatch, localjudge.decisions, "judge_cutoffs", calls, "cut-offs resolved")
    metrics = (ContextRecall, ContextPosition, ContextRelevance)
    for cls in metrics:
        spy(monkeypatch, cls, "settings", calls, cls.__name__)
    if way == "cli":
        cli_eval(data, labels, tmp_path / "out")
    else:
        judge = ScriptedJudge(rule_reply)
        eval_file(
            data, tmp_path / "out", judge=judge, metrics=[m() for m in metrics], labels=labels
        )
    # the labelled pass, the data pass and the manifest all use what was fixed once
    assert calls == {"cut-offs resolved": 1, **{cls.__name__: 1 for cls in metrics}}
