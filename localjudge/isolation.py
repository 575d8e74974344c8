"""Run a command's work in a child process, so that a native crash is a message, not silence.

llama.cpp is C++: a segfault (the AMX kernels of llama.cpp #20824, a driver fault) or the
kernel's OOM killer ends the process at once, with no Python frame left to say anything. The
CLI therefore runs ``eval`` in a child process (``spawn``: a fresh interpreter) and stays a small
supervisor: the child reports which items it hands to the judge and which are done, through a
pipe; when it dies by a signal, the parent prints one line naming the signal, the item and
metric in flight, that finished results are kept (the run's partial file and the cache), and
how to resume, and exits with ``128 + signal`` (139 for SIGSEGV, 137 for SIGKILL), as a shell
would. The library itself always judges in-process.

The child follows its parent: on Linux the kernel kills it when the parent dies
(``PR_SET_PDEATHSIG``); elsewhere a watchdog thread notices the parent is gone. Ctrl-C and
SIGTERM reach the parent, which passes each on once to the child: the child sits in a process
group of its own, so a terminal's Ctrl-C is not delivered to it twice; it treats SIGTERM as
Ctrl-C (finished work kept, exit 130).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

#: set to 1 to run ``eval`` in the CLI's own process (debugging; no crash report)
IN_PROCESS_ENV = "LOCALJUDGE_IN_PROCESS"

_PR_SET_PDEATHSIG = 1


@dataclass
class Flight:
    """What the child has handed to the judge and not finished: (index, id, metric)."""

    pending: list[tuple[int, str, str]] = field(default_factory=list)

    def update(self, message: tuple[Any, ...]) -> None:
        kind, payload = message
        if kind == "judging":
            done = {(i, m) for i, _, m in self.pending} - {(i, m) for i, _, m in payload}
            self.pending = [p for p in self.pending if (p[0], p[2]) not in done]
            self.pending += [tuple(p) for p in payload if tuple(p) not in self.pending]
        elif kind == "done":
            index, metric = payload
            self.pending = [p for p in self.pending if (p[0], p[2]) != (index, metric)]

    def describe(self) -> str:
        if not self.pending:
            return "before or between judge calls"
        index, item_id, metric = self.pending[0]
        more = len(self.pending) - 1
        rest = f" ({more} more item(s) of the batch were waiting)" if more else ""
        return f"while judging item #{index} (id {item_id!r}), metric {metric}{rest}"


class Reporter:
    """The child's end of the pipe: what it hands to the judge and what it finished."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def judging(self, entries: Sequence[tuple[int, str, str]]) -> None:
        self._send(("judging", [list(e) for e in entries]))

    def done(self, index: int, metric: str) -> None:
        self._send(("done", (index, metric)))

    def _send(self, message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError, ValueError):  # the parent is gone: nobody to tell
            self._conn.send(message)


def run_in_child(
    target: Callable[[dict[str, Any], Reporter], None],
    params: dict[str, Any],
    *,
    resume_hint: str,
) -> int:
    """Run ``target(params, reporter)`` in a spawned child and return the exit code to use.

    ``target`` must be importable (a module-level function) and ``params`` picklable; the
    child's own exit code passes through. A child killed by signal N prints the crash line
    and gives ``128 + N``."""
    import multiprocessing  # noqa: PLC0415 (only the CLI's eval needs it)

    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child_main, args=(target, params, send, os.getpid()), name="localjudge-judge"
    )
    proc.start()
    send.close()
    flight = Flight()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    forwarded: set[int] = set()

    def forward(signum: int, frame: object) -> None:
        if proc.pid is not None and signum not in forwarded:  # once: the child is ending
            forwarded.add(signum)
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signum)

    for sig in previous:
        signal.signal(sig, forward)
    try:
        while True:
            try:
                if receive.poll(0.2):
                    flight.update(receive.recv())
                    continue
            except (EOFError, OSError):
                break  # the child closed its end: it is exiting
            if not proc.is_alive():
                break
        proc.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        receive.close()
    code = proc.exitcode
    assert code is not None
    if code >= 0:
        return code
    return _report_death(-code, flight, resume_hint)


def _report_death(signum: int, flight: Flight, resume_hint: str) -> int:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    cause = {
        "SIGSEGV": "a crash inside llama.cpp",
        "SIGBUS": "a crash inside llama.cpp",
        "SIGILL": "a CPU instruction this machine lacks",
        "SIGABRT": "llama.cpp aborted",
        "SIGKILL": "killed from outside, often the out-of-memory killer",
    }.get(name, "a signal")
    print(
        f"localjudge: error: the judge process died with {name} ({cause}) "
        f"{flight.describe()}; finished results are kept ({resume_hint}): run the same command "
        "again to resume, and `localjudge doctor` to check this machine",
        file=sys.stderr,
        flush=True,
    )
    return 128 + signum


def _child_main(
    target: Callable[[dict[str, Any], Reporter], None],
    params: dict[str, Any],
    conn: Connection,
    parent: int,
) -> None:
    _follow_parent(parent)
    if hasattr(os, "setpgrp"):
        with contextlib.suppress(OSError):
            os.setpgrp()  # a terminal's Ctrl-C goes to the parent, which passes it on once
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _term_as_interrupt()
    target(params, Reporter(conn))


def _term_as_interrupt() -> None:
    """SIGTERM ends the run as Ctrl-C does (finished work kept, exit 130). It is turned into a
    SIGINT, so that whatever handles SIGINT (the engine's, which keeps an interrupt that lands in
    llama.cpp's log callback) handles it too."""

    def on_term(signum: int, frame: Any) -> None:
        # the SIGINT handler itself, with the frame the signal landed in: the engine's defers
        # an interrupt that lands inside llama.cpp's log callback (ctypes would drop it)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            signal.default_int_handler(signal.SIGINT, frame)

    signal.signal(signal.SIGTERM, on_term)


def _follow_parent(parent: int) -> None:
    """End this process when ``parent`` dies (a SIGKILLed CLI must not leave a writer), also
    when it died before this child got here."""
    if os.getppid() != parent:
        os._exit(128 + signal.SIGKILL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # it died before prctl took effect
                    os._exit(128 + signal.SIGKILL)
                return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(128 + signal.SIGKILL)

    threading.Thread(target=watch, name="localjudge-parent-watch", daemon=True).start()
