"""Layering, checked cheaply: the package and its CLI's help stay free of the model stack, and the
scoring core imports only the standard library and numpy."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import localjudge.scoring

#: the model stack, Ray (the [ray] extra: loaded only by --ray), and the frameworks the
#: adapters in localjudge.integrations wrap (loaded only when one is imported)
HEAVY = ("llama_cpp", "outlines", "llguidance", "ray", "ragas", "deepeval", "langchain_core")


def run_python(code):
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


REPORT = """
import json, sys
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
print("\\n" + json.dumps(heavy))
""" % (HEAVY,)  # noqa: UP031


def heavy_modules(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def test_import_localjudge_does_not_load_the_model_stack():
    out = run_python("import localjudge\nassert localjudge.LlamaJudge\n" + REPORT)
    assert heavy_modules(out) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["eval", "--help"],
        ["bench", "--help"],
        ["models", "--help"],
        ["cache", "ls", "--help"],
    ],
)
def test_cli_help_does_not_load_the_model_stack(argv):
    code = f"""
    import sys
    from localjudge.cli import main
    try:
        main({argv!r})
    except SystemExit as exc:
        assert exc.code == 0, exc.code
    else:
        raise AssertionError("click should exit")
    """
    out = run_python(textwrap.dedent(code) + REPORT)
    assert heavy_modules(out) == []
    assert "Usage:" in out


def test_eval_without_ray_never_imports_ray(tmp_path):
    data = tmp_path / "data.jsonl"
    record = {"user_input": "q", "retrieved_contexts": ["yes"], "response": "yes"}
    data.write_text(json.dumps(record) + "\n", "utf-8")
    code = f"""
    from localjudge.cli import main
    from localjudge.testing import ScriptedJudge
    reply = {{"verdicts": [{{"index": 0, "reason": "r", "relevant": True}}]}}
    try:
        main(
            ["eval", {str(data)!r}, "--metric", "position", "-o", {str(tmp_path / "out")!r},
             "--no-cache", "-q"],
            obj={{"open_judge": lambda settings: ScriptedJudge([reply])}},
            standalone_mode=False,
        )
    except SystemExit as exc:
        assert not exc.code, exc.code
    """
    out = run_python(textwrap.dedent(code) + REPORT)
    assert (tmp_path / "out" / "results.jsonl").is_file()
    assert heavy_modules(out) == []


def test_cli_help_lists_the_commands():
    code = """
    from localjudge.cli import main
    try:
        main(["--help"])
    except SystemExit:
        pass
    """
    out = run_python(code)
    assert "eval" in out
    assert "models" in out


def _imported_roots(path):
    tree = ast.parse(Path(path).read_text("utf-8"))
    roots = set()
    for node in ast.walk(tree):  # every import, at any depth (function-level ones too)
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "scoring.py must not import relatively"
            roots.add(node.module.split(".")[0])
    return roots


def test_scoring_imports_only_the_standard_library_and_numpy():
    roots = _imported_roots(localjudge.scoring.__file__)
    assert "numpy" in roots
    outside = {r for r in roots if r not in sys.stdlib_module_names and r != "__future__"}
    assert outside == {"numpy"}


def test_the_import_check_sees_function_level_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import math\n\ndef f():\n    from localjudge import judge\n", "utf-8")
    assert _imported_roots(sample) == {"math", "localjudge"}


def test_scoring_runs_without_the_rest_of_the_package():
    # the module is importable on its own, as a file, without localjudge/__init__.py
    code = f"""
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("scoring_alone", {localjudge.scoring.__file__!r})
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scoring_alone"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    assert mod.recall_score([1, 0]) == 0.5
    assert not any(m == "localjudge" or m.startswith("localjudge.") for m in sys.modules)
    assert "pydantic" not in sys.modules
    print("ok")
    """
    assert run_python(code).strip() == "ok"
