"""A Ctrl-C that lands in llama.cpp's log callback is kept and raised once control is back in
Python; anywhere else it raises at once (tests/reliability covers the real run)."""

from __future__ import annotations

import signal
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from localjudge.judge.engine import log as llama_log


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Any:
    """install_log on a stand-in for llama_cpp (its decorator returns the function itself)."""
    monkeypatch.setitem(llama_log._log, "callback", None)
    monkeypatch.setattr(llama_log, "_interrupts", [])
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    fake = SimpleNamespace(llama_log_callback=lambda f: f, llama_log_set=lambda cb, data: None)
    try:
        llama_log.install_log(fake, verbose=False)
        yield llama_log._log["callback"], signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


class _Signalled(bytes):
    """Log text whose decoding delivers SIGINT to the handler from inside the callback."""

    handler: Any = None

    def decode(self, *args: Any) -> str:  # type: ignore[override]
        type(self).handler(signal.SIGINT, sys._getframe(1))
        return "line"


def test_an_interrupt_inside_the_callback_is_kept_then_raised(installed: Any) -> None:
    callback, handler = installed
    assert handler is not signal.default_int_handler
    _Signalled.handler = handler
    callback(3, _Signalled(b"x"), None)  # returns: the interrupt is kept, not lost
    with pytest.raises(KeyboardInterrupt):
        llama_log.raise_pending_interrupt()
    llama_log.raise_pending_interrupt()  # raised once


def test_an_interrupt_anywhere_else_raises_at_once(installed: Any) -> None:
    _, handler = installed
    with pytest.raises(KeyboardInterrupt):
        handler(signal.SIGINT, sys._getframe())
    llama_log.raise_pending_interrupt()  # nothing was kept


def test_a_users_own_handler_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(llama_log._log, "callback", None)
    previous = signal.getsignal(signal.SIGINT)

    def mine(signum: int, frame: Any) -> None:
        return None

    signal.signal(signal.SIGINT, mine)
    try:
        fake = SimpleNamespace(llama_log_callback=lambda f: f, llama_log_set=lambda cb, d: None)
        llama_log.install_log(fake, verbose=False)
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, previous)
