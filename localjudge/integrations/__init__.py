"""localjudge's judge behind other evaluators' LLM interfaces.

- :mod:`localjudge.integrations.ragas`: :class:`~localjudge.integrations.ragas.LocalJudgeLLM`,
  a ragas LLM for ragas' collections metrics (``ContextRecall``, ``Faithfulness``, ...).
- :mod:`localjudge.integrations.deepeval`:
  :class:`~localjudge.integrations.deepeval.LocalJudgeModel`, a ``DeepEvalBaseLLM``.

Each module imports its framework (the ``[ragas]`` / ``[deepeval]`` extras), so import the one you
use; ``import localjudge`` imports neither. Both decode every call under the grammar of the
framework's own output model in :func:`~localjudge.judge.schemas.budgeted` mode: valid, complete
JSON or a typed :class:`~localjudge.errors.OutputBudgetError`, offline, deterministic, and cached
(``cache=True``, as :func:`~localjudge.load_judge`).
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from localjudge.judge.protocol import Judge, Prompt
from localjudge.judge.schemas import budgeted

__all__ = ["BudgetedJudge"]

#: caps for the unbounded lists and strings of a framework's output model: eight entries of at
#: most 400 characters hold any verdict list of these metrics, and close a small judge's loops
MAX_ITEMS = 8
MAX_CHARS = 400

#: one lock per judge object, shared by every adapter over it (a ragas and a deepeval adapter
#: on one loaded model must not decode at once)
_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def judge_lock(judge: Judge) -> threading.Lock:
    """The lock that serialises calls to ``judge``."""
    with _LOCKS_GUARD:
        try:
            return _LOCKS.setdefault(judge, threading.Lock())
        except TypeError:  # a judge that cannot be weakly referenced: a lock of its own
            return threading.Lock()


class BudgetedJudge:
    """A judge answering schemas we did not write: each one is :func:`budgeted` once, calls run
    one at a time (a loaded model decodes one call at a time; the lock holds across threads and
    event loops), and :meth:`agenerate` runs a call off the event loop.

    ``judge`` is a loaded judge, or an alias, a GGUF path, a store name (``ollama:qwen2.5:7b``)
    or None (the default judge) to load with ``cache`` (default on) and the ``load`` options of
    :func:`~localjudge.load_judge`.
    ``max_tokens`` is each call's output budget (None: the rest of the window); ``max_items`` /
    ``max_chars`` / ``min_items`` / ``min_chars`` bound the open lists and strings; ``choices``
    narrows named properties (see :func:`~localjudge.judge.schemas.budgeted`)."""

    def __init__(
        self,
        judge: Judge | str | os.PathLike[str] | None = None,
        *,
        max_tokens: int | None = None,
        max_items: int | None = MAX_ITEMS,
        max_chars: int | None = MAX_CHARS,
        min_items: int | None = 1,
        min_chars: int | None = 1,
        choices: Mapping[str, Sequence[int | str]] | None = None,
        cache: bool | str | os.PathLike[str] | None = None,
        **load: Any,
    ) -> None:
        if judge is None or isinstance(judge, str | os.PathLike):
            from localjudge.judge.llama import load_judge  # noqa: PLC0415 (llama.cpp only when used)

            judge = load_judge(judge, cache=True if cache is None else cache, **load)
        elif load or cache is not None:
            given = sorted([*load, *(["cache"] if cache is not None else [])])
            raise TypeError(f"load options {given} need a model name or path, not a judge")
        self.judge: Judge = judge
        self.options: dict[str, Any] = {
            "max_tokens": max_tokens,
            "max_items": max_items,
            "max_chars": max_chars,
            "min_items": min_items,
            "min_chars": min_chars,
            "choices": choices,
        }
        self._schemas: dict[type[BaseModel], type[BaseModel]] = {}
        self._lock = judge_lock(judge)

    @property
    def name(self) -> str:
        """The model's file name, as the judge identifies it."""
        return Path(self.judge.identity.model).name

    def schema(self, schema: type[BaseModel]) -> type[BaseModel]:
        """``schema`` as this judge decodes it (made once per schema)."""
        if schema not in self._schemas:
            self._schemas[schema] = budgeted(schema, **self.options)
        return self._schemas[schema]

    def generate(self, prompt: Prompt, schema: type[BaseModel]) -> Any:
        """The validated value of ``schema`` (an instance of it) for ``prompt``."""
        with self._lock:
            return self.judge.generate(prompt, self.schema(schema)).value

    async def agenerate(self, prompt: Prompt, schema: type[BaseModel]) -> Any:
        return await asyncio.to_thread(self.generate, prompt, schema)
