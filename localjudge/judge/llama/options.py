"""Parsing and defaults of the judge options that are not plain numbers.

Shared by the CLI (``-t``, ``-fa``, ``--chat-template-kwargs``), :class:`~localjudge.run.settings.
JudgeSettings` and :func:`~localjudge.judge.llama.judge.load_judge`, so every entry point accepts
the same values and fails with the same error. Standard library only (``psutil`` is imported when
the thread default is asked for).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from localjudge.errors import UsageError

#: ``-fa/--flash-attn`` values, llama.cpp's spelling
FLASH_ATTN_MODES = ("on", "off", "auto")
#: what llama-cpp-python's ``Llama()`` uses too (its ``flash_attn=False``)
DEFAULT_FLASH_ATTN = "off"
#: variables the chat-template renderer sets itself: a kwarg cannot replace them
RESERVED_TEMPLATE_VARIABLES = frozenset(
    {
        "messages",
        "add_generation_prompt",
        "bos_token",
        "eos_token",
        "raise_exception",
        "strftime_now",
        "functions",
        "function_call",
        "tools",
        "tool_choice",
    }
)


def pick_threads(physical: int | None, logical: int | None, affinity: int | None) -> int:
    """The default thread count: the physical cores (else the logical CPUs), no more than the
    CPUs this process may run on (``affinity``), and at least 1."""
    cores = physical or logical or 1
    if affinity:
        cores = min(cores, affinity)
    return max(1, cores)


def default_threads() -> int:
    """:func:`pick_threads` for this machine and process: ``psutil``'s physical core count,
    ``os.cpu_count()`` when that is unknown, capped by the process's CPU affinity."""
    try:
        import psutil  # noqa: PLC0415 (only when a default is needed)

        physical = psutil.cpu_count(logical=False)
    except (ImportError, OSError):
        physical = None
    affinity: int | None = None
    if hasattr(os, "sched_getaffinity"):
        try:
            affinity = len(os.sched_getaffinity(0))
        except OSError:
            affinity = None
    return pick_threads(physical, os.cpu_count(), affinity)


def flash_attn_mode(value: str | bool, *, name: str = "flash_attn") -> str:
    """``on``, ``off`` or ``auto`` from those words (any case) or a bool (library callers)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value).strip().lower()
    if text not in FLASH_ATTN_MODES:
        raise UsageError(
            f"{name} must be one of {', '.join(FLASH_ATTN_MODES)}, got {value!r}",
            hint="auto lets llama.cpp decide per device",
        )
    return text


def chat_template_kwargs(
    value: str | Mapping[str, Any] | None, *, name: str = "chat_template_kwargs"
) -> dict[str, Any]:
    """The extra chat-template variables: a JSON object (text) or a mapping, as a plain dict.

    Raises :class:`~localjudge.errors.UsageError` naming ``name`` for bad JSON, a value that is
    not an object, a value that JSON cannot hold, or a variable the renderer sets itself.
    """
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            parsed: Any = json.loads(value)
        except ValueError as exc:
            raise UsageError(
                f"{name} is not valid JSON: {exc}",
                hint="give a JSON object, e.g. '{\"enable_thinking\": false}'",
            ) from None
    else:
        parsed = value
    if not isinstance(parsed, Mapping):
        raise UsageError(
            f"{name} must be a JSON object, got {type(parsed).__name__}",
            hint="give a JSON object, e.g. '{\"enable_thinking\": false}'",
        )
    if any(not isinstance(k, str) for k in parsed):
        raise UsageError(f"{name} keys must be strings")
    try:
        # a plain JSON copy: it goes into the judge's identity (canonical JSON, the cache key)
        kwargs = json.loads(json.dumps(dict(parsed), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{name} must hold JSON values only: {exc}") from None
    reserved = sorted(RESERVED_TEMPLATE_VARIABLES & set(kwargs))
    if reserved:
        raise UsageError(
            f"{name} cannot set {', '.join(reserved)}: the renderer sets "
            f"{'it' if len(reserved) == 1 else 'them'} itself"
        )
    return dict(kwargs)
