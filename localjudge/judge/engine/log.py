"""llama.cpp's log, routed through Python, and the Ctrl-C that lands inside it.

llama.cpp logs through a ctypes callback; an interrupt raised while Python runs that callback
would be printed and dropped by ctypes. :func:`install_log` keeps it and
:func:`raise_pending_interrupt`, called after every llama.cpp call that may log (loading a model,
making a context, a decode call, reading a stored prefix), raises it once control is back.

Standard library only: ``llama_cpp`` is handed in by :mod:`localjudge.judge.llama.native`, which
imports it.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

#: interrupts that arrived while llama.cpp was calling back into Python to log a line
_interrupts: list[BaseException] = []
_log: dict[str, Any] = {"callback": None, "verbose": False}


def install_log(llama_cpp: Any, *, verbose: bool) -> None:
    """Route llama.cpp's log through a callback that prints errors (everything when
    ``verbose``) and keeps a Ctrl-C that lands inside it: ctypes would print and drop it, and the
    run would go on. :func:`raise_pending_interrupt` raises it once control is back in Python.

    A signal can arrive before the callback's first line (where no ``try`` holds it), so Python's
    default SIGINT handler is replaced, in the main thread and only while it is the default, by
    one that defers the interrupt when it lands in the callback and raises it anywhere else."""
    _log["verbose"] = verbose
    if _log["callback"] is not None:
        return

    def log_line(level: int, text: bytes, user_data: Any) -> None:
        try:
            if _log["verbose"] or level == 3:  # GGML_LOG_LEVEL_ERROR
                print(text.decode("utf-8", "replace"), end="", file=sys.stderr, flush=True)
        except BaseException as exc:  # noqa: BLE001 (an interrupt must survive the callback)
            _interrupts.append(exc)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if frame is not None and frame.f_code is log_line.__code__:
            _interrupts.append(KeyboardInterrupt())
            return
        signal.default_int_handler(signum, frame)

    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, on_sigint)
    # referenced for as long as llama.cpp may call it
    _log["callback"] = callback = llama_cpp.llama_log_callback(log_line)
    llama_cpp.llama_log_set(callback, None)


def raise_pending_interrupt() -> None:
    """Raise an interrupt that arrived inside llama.cpp's log callback, if one did."""
    if _interrupts:
        exc = _interrupts[0]
        _interrupts.clear()
        raise exc
