"""``localjudge doctor`` on this machine: every check, a real judge call, and each kind of
problem turned into a failed check with a hint and exit code 1."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from localjudge.judge.cache.database import Cache
from localjudge.judge.models.registry import resolve_model
from localjudge.judge.protocol import GenerationStats

pytestmark = pytest.mark.model

CHECKS = ("localjudge", "packages", "llama.cpp", "judge", "cache", "judge call", "prompt rate")


def _lines(proc: Any) -> dict[str, str]:
    """The report's lines by check name (hint lines are attached to their check)."""
    out: dict[str, str] = {}
    last = ""
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition(" ")
        rest = rest.strip()
        if status in ("OK", "WARN", "FAIL"):
            name = next(c for c in sorted(CHECKS, key=len, reverse=True) if rest.startswith(c))
            out[name] = line
            last = name
        else:
            out[last] += "\n" + line
    return out


def test_a_healthy_machine_passes_every_check(cli: Any, isolated_env: Path) -> None:
    proc = cli("doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = _lines(proc)
    assert list(lines) == list(CHECKS)
    assert all(line.startswith(("OK", "WARN")) for line in lines.values()), proc.stdout
    assert "AMX:" in lines["llama.cpp"]
    assert "GPU offload:" in lines["llama.cpp"]
    assert "matches the registry" in lines["judge"]
    assert "verdicts [" in lines["judge call"]
    assert " s (" in lines["judge call"]  # the call's timing
    rate = float(lines["prompt rate"].split()[3])
    assert rate > 1.0
    assert "the README's main command evaluates about 9," in lines["prompt rate"]


def test_no_call_skips_only_the_judge_call(cli: Any) -> None:
    proc = cli("doctor", "--no-call")
    assert proc.returncode == 0, proc.stdout
    assert list(_lines(proc)) == list(CHECKS[:-2])


def test_a_corrupt_cache_fails_with_a_hint(cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "calls.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path))
    proc = cli("doctor", "--no-call")
    assert proc.returncode == 1
    cache = _lines(proc)["cache"]
    assert cache.startswith("FAIL")
    assert "hint:" in cache
    assert "--no-cache" in cache


def test_a_healthy_cache_reports_its_calls(cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    with Cache(tmp_path / "calls.sqlite3") as cache:
        cache.put("k", "{}", GenerationStats(1, 1, 1, 0.1))
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path))
    proc = cli("doctor", "--no-call")
    assert proc.returncode == 0
    assert "1 calls, integrity ok" in _lines(proc)["cache"]
    with sqlite3.connect(tmp_path / "calls.sqlite3") as conn:  # the doctor only read it
        assert conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 1


def test_a_wrong_model_file_fails_the_judge_check(
    cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    copy = tmp_path / "judge.gguf"
    copy.write_bytes(resolve_model(None).path.read_bytes()[:-1] + b"\x00")
    registry = tmp_path / "models.json"
    registry.write_text(
        json.dumps({"judges": [{"alias": "mine", "path": str(copy), "sha256": "0" * 64}]}), "utf-8"
    )
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(registry))
    proc = cli("doctor", "-m", "mine", "--no-call")
    assert proc.returncode == 1
    judge = _lines(proc)["judge"]
    assert judge.startswith("FAIL")
    assert "!= registered 000000000000" in judge
    assert "hint: the file is corrupt or was replaced" in judge


def test_a_model_llama_cpp_cannot_load_fails_the_judge_call(cli: Any, tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.gguf"
    with resolve_model(None).path.open("rb") as f:
        truncated.write_bytes(f.read(1 << 20))
    proc = cli("doctor", "-m", str(truncated))
    assert proc.returncode == 1
    lines = _lines(proc)
    assert lines["judge"].startswith("OK")  # a GGUF header: only llama.cpp can tell
    assert lines["judge call"].startswith("FAIL")
    assert "could not load" in lines["judge call"]
    assert "hint:" in lines["judge call"]
