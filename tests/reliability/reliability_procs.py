"""Helpers of the reliability tests that run real ``localjudge eval`` processes.

Every subprocess runs SmolLM2-135M (``-m smollm2-135m``) with one thread (``-t 1``), a private
``--cache`` file and ``-o`` directory; ``LOCALJUDGE_CACHE_DIR`` points at one temporary directory
for the whole session, where the llguidance token table is built once and reused.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from localjudge.metrics.statements import split_statements

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "rag.jsonl"
METRICS = ("recall", "position")
#: the real items: the first six examples (see :func:`judge_calls` for what each costs)
N_REAL = 6
#: fields whose value depends on timing or on llama.cpp's KV-cache state, not on the verdict
TIMING_FIELDS = ("seconds", "evaluated_prompt_tokens")
#: a process that loads the model and scores nothing must be done well within this
RUN_TIMEOUT = 600


def real_records() -> list[dict[str, Any]]:
    lines = EXAMPLES.read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines[:N_REAL]]


#: what every eval run here (:func:`eval_args`) passes about reasons: nothing, so eval's default
#: (no reasons); put "--reasons" here to have each run ask a reason per decision (REASONS, and
#: so the call counts, follow)
REASON_ARGS: tuple[str, ...] = ()


def asks_reasons(args: Sequence[str]) -> bool:
    """Whether an ``eval`` command line asks a reason per decision: its last ``--reasons`` or
    ``--no-reasons``, else eval's own default (read from the command's option)."""
    given = [a for a in args if a in ("--reasons", "--no-reasons")]
    if given:
        return given[-1] == "--reasons"
    from localjudge.cli import main  # noqa: PLC0415

    [option] = [p for p in main.commands["eval"].params if p.name == "reasons"]
    return bool(option.default)


#: whether the eval runs here ask reasons
REASONS = asks_reasons(REASON_ARGS)


def judge_calls(records: list[dict[str, Any]], *, reasons: bool) -> int:
    """The judge calls of recall and position on ``records``: one decision per reference
    statement (recall) and per context piece (position), and with ``reasons`` on (a run given
    ``--reasons``) one reason call per decision; and position's baseline call per item (no
    passage, no reason)."""
    decisions = sum(
        len(split_statements(r["reference"])) + len(r["retrieved_contexts"]) for r in records
    )
    return (1 + reasons) * decisions + len(records)


def filler(k: int) -> str:
    """A line that costs no judge call: unreadable JSON, a non-object, or an item whose empty
    context makes position 0 without a call and recall an invalid-item error."""
    if k % 4 == 0:
        return f'{{"id": "cut-{k}", "user_input": '
    if k % 4 == 1:
        return "[1, 2]"
    return json.dumps(
        {"id": f"empty-{k}", "user_input": "Anything?", "retrieved_contexts": [], "reference": "x"}
    )


def dataset_lines() -> list[str]:
    """18 records (two runner chunks of 16 + 2): the six real items at 0, 5, 10, 15 (first
    chunk: N_FIRST_CALLS calls) and 16, 17 (second chunk: the rest); fillers elsewhere."""
    real = iter(json.dumps(r, ensure_ascii=False) for r in real_records())
    return [next(real) if i in (0, 5, 10, 15, 16, 17) else filler(i) for i in range(18)]


N_RECORDS = 18
#: the judge calls of a whole run of the dataset, and of its first chunk
N_CALLS = judge_calls(real_records(), reasons=REASONS)
N_FIRST_CALLS = judge_calls(real_records()[:4], reasons=REASONS)


@dataclass(frozen=True)
class Env:
    """Where the session's shared state lives and how to start ``localjudge``."""

    exe: str
    env: dict[str, str]
    cache_dir: Path
    data: Path


def eval_args(lj: Env, out: Path, cache: Path, data: Path | None = None, *extra: str) -> list[str]:
    metrics = [a for m in METRICS for a in ("--metric", m)]
    return [
        lj.exe,
        "eval",
        str(data or lj.data),
        "-m",
        "smollm2-135m",
        *metrics,
        "-t",
        "1",
        "--cache",
        str(cache),
        "-o",
        str(out),
        *REASON_ARGS,
        *extra,
    ]


def _default_sigint() -> None:
    # a shell that starts this test run in the background makes SIGINT ignored, and Python
    # then installs no KeyboardInterrupt handler in the child: give the child the default back
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(lj: Env, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args,
        cwd=ROOT,
        env=lj.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,  # noqa: PLW1509 (no threads are running here)
    )


def finish(proc: subprocess.Popen[str], timeout: float = RUN_TIMEOUT) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"localjudge eval ran past {timeout} s\nstdout:\n{out}\nstderr:\n{err}")
    return proc.returncode, out, err


def run_to_end(lj: Env, args: list[str]) -> tuple[int, str, str]:
    return finish(start(lj, args))


def cache_rows(path: Path) -> int:
    """Rows in a cache file, read without the Cache class (no migration, no write lock); 0 while
    the file or its table does not exist yet."""
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(path, timeout=5)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def wait_for(
    proc: subprocess.Popen[str],
    ready: Callable[[], bool],
    *,
    timeout: float = RUN_TIMEOUT,
    poll: float = 0.02,
) -> bool:
    """Poll ``ready`` until it holds (True) or the process ends first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        if proc.poll() is not None:
            return ready()
        time.sleep(poll)
    proc.kill()
    pytest.fail(f"condition not reached within {timeout} s")


def kill(proc: subprocess.Popen[str], sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)


def size(path: Path) -> int:
    """The size of a file that may not exist (yet, or any more)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def untimed(rows: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in rows]


def check_complete(rows: list[Mapping[str, Any]], n_records: int) -> None:
    """Every record x metric exactly once, in order."""
    assert [(r["index"], r["metric"]) for r in rows] == [
        (i, m) for i in range(n_records) for m in METRICS
    ]


@dataclass(frozen=True)
class Reference:
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    seconds: float


def judge_child(proc: subprocess.Popen[str]) -> int:
    """The pid of the judge's (spawned) child process under the ``localjudge`` process
    ``proc``: the first one, or the next once the one before has ended."""
    for _ in range(1000):
        if children := judge_children(proc.pid):
            return children[0]
        time.sleep(0.01)
    pytest.fail("no judge child process appeared")


def judge_children(pid: int) -> list[int]:
    """The spawned judge processes among ``pid``'s children (Linux's /proc)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(child) for child in children if b"spawn_main" in _cmdline(child)]


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""  # it ended meanwhile


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie (dead, waiting to be reaped)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def gone_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` has ended within ``seconds``."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)
