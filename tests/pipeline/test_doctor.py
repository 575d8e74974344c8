"""The doctor's judge-call check when its child process misbehaves: a real child that dies by a
signal, prints nothing useful, or reports a library error (no model runs here)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from localjudge import doctor


def _fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n", "utf-8")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_native_crash_is_a_failed_check_naming_the_signal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", _fake_python(tmp_path, "kill -SEGV $$"))
    check = doctor._probe(None)
    assert check.status == "fail"
    assert "SIGSEGV" in check.detail
    assert "exit 139" in check.detail
    assert "LOCALJUDGE_AMX" in check.hint


def test_a_library_error_in_the_child_keeps_its_message_and_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = """echo '{"error": "model file x is empty", "hint": "reinstall it"}'; exit 1"""
    monkeypatch.setattr(sys, "executable", _fake_python(tmp_path, body))
    check = doctor._probe(None)
    assert (check.status, check.detail, check.hint) == (
        "fail",
        "model file x is empty",
        "reinstall it",
    )


def test_a_child_without_an_answer_fails_with_its_last_stderr_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", _fake_python(tmp_path, "echo boom >&2; exit 3"))
    check = doctor._probe(None)
    assert check.status == "fail"
    assert check.detail == "boom"


def test_report_prints_hints_and_says_whether_all_passed() -> None:
    printed: list[str] = []
    checks = [
        doctor.Check("a", "ok", "fine"),
        doctor.Check("b", "warn", "odd", "look"),
        doctor.Check("c", "fail", "broken", "fix it"),
    ]
    assert doctor.report(iter(checks), printed.append) is False
    assert printed[0].startswith("OK    a")
    assert printed[2].endswith("hint: look")
    assert printed[3].startswith("FAIL  c")
    assert printed[4].endswith("hint: fix it")
    assert doctor.report(iter(checks[:2]), printed.append) is True


def test_the_cache_check_reads_the_configured_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "none"))
    assert doctor._cache().detail.endswith("not created yet")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "calls.sqlite3").write_bytes(b"not a database at all" * 100)
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "c"))
    check = doctor._cache()
    assert check.status == "fail"
    assert os.fspath(tmp_path / "c" / "calls.sqlite3") in check.hint
