"""Loading a judge: bad model files and a broken install fail early with one clear message.

Library: :class:`ModelError` (or :class:`ConstraintError` when constrained decoding is
unavailable). CLI: the error's exit code and one ``localjudge: error:`` line, no traceback.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from localjudge import ConstraintError, ModelError, load_judge
from localjudge.judge.models.registry import resolve_model

pytestmark = pytest.mark.model

WRONG_SHA = "0" * 64


def _real_model() -> Path:
    return resolve_model(None).path


def _missing(tmp: Path, registry: Path) -> tuple[str, str]:
    path = tmp / "nowhere" / "judge.gguf"
    return str(path), "neither a registered alias nor an existing file"


def _empty(tmp: Path, registry: Path) -> tuple[str, str]:
    path = tmp / "empty.gguf"
    path.write_bytes(b"")
    return str(path), "is empty"


def _text_file(tmp: Path, registry: Path) -> tuple[str, str]:
    path = tmp / "notes.gguf"
    path.write_text("this is a text file, not a model\n" * 10, "utf-8")
    return str(path), "is not a GGUF file"


def _tiny_header(tmp: Path, registry: Path) -> tuple[str, str]:
    path = tmp / "header.gguf"
    path.write_bytes(b"GGUF\x03\x00")
    return str(path), "is truncated"


def _truncated(tmp: Path, registry: Path) -> tuple[str, str]:
    path = tmp / "truncated.gguf"
    with _real_model().open("rb") as f:
        path.write_bytes(f.read(1 << 20))
    return str(path), "could not load"


def _wrong_sha(tmp: Path, registry: Path) -> tuple[str, str]:
    entry = {"alias": "bad-sha", "path": str(_real_model()), "sha256": WRONG_SHA}
    registry.write_text(json.dumps({"judges": [entry]}), "utf-8")
    return "bad-sha", f"expected {WRONG_SHA}"


def _alias_without_file(tmp: Path, registry: Path) -> tuple[str, str]:
    entry = {"alias": "ghost", "path": str(tmp / "ghost.gguf")}
    registry.write_text(json.dumps({"judges": [entry]}), "utf-8")
    return "ghost", "judge 'ghost' is not installed"


def _broken_registry(tmp: Path, registry: Path) -> tuple[str, str]:
    registry.write_text("{not json", "utf-8")
    return "smollm2-135m", "cannot read model registry"


CASES: dict[str, Callable[[Path, Path], tuple[str, str]]] = {
    "missing": _missing,
    "empty": _empty,
    "text_file": _text_file,
    "tiny_header": _tiny_header,
    "truncated": _truncated,
    "wrong_sha256": _wrong_sha,
    "alias_without_file": _alias_without_file,
    "broken_registry": _broken_registry,
}


@pytest.fixture
def user_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A per-test user registry file (absent until a case writes it)."""
    path = tmp_path / "models.json"
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(path))
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_bad_model_raises_one_clear_model_error(
    tmp_path: Path, user_registry: Path, case: str
) -> None:
    spec, expected = CASES[case](tmp_path, user_registry)
    with pytest.raises(ModelError) as info:
        load_judge(spec, n_threads=1, cache=False)
    exc = info.value
    assert expected in exc.message
    assert "\n" not in str(exc)
    assert exc.exit_code == 4
    if case not in ("wrong_sha256", "alias_without_file", "broken_registry"):
        assert Path(spec).name in exc.message  # names the file


@pytest.mark.parametrize("case", list(CASES))
def test_bad_model_on_the_cli_exits_4_with_one_error_line(
    tmp_path: Path, user_registry: Path, cli: Any, one_error_line: Any, case: str
) -> None:
    spec, expected = CASES[case](tmp_path, user_registry)
    out = tmp_path / "out"
    proc = cli("eval", "examples/rag.jsonl", "-m", spec, "-o", str(out), "-t", "1", timeout=120)
    assert proc.returncode == 4, proc.stderr
    one_error_line(proc, expected)
    assert proc.stdout == ""
    assert not (out / "results.jsonl").exists()


# --------------------------------------------------------------------------- missing dependencies

MISSING_SCRIPT = textwrap.dedent(
    """
    import json, sys
    for name in sys.argv[1].split(","):
        sys.modules[name] = None  # `import name` now raises ImportError
    from localjudge import LocalJudgeError, load_judge
    try:
        load_judge("smollm2-135m", n_threads=1, cache=False)
    except LocalJudgeError as exc:
        print(json.dumps({"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}))
    else:
        print(json.dumps({"type": None}))
    """
)


@pytest.mark.parametrize(
    ("modules", "error", "needle"),
    [
        ("llguidance", "ConstraintError", "llguidance"),
        ("llguidance,llguidance.numpy", "ConstraintError", "llguidance"),
        ("llguidance.numpy", "ConstraintError", "llguidance"),
        ("llama_cpp", "ModelError", "llama-cpp-python"),
    ],
)
def test_missing_dependency_fails_loading_with_a_hint(
    python_runner: Any, modules: str, error: str, needle: str
) -> None:
    proc = python_runner(MISSING_SCRIPT, modules, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["type"] == error, got
    assert "pip install" in got["hint"]
    assert needle in got["hint"] or needle in got["message"]
    if error == "ConstraintError":
        assert "never decodes unconstrained" in got["hint"]


def test_missing_llguidance_on_the_cli_exits_5(
    tmp_path: Path, cli: Any, one_error_line: Any
) -> None:
    proc = cli(
        "eval",
        "examples/rag.jsonl",
        "-m",
        "smollm2-135m",
        "-o",
        str(tmp_path / "out"),
        "-t",
        "1",
        # the package is hidden in this process only: judge here, not in a spawned child
        prelude="import os, sys; sys.modules['llguidance'] = None; "
        "os.environ['LOCALJUDGE_IN_PROCESS'] = '1'; ",
        timeout=120,
    )
    assert proc.returncode == ConstraintError.exit_code == 5, proc.stderr
    one_error_line(proc, "constrained decoding is unavailable")
    assert not (tmp_path / "out" / "results.jsonl").exists()
