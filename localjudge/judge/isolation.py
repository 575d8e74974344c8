"""Run a judge in a child process, so that a native crash is a message, not silence.

llama.cpp is C++: a segfault (the AMX kernels of llama.cpp #20824, a driver fault) or the
kernel's OOM killer ends the process at once, with no Python frame left to say anything. Every
command that loads a judge therefore runs it in a supervised child (:func:`supervise`; ``spawn``:
a fresh interpreter) and stays a small supervisor: ``eval`` (:func:`run_in_child`), each judge of
``bench`` in turn, and the doctor's judge call. The child reports which items it hands to the
judge and which are done, through a pipe, and finally what its work returned; when it dies by a
signal, the parent prints one line naming the signal, the item and metric in flight, that
finished results are kept (the run's partial file and the cache), and how to resume, and exits
with ``128 + signal`` (139 for SIGSEGV, 137 for SIGKILL), as a shell would. The library itself
always judges in-process.

The child follows its parent: on Linux the kernel kills it when the parent dies
(``PR_SET_PDEATHSIG``); elsewhere a watchdog thread notices the parent is gone. Ctrl-C and
SIGTERM reach the parent, which passes the first on to the child (a second one kills it): the
child sits in a process group of its own, so a terminal's Ctrl-C is not delivered to it twice;
it treats SIGTERM as Ctrl-C (finished work kept, exit 130).

At the top of :mod:`localjudge.judge`: any layer may use it (standard library only; what the
child runs is handed in).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
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

    def result(self, value: Any) -> None:
        """What the child's work returned, for the parent (picklable)."""
        self._send(("result", value))

    def _send(self, message: tuple[Any, ...]) -> None:
        with contextlib.suppress(OSError, ValueError):  # the parent is gone: nobody to tell
            self._conn.send(message)


@dataclass(frozen=True)
class ChildExit:
    """How a supervised child ended."""

    #: the exit code to use: the child's own, or ``128 + N`` when signal N killed it
    code: int
    #: the name of the signal that killed the child (None: it exited by itself)
    signal: str | None
    #: what the child had handed to the judge and not finished when it ended
    flight: Flight
    #: what ``target`` returned in the child (None when it died or returned nothing)
    value: Any = None
    #: SIGINT or SIGTERM reached this process while the child ran (and was passed on)
    interrupted: bool = False
    #: the child ran past ``timeout`` and was killed
    timed_out: bool = False


def supervise(
    target: Callable[[Any, Reporter], Any],
    params: Any,
    *,
    timeout: float | None = None,
) -> ChildExit:
    """Run ``target(params, reporter)`` in a spawned child and wait for it, passing SIGINT and
    SIGTERM on to it (a second one kills it). What ``target`` returns comes back as
    :attr:`ChildExit.value`; an interrupt that ends the child is exit code 130.

    ``target`` must be importable (a module-level function), ``params`` and the returned value
    picklable. With ``timeout`` (seconds) a child still running then is killed."""
    import multiprocessing  # noqa: PLC0415 (only the commands that load a judge need it)

    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child_main, args=(target, params, send, os.getpid()), name="localjudge-judge"
    )
    flight = Flight()
    returned: list[Any] = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    forwarded: list[int] = []

    def forward(signum: int, frame: object) -> None:
        if proc.pid is None:
            return
        # the first is passed on (the child stops as on Ctrl-C); the next one kills it
        forwarded.append(signum)
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signum if len(forwarded) == 1 else signal.SIGKILL)

    def take(message: tuple[Any, ...]) -> None:
        if message[0] == "result":
            returned.append(message[1])
        else:
            flight.update(message)

    for sig in previous:
        signal.signal(sig, forward)
    try:
        proc.start()
        send.close()
        timed_out = _wait(proc, receive, take, timeout)
    finally:
        if proc.is_alive():  # this process is being torn down: never leave the judge behind
            proc.kill()
            proc.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        receive.close()
    code = proc.exitcode
    assert code is not None
    if len(forwarded) > 1 and code == -signal.SIGKILL:
        code = 130  # killed by the second Ctrl-C: an interrupt, not a crash
    return ChildExit(
        code=128 - code if code < 0 else code,
        signal=_signal_name(-code) if code < 0 else None,
        flight=flight,
        value=returned[-1] if returned else None,
        interrupted=bool(forwarded),
        timed_out=timed_out,
    )


def _wait(
    proc: Any, receive: Connection, take: Callable[[Any], None], timeout: float | None
) -> bool:
    """Take the child's messages until it ends (True: killed at ``timeout``)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    timed_out = False
    while True:
        try:
            if receive.poll(0.2):
                take(receive.recv())
                continue
        except (EOFError, OSError):
            break  # the child closed its end: it is exiting
        if not proc.is_alive():
            break
        if deadline is not None and time.monotonic() > deadline:
            timed_out = True
            proc.kill()
            break
    proc.join()
    with contextlib.suppress(EOFError, OSError):  # what it sent just before it ended
        while receive.poll(0):
            take(receive.recv())
    return timed_out


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def run_in_child(
    target: Callable[[Any, Reporter], Any],
    params: Any,
    *,
    resume_hint: str,
) -> int:
    """Run ``target(params, reporter)`` in a supervised child (:func:`supervise`) and return the
    exit code to use. A child killed by signal N prints the crash line and gives ``128 + N``; a
    run that an interrupt reached but that had already finished says so."""
    ended = supervise(target, params)
    if ended.signal is not None:
        print(
            f"localjudge: error: {death_line(ended, resume_hint)}",
            file=sys.stderr,
            flush=True,
        )
    elif ended.interrupted and ended.code == 0:
        print(
            "localjudge: interrupted after the run had finished every item: its results are "
            "complete",
            file=sys.stderr,
            flush=True,
        )
    return ended.code


#: what a signal that kills a judge process usually means
CAUSES = {
    "SIGSEGV": "a crash inside llama.cpp",
    "SIGBUS": "a crash inside llama.cpp",
    "SIGILL": "a CPU instruction this machine lacks",
    "SIGABRT": "llama.cpp aborted",
    "SIGKILL": "killed from outside, often the out-of-memory killer",
}


def death_line(ended: ChildExit, resume_hint: str, *, who: str = "the judge process") -> str:
    """The one line that says a judge process died: the signal, what it likely means, the
    item and metric in flight, that finished work is kept and how to resume."""
    name = ended.signal or "a signal"
    cause = CAUSES.get(name, "a signal")
    return (
        f"{who} died with {name} ({cause}) {ended.flight.describe()}; finished results are "
        f"kept ({resume_hint}): run the same command again to resume, and `localjudge doctor` "
        "to check this machine"
    )


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM in this (main) thread stops the work as Ctrl-C does: a
    ``KeyboardInterrupt`` (exit 130 in the CLI) instead of an abrupt end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    _term_as_interrupt()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class InterruptLatch:
    """Remembers that SIGINT (or SIGTERM turned into it) reached this process while the block
    ran, so that an interrupt some library swallowed still stops the work: Python drops an
    exception raised inside a finalizer (``__del__``: "Exception ignored in ..."), and Ray Data
    runs its executors' shutdown in one, so a Ctrl-C that lands there was lost and the run went
    on to its end. :meth:`check` raises ``KeyboardInterrupt`` once the signal has been seen.

    The handler it installs calls the one it replaces (which raises), so nothing else changes.
    Outside the main thread (no signal can be handled there) it does nothing."""

    def __init__(self) -> None:
        self.seen = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> InterruptLatch:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            if self._previous is not signal.SIG_IGN:  # an ignored SIGINT stays ignored
                signal.signal(signal.SIGINT, self._on_sigint)
                self._installed = True
        return self

    def _on_sigint(self, signum: int, frame: Any) -> None:
        self.seen = True
        previous = self._previous
        if callable(previous):
            previous(signum, frame)
        else:
            signal.default_int_handler(signum, frame)

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` when an interrupt arrived since the block began."""
        if self.seen:
            raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False


def _child_main(
    target: Callable[[Any, Reporter], Any],
    params: Any,
    conn: Connection,
    parent: int,
) -> None:
    _follow_parent(parent)
    if hasattr(os, "setpgrp"):
        with contextlib.suppress(OSError):
            os.setpgrp()  # a terminal's Ctrl-C goes to the parent, which passes it on once
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _term_as_interrupt()
    reporter = Reporter(conn)
    try:
        value = target(params, reporter)
    except KeyboardInterrupt:
        sys.exit(130)  # as a shell reports Ctrl-C; the parent says what it means
    if value is not None:
        reporter.result(value)


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
