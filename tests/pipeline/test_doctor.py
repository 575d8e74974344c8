"""The doctor's judge-call check when its child process misbehaves: a real child that dies by a
signal, prints nothing useful, or reports a library error (no model runs here)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from localjudge import doctor

# what the doctor's supervised child runs instead of the real probe (importable by name: the
# child is a fresh interpreter)


def _segfault(model, reporter):
    os.kill(os.getpid(), signal.SIGSEGV)


def _library_error(model, reporter):
    return {"error": "model file x is empty", "hint": "reinstall it"}


def _no_answer(model, reporter):
    print("boom", file=sys.stderr)
    sys.exit(3)


def _hangs(model, reporter):
    time.sleep(60)


def _answers(model, reporter):
    return {
        "metric": "position",
        "verdicts": [False, True],
        "load_seconds": 0.5,
        "seconds": 0.25,
        "completion_tokens": 12,
        "model": model,
    }


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_native_crash_is_a_failed_check_naming_the_signal() -> None:
    check = doctor._probe(None, _segfault)
    assert check.status == "fail"
    assert "SIGSEGV" in check.detail
    assert "exit 139" in check.detail
    assert "LOCALJUDGE_AMX" in check.hint


def test_a_library_error_in_the_child_keeps_its_message_and_hint() -> None:
    check = doctor._probe(None, _library_error)
    assert (check.status, check.detail, check.hint) == (
        "fail",
        "model file x is empty",
        "reinstall it",
    )


def test_a_child_without_an_answer_fails_with_its_exit_code() -> None:
    check = doctor._probe(None, _no_answer)
    assert check.status == "fail"
    assert "exit code 3" in check.detail


def test_a_child_that_does_not_answer_in_time_is_killed_and_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(doctor, "PROBE_TIMEOUT_S", 1.0)
    start = time.monotonic()
    check = doctor._probe(None, _hangs)
    assert time.monotonic() - start < 30
    assert (check.status, check.detail) == ("fail", "no answer within 1 s")


def test_the_childs_answer_comes_back_to_the_check() -> None:
    check = doctor._probe("some-model", _answers)
    assert check.status == "ok"
    assert check.detail.startswith("position on a 2-piece item: verdicts [False, True], ")
    assert "(12 tokens)" in check.detail


def _answers_with_rate(model, reporter):
    return {**_answers(model, reporter), "prompt_tokens_per_s": 50.0, "threads": 2}


def test_the_prompt_rate_says_what_the_main_command_takes_here() -> None:
    call, result = doctor._probe_result(None, _answers_with_rate)
    assert call.status == "ok"
    check = doctor._rate(None, result)
    assert check.name == "prompt rate"
    assert check.detail.startswith("50 prompt tokens/s on 2 threads: ")
    seconds = doctor.MAIN_COMMAND_TOKENS / 50.0
    assert f"a floor of about {seconds:.0f} s here" in check.detail
    # another judge's tokens were not counted: its rate alone
    assert doctor._rate("other", result).detail == "50 prompt tokens/s on 2 threads"


def test_a_failed_call_gives_no_rate() -> None:
    assert doctor._probe_result(None, _library_error)[1] == {}


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
