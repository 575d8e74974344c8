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
from localjudge.data.item import make_item
from localjudge.decisions import decide_all, judge_cutoffs
from localjudge.judge.protocol import Generation, generate_many
from localjudge.judge.schemas import worst_case_tokens
from localjudge.metrics import METRICS, ContextPosition, ContextRelevance, Metric, MetricResult
from localjudge.metrics.asks import Answers, Ask, reason_request

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "rag.jsonl"
#: threads of the in-process judges (the only llama.cpp running while a test uses them)
N_THREADS = 2
#: the CLI's own banner for errors
CLI_ERROR = "localjudge: error:"
#: the judge of the machinery tests: the smallest bundled one (a focused set runs the default)
SMOLLM2 = "smollm2-135m"


def _clear(verdicts: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    close = [
        (v.get("index"), v["close_call"][key]) for v in verdicts if key in v.get("close_call", {})
    ]
    assert not close, (
        f"{key}: close calls (index, distance to the cut-off) {close}: they can flip on another "
        "machine, so the case is not clear enough to pin"
    )
    return verdicts


@pytest.fixture
def clear_verdicts() -> Callable[[list[dict[str, Any]], str], list[dict[str, Any]]]:
    """``clear_verdicts(verdicts, key)``: ``verdicts``, after checking that none of their
    ``key`` decisions is a close call. A verdict within its kind's margin of its cut-off
    (``CLOSE_CALL_MARGINS``) can go the other way on another CPU, thread count or batch
    (docs/reliability.md, "Close calls"), so a test that pins a verdict pins only clear ones
    and holds on every machine."""
    return _clear


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
    """The real judge calls made through a metric (decisions, then reasons), and its result."""

    generations: list[Generation[Any]]
    result: MetricResult
    asks: list[Ask]
    n_contexts: int

    @property
    def raw(self) -> str:
        """The raw outputs of every call, one a line (what ``MetricResult.raw`` holds)."""
        return "\n".join(g.raw for g in self.generations)


def _check_output(judge: Any, gen: Generation[Any], schema: type[Any]) -> None:
    """SPEC's "The judge's output" for one call: the value validates, ``raw`` is compact JSON of
    exactly that value, and the output fits its bound and the window."""
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


def judged(judge: Any, metric: Metric, record: Mapping[str, Any]) -> Judged:
    """Run ``metric`` on ``record`` with ``judge``, one call per ask (then one reason call per
    explained decision when the metric has reasons on), checking every call's output against
    SPEC's "The judge's output"; position/relevance give exactly one verdict per piece, indexed
    0..n-1, each piece asked in order; decisions are made with the judge's own cut-offs and
    combinations, as the product makes them."""
    item = make_item(record, index=0)
    asks = metric.build(item)
    assert not isinstance(asks, MetricResult), "expected judge calls"
    assert asks, "expected at least one ask"
    generations: list[Generation[Any]] = []
    for ask in asks:
        [gen] = generate_many(judge, [ask.request])  # with its read span, as the runner asks
        assert isinstance(gen, Generation)
        _check_output(judge, gen, ask.request.schema)
        generations.append(gen)
    # decided as the product decides: with the judge's own cut-offs and combinations
    answers = Answers(asks, decide_all(asks, generations, judge_cutoffs(judge.identity)))
    if metric.reasons:
        for ask in asks:
            if ask.decision is None or not ask.explain:
                continue
            request = reason_request(ask, answers[ask])
            gen = judge.generate(request.messages, request.schema)
            _check_output(judge, gen, request.schema)
            generations.append(gen)
            answers = answers.with_reason(ask, gen.value.reason)
    n = len(record["retrieved_contexts"])
    if isinstance(metric, (ContextPosition, ContextRelevance)):
        # the baseline call first: the QUESTION after no passage, read
        assert asks[0].baseline
        assert asks[0].at == -1
        assert generations[0].reading is not None
        assert generations[0].reading.tokens > 0
    if isinstance(metric, ContextPosition):
        assert [a.at for a in asks[1:]] == list(range(n))
    if isinstance(metric, ContextRelevance):
        # a grade and a used call per piece, in order, then the item's one missing call
        assert [a.at for a in asks[1:-1]] == [i for i in range(n) for _ in (0, 1)]
        assert asks[-1].decision is None
        assert len(answers[asks[-1]].value.missing) <= 3
    result = metric.finish(item, answers)
    if isinstance(metric, (ContextPosition, ContextRelevance)):
        assert [v["index"] for v in result.verdicts] == list(range(n))
    assert not math.isnan(result.value)
    assert 0.0 <= result.value <= 1.0
    assert result.reason
    return Judged(generations=generations, result=result, asks=list(asks), n_contexts=n)


def n_calls(
    records: list[Mapping[str, Any]],
    metrics: tuple[str, ...] | list[str],
    reasons: bool | None = None,
) -> int:
    """The judge calls a run of the named metrics makes on ``records``: one per ask, plus, when
    the metric has reasons on, one reason per explained decision. ``reasons``: whether the run
    asked them (an eval or bench run given ``--reasons``; its summary.json records it per
    metric); None: the metrics' default settings (reasons off). A call two metrics of an item
    ask alike (position's and relevance's baseline call) is made once."""
    total = 0
    options = {} if reasons is None else {"reasons": reasons}
    for i, record in enumerate(records):
        item = make_item(record, index=i)
        asked: set[str] = set()
        for name in metrics:
            metric = METRICS[name](**options)
            asks = metric.build(item)
            if isinstance(asks, MetricResult):
                continue
            asked.update(json.dumps([a.request.messages, a.request.read_chars]) for a in asks)
            if metric.reasons:
                total += sum(a.decision is not None and a.explain for a in asks)
        total += len(asked)
    return total


@pytest.fixture(scope="session")
def count_calls() -> Callable[..., int]:
    """:func:`n_calls`, as a fixture for the test modules."""
    return n_calls


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
