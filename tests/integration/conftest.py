"""Shared fixtures for the real-model tests (the bundled GGUF judges, run by llama.cpp).

These tests run llama.cpp on a 2-core CPU: each model is loaded once per session, every
subprocess uses one thread, and subprocesses run one after another (never two llama.cpp
processes at once). The cache directory (judge calls, llguidance token tables, the assembled
Gemma file) is one temporary directory for the whole session.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localjudge import load_judge
from localjudge.data.items import make_item
from localjudge.judge.protocol import Generation
from localjudge.judge.schemas import worst_case_tokens
from localjudge.metrics import ContextPosition, ContextRelevance, Metric, MetricResult

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "rag.jsonl"
#: threads of the in-process judges (the only llama.cpp running while a test uses them)
N_THREADS = 2
#: the CLI's own banner for errors
CLI_ERROR = "localjudge: error:"
#: the judge of the machinery tests: the smallest bundled one (a focused set runs the default)
SMOLLM2 = "smollm2-135m"


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one cache directory of the session (token tables, assembled Gemma, sha256 memo)."""
    return tmp_path_factory.mktemp("localjudge-cache")


def _isolate(mp: pytest.MonkeyPatch, cache_root: Path) -> None:
    mp.setenv("LOCALJUDGE_CACHE_DIR", str(cache_root))
    mp.setenv("LOCALJUDGE_MODELS", str(cache_root / "no-user-registry.json"))
    mp.delenv("LOCALJUDGE_DEBUG", raising=False)


@pytest.fixture(scope="module", autouse=True)
def isolated_env(cache_root: Path) -> Iterator[Path]:
    """For each module here (and the subprocesses it starts): the session's cache directory, no
    user registry, no debug tracebacks. Restored after the module, so nothing leaks out."""
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, cache_root)
        yield cache_root


@pytest.fixture(scope="session")
def judge(cache_root: Path) -> Any:
    """SmolLM2-135M-Instruct, loaded once per session."""
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, cache_root)
        return load_judge(SMOLLM2, n_threads=N_THREADS, cache=False)


@dataclass(frozen=True)
class Judged:
    """One real judge call made through a metric, and the metric's result."""

    generation: Generation[Any]
    result: MetricResult
    schema: type[Any]
    n_contexts: int


def judged(judge: Any, metric: Metric, record: Mapping[str, Any]) -> Judged:
    """Run ``metric`` on ``record`` with ``judge`` and check every promise of SPEC's "The judge's
    output": the value validates, ``raw`` is compact JSON of exactly that value, the output fits
    its bound, and position/relevance give exactly one verdict per piece, indexed 0..n-1."""
    item = make_item(record, index=0)
    request = metric.build(item)
    assert not isinstance(request, MetricResult), "expected a judge call"
    gen = judge.generate(request.messages, request.schema)
    schema = request.schema
    # valid: an instance of the schema, and raw parses back to the same value
    assert isinstance(gen.value, schema)
    assert schema.model_validate_json(gen.raw) == gen.value
    # compact: no whitespace between tokens, no escapes (strings exclude '"' and '\')
    compact = json.dumps(json.loads(gen.raw), separators=(",", ":"), ensure_ascii=False)
    assert compact == gen.raw
    # complete: within the bound max_tokens was set to, and within the window
    assert 0 < gen.stats.completion_tokens <= worst_case_tokens(schema)
    assert gen.stats.prompt_tokens + gen.stats.completion_tokens <= judge.n_ctx
    assert 0 <= gen.stats.evaluated_prompt_tokens <= gen.stats.prompt_tokens
    n = len(record["retrieved_contexts"])
    if isinstance(metric, ContextPosition):
        assert [v.index for v in gen.value.verdicts] == list(range(n))
    if isinstance(metric, ContextRelevance):
        assert [p.index for p in gen.value.pieces] == list(range(n))
        assert len(gen.value.missing) <= 3
    result = metric.finish(item, gen.value)
    assert not math.isnan(result.value)
    assert 0.0 <= result.value <= 1.0
    assert result.reason
    return Judged(generation=gen, result=result, schema=schema, n_contexts=n)


@pytest.fixture(scope="session")
def check_call() -> Callable[[Any, Metric, Mapping[str, Any]], Judged]:
    """:func:`judged`, as a fixture for the test modules."""
    return judged


def run_python(
    code: str, *args: str, timeout: float = 120, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code args...`` in the repository root (one at a time: callers wait)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(env) if env is not None else None,
        check=False,
    )


CLI_CODE = "from localjudge.cli import main; main(prog_name='localjudge')"


def run_cli(
    *args: str, timeout: float = 300, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    """``localjudge ARGS...`` in a subprocess; ``prelude`` runs first (to break an import)."""
    return run_python(prelude + CLI_CODE, *args, timeout=timeout)


@pytest.fixture(scope="session")
def python_runner() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_python


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_cli


def assert_one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """stderr is the CLI's error line (plus an optional hint line), no traceback or log noise."""
    lines = proc.stderr.splitlines()
    errors = [line for line in lines if line.startswith(CLI_ERROR)]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert all(line.startswith("localjudge: ") for line in lines), proc.stderr
    for needle in needles:
        assert needle in errors[0], proc.stderr
    return errors[0]


@pytest.fixture(scope="session")
def one_error_line() -> Callable[..., str]:
    return assert_one_error_line
