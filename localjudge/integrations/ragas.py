"""localjudge's judge as a ragas LLM, for ragas' collections metrics (ragas 0.4).

.. code-block:: python

    from localjudge.integrations.ragas import LocalJudgeLLM
    from ragas.metrics.collections import ContextRecall

    metric = ContextRecall(llm=LocalJudgeLLM("smollm2-135m"))
    result = await metric.ascore(user_input=..., retrieved_contexts=[...], reference=...)

ragas' own LLMs parse free text and retry; this one decodes under the grammar of the metric's
output model (:func:`~localjudge.judge.schemas.budgeted`): every call is a validated instance, or a
typed :class:`~localjudge.errors.OutputBudgetError`, never a parse failure. ragas' binary
verdicts (``attributed``, ``verdict``: plain ``int`` in its models, "0 or 1" in its prompts)
are held to 0 and 1 by the grammar, so a score cannot leave [0, 1]. ragas' usage tracking is
switched off unless ``RAGAS_DO_NOT_TRACK`` is already set: localjudge makes no network call.
"""

from __future__ import annotations

import os

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # before ragas is imported

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel
from ragas.llms.base import InstructorBaseRagasLLM

from localjudge.integrations import BudgetedJudge
from localjudge.judge.protocol import Judge

__all__ = ["RAGAS_CHOICES", "LocalJudgeLLM"]

#: ragas' models type its binary verdicts as ``int``; their prompts say "1 ... or 0"
RAGAS_CHOICES: Mapping[str, Sequence[int | str]] = {"attributed": (0, 1), "verdict": (0, 1)}


class LocalJudgeLLM(InstructorBaseRagasLLM):
    """A ragas LLM on a localjudge judge: ``judge`` and ``options`` as for
    :class:`~localjudge.integrations.BudgetedJudge` (a loaded judge, an alias or a GGUF path;
    the budget, the caps, ``cache=`` and :func:`~localjudge.load_judge`'s options); ``choices``
    defaults to :data:`RAGAS_CHOICES`."""

    def __init__(
        self,
        judge: Judge | str | os.PathLike[str] | None = None,
        *,
        choices: Mapping[str, Sequence[int | str]] | None = RAGAS_CHOICES,
        **options: Any,
    ) -> None:
        self.judge = BudgetedJudge(judge, choices=choices, **options)

    def generate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        return self.judge.generate(prompt, response_model)

    async def agenerate(self, prompt: str, response_model: type[BaseModel]) -> Any:
        return await self.judge.agenerate(prompt, response_model)

    def __repr__(self) -> str:
        return f"LocalJudgeLLM(model={self.judge.name!r})"
