"""``localjudge doctor``: can this machine judge, and if not, why not?

Each check is one line: what was found and, for a problem, what to do about it. The last checks
are one real constrained judge call and this machine's prompt rate (:func:`prompt_rate`: a
judge's time is mostly the prompt tokens it evaluates, so the rate says what the README's main
command costs here). They run in a supervised child process (:mod:`localjudge.judge.isolation`,
as ``eval`` and ``bench`` judge), so a native crash of llama.cpp is reported as a failed check
with the signal's name instead of ending the doctor.
"""

from __future__ import annotations

import platform
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from localjudge.canonical import file_sha256
from localjudge.errors import LocalJudgeError
from localjudge.judge.cache import CACHE_FILENAME, default_cache_dir
from localjudge.judge.schemas import StrictModel
from localjudge.versions import DISTRIBUTION, package_version

Status = Literal["ok", "warn", "fail"]
#: seconds the judge-call probe may take (a cold load, one call and the prompt rate take well
#: under a minute on 2 cores)
PROBE_TIMEOUT_S = 300.0
#: the prompt tokens the default judge evaluates for the README's main command (``localjudge
#: eval examples/rag.jsonl``, 15 items x 3 metrics, reasons off, nothing cached), as
#: ``benchmarks/speed/protocol_speed.py`` counts them; its time is about these over the prompt rate
MAIN_COMMAND_TOKENS = 9_030
#: what the rate is measured on: a prompt of about 500 tokens, evaluated alone
_RATE_TEXT = " ".join(f"word{i} is a token of a long prompt about nothing." for i in range(42))


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report."""

    name: str
    status: Status
    detail: str
    hint: str = ""


def run_checks(model: str | None = None, *, probe: bool = True) -> Iterator[Check]:
    """The doctor's checks in order; ``probe`` adds one real judge call (in a child process)."""
    yield Check(
        "localjudge",
        "ok",
        f"{package_version(DISTRIBUTION)} (Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()})",
    )
    yield _packages()
    native = _native()
    yield native
    yield _judge_file(model)
    yield _cache()
    if probe and native.status != "fail":
        call, result = _probe_result(model)
        yield call
        if "prompt_tokens_per_s" in result:
            yield _rate(model, result)


def _packages() -> Check:
    found = {name: package_version(name) for name in ("llama-cpp-python", "llguidance")}
    missing = [name for name, v in found.items() if v == "absent"]
    detail = ", ".join(f"{name} {v}" for name, v in found.items())
    if missing:
        return Check(
            "packages",
            "fail",
            detail,
            f"pip install {' '.join(missing)} (localjudge never decodes unconstrained)",
        )
    return Check("packages", "ok", detail)


def _native() -> Check:
    from localjudge.judge.llama import AMX_ENV, amx_decision, native_info  # noqa: PLC0415

    try:
        info = native_info()
        amx = amx_decision(info)
    except LocalJudgeError as exc:
        return Check("llama.cpp", "fail", exc.message, exc.hint)
    cpu = [k for k, v in info.features.items() if v == "1"]
    devices = "; ".join(f"{d.name} ({d.kind}: {d.description})" for d in info.devices) or "none"
    buffers = "?" if info.extra_buffer_types is None else ", ".join(info.extra_buffer_types) or "-"
    detail = (
        f"CPU features: {' '.join(cpu) or 'none reported'}; extra buffer types: {buffers}; "
        f"AMX: {amx.state}; GPU offload: {'yes' if info.gpu_offload else 'no'}; "
        f"devices: {devices}"
    )
    if amx.state == "kept":
        return Check(
            "llama.cpp",
            "warn",
            detail,
            f"{AMX_ENV}=1 keeps llama.cpp's AMX kernels, which crash on many CPUs (llama.cpp "
            f"#20824); unset it if the judge call below dies",
        )
    return Check("llama.cpp", "ok", detail)


def _judge_file(model: str | None) -> Check:
    from localjudge.judge.models import DEFAULT_ALIAS, check_gguf, resolve_model  # noqa: PLC0415

    name = model or DEFAULT_ALIAS
    try:
        resolved = resolve_model(model)
        check_gguf(resolved.path)
    except LocalJudgeError as exc:
        return Check("judge", "fail", f"{name}: {exc.message}", exc.hint)
    size = resolved.path.stat().st_size
    sha = file_sha256(resolved.path)  # read now, not from the loader's memo
    origin = resolved.origin
    # where a store name resolved: its manifest, snapshot link or file, then the file itself
    via = ""
    if origin is not None:
        via = f"{origin.spec + ' ' if origin.spec != name else ''}via {origin.where} -> "
    detail = f"{name}: {via}{resolved.path} ({size / 1e6:.1f} MB), sha256 {sha[:12]}"
    registered = resolved.alias is not None or origin is None
    against = "the registry" if registered else "its store's digest"
    if resolved.expected_sha256 is None:
        return Check("judge", "ok", detail + " (no registered sha256 to compare)")
    if sha != resolved.expected_sha256:
        return Check(
            "judge",
            "fail",
            f"{detail} != {'registered' if registered else against} "
            f"{resolved.expected_sha256[:12]}",
            resolved.mismatch_hint()
            if origin is not None
            else "the file is corrupt or was replaced; reinstall its package",
        )
    return Check("judge", "ok", f"{detail} matches {against}")


def _cache() -> Check:
    root = default_cache_dir()
    if not root.exists():
        return Check("cache", "ok", f"{root}: not created yet")
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    detail = f"{root}: {size / 1e6:.1f} MB"
    db = root / CACHE_FILENAME
    if not db.exists():
        return Check("cache", "ok", f"{detail}, no {CACHE_FILENAME} yet")
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            verdict = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
            calls = int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    except sqlite3.Error as exc:
        verdict, calls = str(exc), 0
    if verdict != "ok":
        return Check(
            "cache",
            "fail",
            f"{detail}, {CACHE_FILENAME}: {verdict}",
            f"move {db} aside (or run with --no-cache); a new one is created on the next run",
        )
    return Check("cache", "ok", f"{detail}, {CACHE_FILENAME}: {calls} calls, integrity ok")


def _probe(model: str | None, target: Callable[[Any, Any], Any] | None = None) -> Check:
    """The judge-call check (:func:`_probe_result`)."""
    return _probe_result(model, target)[0]


def _probe_result(
    model: str | None, target: Callable[[Any, Any], Any] | None = None
) -> tuple[Check, dict[str, Any]]:
    """One real constrained judge call, in a supervised child process (``target``: what the
    child runs, :func:`probe_child` unless a test says otherwise), and what the child
    reported (empty when it failed)."""
    from localjudge.judge.isolation import supervise  # noqa: PLC0415

    start = time.perf_counter()
    ended = supervise(target or probe_child, model, timeout=PROBE_TIMEOUT_S)
    wall = time.perf_counter() - start
    if ended.interrupted:
        raise KeyboardInterrupt
    if ended.timed_out:
        return Check(
            "judge call",
            "fail",
            f"no answer within {PROBE_TIMEOUT_S:.0f} s",
            "the machine may be overloaded; try again",
        ), {}
    if ended.signal is not None:
        return Check(
            "judge call",
            "fail",
            f"llama.cpp died with {ended.signal} (exit {ended.code})",
            "a native crash; if LOCALJUDGE_AMX=1 is set, unset it; otherwise report it with "
            "this doctor's output",
        ), {}
    result: dict[str, Any] = ended.value or {}
    if ended.code != 0 or "error" in result or not result:
        message = result.get("error") or (
            f"the judge process ended with exit code {ended.code} and no answer (its output is "
            "above)"
        )
        return Check("judge call", "fail", str(message), str(result.get("hint", ""))), {}
    return Check(
        "judge call",
        "ok",
        f"{result['metric']} on a 2-piece item: verdicts {result['verdicts']}, "
        f"load {result['load_seconds']:.2f} s, call {result['seconds']:.2f} s "
        f"({result['completion_tokens']} tokens), {wall:.1f} s in all",
    ), result


def _rate(model: str | None, result: dict[str, Any]) -> Check:
    """The prompt-rate line: tokens/s, and what the README's main command would take here
    (measured for the default judge; another judge's tokens differ a little)."""
    rate = float(result["prompt_tokens_per_s"])
    detail = f"{rate:.0f} prompt tokens/s on {result['threads']} threads"
    if model is None:
        seconds = MAIN_COMMAND_TOKENS / rate
        detail += (
            f": the README's main command evaluates about {MAIN_COMMAND_TOKENS:,} prompt "
            f"tokens, a floor of about {seconds:.0f} s here (runs take up to 1.3x it, plus "
            "loading)"
        )
    return Check("prompt rate", "ok", detail)


class _YesNo(StrictModel):
    answer: Literal["yes", "no"]


def prompt_rate(judge: Any, runs: int = 2) -> float:
    """Prompt tokens per second ``judge`` (a bare, uncached judge) evaluates: the best of
    ``runs`` prompts of about 500 tokens, each evaluated alone (one short answer after it)."""
    rates = []
    for k in range(runs):
        out = judge.generate([{"role": "user", "content": f"{k} {_RATE_TEXT} Is it?"}], _YesNo)
        assert out.stats is not None
        rates.append(out.stats.evaluated_prompt_tokens / out.stats.seconds)
    return float(max(rates))


#: the probe's item: the README's example, in English
PROBE_ITEM: dict[str, Any] = {
    "user_input": "Where is the Eiffel Tower?",
    "retrieved_contexts": ["Paris is the capital of France.", "The Eiffel Tower is in Paris."],
    "reference": "The Eiffel Tower is in Paris.",
}


def probe_child(model: str | None, reporter: Any) -> dict[str, Any]:
    """The child process of the judge-call check: load the judge, make one call, return what
    the check shows (a library error as ``error`` and ``hint``)."""
    from localjudge.judge.llama import load_judge  # noqa: PLC0415
    from localjudge.metrics import ContextPosition  # noqa: PLC0415
    from localjudge.run.evaluate.evaluation import score  # noqa: PLC0415

    try:
        start = time.perf_counter()
        judge = load_judge(model, cache=False)
        load_seconds = time.perf_counter() - start
        result = score(ContextPosition(), judge, **PROBE_ITEM)
    except LocalJudgeError as exc:
        return {"error": exc.message, "hint": exc.hint}
    assert result.stats is not None
    return {
        "prompt_tokens_per_s": prompt_rate(judge),
        "threads": judge.n_threads,
        "metric": result.metric,
        "verdicts": [bool(v["relevant"]) for v in result.verdicts],
        "load_seconds": load_seconds,
        "seconds": result.stats.seconds,
        "completion_tokens": result.stats.completion_tokens,
    }


def report(checks: Iterator[Check], echo: Callable[[str], None]) -> bool:
    """Print each check as it finishes; True when none failed."""
    healthy = True
    for check in checks:
        echo(f"{check.status.upper():<5} {check.name:<11} {check.detail}")
        if check.hint:
            echo(f"{'':<5} {'':<11} hint: {check.hint}")
        healthy = healthy and check.status != "fail"
    return healthy
