"""What is made under a protocol records it (name and fingerprint), and what was made under a
protocol this release does not know by both is refused at once, naming both: a user's stored
fit and the shipped cut-offs here (the judged rows: ``tests/unit/test_build.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from localjudge.cli import main
from localjudge.decisions import (
    Cutoffs,
    ShippedJudge,
    cutoffs_of,
    judge_cutoffs,
    store_cutoffs,
    user_cutoffs,
)
from localjudge.decisions.cutoff_registry import user_protocol
from localjudge.errors import ModelError, ProtocolError
from localjudge.metrics import branched
from localjudge.metrics.protocols import PROTOCOLS, UNNAMED, ProtocolRef, current_protocol
from localjudge.testing import ScriptedJudge, says_no

STALE = ProtocolRef("1", "ab" * 32)
RECORD = {"id": "r0", "user_input": "q?", "retrieved_contexts": ["yes fact."]}


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "models.json"
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(path))
    return path


def entry_protocol(registry: Path, sha: str, protocol: Any) -> None:
    """Give the stored entry of ``sha`` another protocol (None: none, as before protocols)."""
    data = json.loads(registry.read_text("utf-8"))
    if protocol is None:
        del data["cutoffs"][sha]["protocol"]
    else:
        data["cutoffs"][sha]["protocol"] = protocol
    registry.write_text(json.dumps(data), "utf-8")


def test_a_stored_fit_records_the_protocol_it_was_fitted_under(registry):
    store_cutoffs("a" * 64, Cutoffs.from_json({"recall.supported": 0.2}, "mine"))
    stored = json.loads(registry.read_text("utf-8"))["cutoffs"]["a" * 64]
    assert stored["protocol"] == current_protocol().as_json()
    assert user_protocol("a" * 64) == current_protocol()
    assert user_protocol("b" * 64) is None


def test_a_stored_fit_without_a_protocol_is_read_as_protocol_1(registry):
    store_cutoffs("a" * 64, Cutoffs.from_json({"recall.supported": 0.2}, "mine"))
    entry_protocol(registry, "a" * 64, None)
    assert user_protocol("a" * 64) == UNNAMED
    assert user_cutoffs("a" * 64).as_json() == {"recall.supported": 0.2}


def test_a_stored_fit_of_another_protocol_is_refused_naming_both(registry):
    store_cutoffs("a" * 64, Cutoffs.from_json({"recall.supported": 0.2}, "mine"))
    entry_protocol(registry, "a" * 64, STALE.as_json())
    with pytest.raises(ProtocolError) as info:
        user_cutoffs("a" * 64)
    message = str(info.value)
    assert "stored for the judge file aaaaaaaaaaaa" in message
    assert "protocol 1 (abababababab)" in message
    assert f"protocol 1 ({PROTOCOLS['1'][:12]})" in message
    assert "localjudge calibrate --reset" in info.value.hint
    entry_protocol(registry, "a" * 64, {"name": "9", "fingerprint": "cd" * 32})
    with pytest.raises(ProtocolError, match=r"protocol 9 \(cdcdcdcdcdcd\), which this release"):
        user_cutoffs("a" * 64)
    entry_protocol(registry, "a" * 64, {"name": "1"})
    with pytest.raises(ModelError, match=r"models\.json: cutoffs\[aaaaaaaaaaaa\.\.\.\]"):
        user_cutoffs("a" * 64)


def test_eval_stops_on_a_stale_fit_and_reset_removes_it(registry, tmp_path):
    judge = ScriptedJudge(says_no)
    sha = judge.identity.sha256
    store_cutoffs(sha, Cutoffs.from_json({"position.relevant": 0.3}, "mine"))
    entry_protocol(registry, sha, STALE.as_json())
    with pytest.raises(ProtocolError):
        judge_cutoffs(judge.identity)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    obj = {"open_judge": lambda settings: judge}
    runner = CliRunner()
    run = ["eval", str(data), "--metric", "position", "-o", str(tmp_path / "o"), "--no-cache"]
    stopped = runner.invoke(main, run, obj=obj)
    assert stopped.exit_code == 4, stopped.output
    assert "protocol 1 (abababababab)" in stopped.stderr
    assert not (tmp_path / "o" / "results.jsonl").exists()
    reset = runner.invoke(main, ["calibrate", "--reset"], obj=obj)
    assert reset.exit_code == 0, reset.output
    assert "removed position.relevant" in reset.output
    assert user_protocol(sha) is None
    assert runner.invoke(main, run, obj=obj).exit_code == 0


def test_reset_of_some_kinds_keeps_the_others_with_their_protocol(registry):
    judge = ScriptedJudge(says_no)
    sha = judge.identity.sha256
    store_cutoffs(sha, Cutoffs.from_json({"recall.supported": 0.2, "position.relevant": 0.3}, "m"))
    entry_protocol(registry, sha, None)  # stored before protocols were named
    obj = {"open_judge": lambda settings: judge}
    reset = CliRunner().invoke(main, ["calibrate", "--reset", "--metric", "recall"], obj=obj)
    assert reset.exit_code == 0, reset.output
    assert user_protocol(sha) == UNNAMED
    assert set(user_cutoffs(sha).values) == {"position.relevant"}


def shipped_entry(protocol: dict[str, str] | None) -> ShippedJudge:
    kind = {"status": "fitted", "cutoffs": [0.4], "ref": "built-in:build.py@x", "why": "w"}
    data: dict[str, Any] = {
        "alias": "j",
        "sha256": "e" * 64,
        "built": "b",
        "kinds": {"position.relevant": kind},
    }
    if protocol is not None:
        data["protocol"] = protocol
    return ShippedJudge.model_validate(data)


def test_shipped_cutoffs_of_another_protocol_are_refused_naming_both():
    assert cutoffs_of(shipped_entry(current_protocol().as_json())).as_json() == {
        "position.relevant": 0.4
    }
    # an entry built before protocols were named was made under protocol 1
    assert cutoffs_of(shipped_entry(None)).as_json() == {"position.relevant": 0.4}
    with pytest.raises(ProtocolError) as info:
        cutoffs_of(shipped_entry(STALE.as_json()))
    assert "the built-in cut-offs of j were made under protocol 1 (abababababab)" in str(info.value)
    assert f"({PROTOCOLS['1'][:12]})" in str(info.value)
    assert "reinstall" in info.value.hint
    with pytest.raises(ValueError, match="fingerprint"):
        shipped_entry({"name": "1", "fingerprint": "x"})


def test_a_run_by_protocol_2_records_it_and_leaves_fits_of_protocol_1_aside(registry, tmp_path):
    """``--protocol 2``: the summary, each row's settings and the call log name protocol 2;
    a user's fit made under protocol 1 does not apply (neutral cut-offs), and stderr says so;
    the same fit still applies to a run by protocol 1."""
    judge = ScriptedJudge(says_no)
    sha = judge.identity.sha256
    store_cutoffs(sha, Cutoffs.from_json({"position.relevant": 0.3}, "mine"))
    assert judge_cutoffs(judge.identity, "2") == Cutoffs()
    assert judge_cutoffs(judge.identity, "1").values == {"position.relevant": (0.3,)}
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    obj = {"open_judge": lambda settings: judge}
    runner = CliRunner()
    base = ["eval", str(data), "--metric", "position", "--no-cache"]
    two = runner.invoke(main, [*base, "-o", str(tmp_path / "two"), "--protocol", "2"], obj=obj)
    assert two.exit_code == 0, two.output
    assert "no fits under protocol 2 (only under protocol 1)" in two.stderr
    summary = json.loads((tmp_path / "two" / "summary.json").read_text("utf-8"))
    assert summary["run"]["protocol"] == {"name": "2", "fingerprint": PROTOCOLS["2"]}
    (row,) = [
        json.loads(line) for line in (tmp_path / "two" / "results.jsonl").read_text().splitlines()
    ]
    assert row["settings"]["protocol"] == "2"
    assert row["settings"]["cutoffs"] == {}
    assert judge.calls[-1].messages[0]["content"] == branched.SYSTEM  # the question alone
    one = runner.invoke(main, [*base, "-o", str(tmp_path / "one")], obj=obj)
    assert one.exit_code == 0, one.output
    assert "no fits under protocol" not in one.stderr
    summary = json.loads((tmp_path / "one" / "summary.json").read_text("utf-8"))
    assert summary["run"]["protocol"] == current_protocol().as_json()
    (row,) = [
        json.loads(line) for line in (tmp_path / "one" / "results.jsonl").read_text().splitlines()
    ]
    assert "protocol" not in row["settings"]  # protocol 1's rows read as they always did
    assert row["settings"]["cutoffs"] == {"position.relevant": 0.3}


def test_an_unknown_protocol_is_refused_by_the_command_line(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    refused = CliRunner().invoke(main, ["eval", str(data), "--protocol", "4"])
    assert refused.exit_code == 2
    assert "'4' is not one of '1', '2', '3'" in refused.output
