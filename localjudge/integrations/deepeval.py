"""localjudge's judge as a deepeval model (``DeepEvalBaseLLM``).

.. code-block:: python

    from localjudge.integrations.deepeval import LocalJudgeModel
    from deepeval.metrics import ContextualRecallMetric

    metric = ContextualRecallMetric(model=LocalJudgeModel("smollm2-135m"))
    metric.measure(test_case)

deepeval asks a custom model for ``generate(prompt, schema=...)``; this one decodes under the
grammar of that schema (:func:`~localjudge.schemas.budgeted`) and returns an instance of it, so
deepeval never parses free text. deepeval's telemetry is switched off unless
``DEEPEVAL_TELEMETRY_OPT_OUT`` is already set: localjudge makes no network call.
"""

from __future__ import annotations

import os

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")  # before deepeval is imported

from collections.abc import Mapping, Sequence
from typing import Any

from deepeval.models import DeepEvalBaseLLM
from pydantic import BaseModel

from localjudge.errors import UsageError
from localjudge.integrations import MAX_CHARS, MAX_ITEMS, BudgetedJudge
from localjudge.judge import Judge

__all__ = ["LocalJudgeModel"]


class LocalJudgeModel(DeepEvalBaseLLM):  # type: ignore[no-untyped-call]  # deepeval's hook
    """A deepeval model on a localjudge judge: ``judge`` is a loaded judge, a GGUF path or
    alias, or None for the embedded default (loaded with ``cache`` and the ``load`` options of
    :func:`~localjudge.load_judge`); the budget options are those of
    :class:`~localjudge.integrations.ragas.LocalJudgeLLM`. deepeval's own verdict fields are
    already ``Literal`` types, so no ``choices`` are needed by default."""

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
        cache: bool | str | os.PathLike[str] = True,
        **load: Any,
    ) -> None:
        self.judge = BudgetedJudge(
            judge,
            max_tokens=max_tokens,
            max_items=max_items,
            max_chars=max_chars,
            min_items=min_items,
            min_chars=min_chars,
            choices=choices,
            cache=cache,
            **load,
        )
        super().__init__(model=self.judge.name)

    def load_model(self, *args: Any, **kwargs: Any) -> Any:  # deepeval keeps it as .model
        return self.judge.judge

    def generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        return self.judge.generate(prompt, _required(schema))

    async def a_generate(self, prompt: str, schema: type[BaseModel] | None = None, **_: Any) -> Any:
        return await self.judge.agenerate(prompt, _required(schema))

    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return f"localjudge:{self.judge.name}"

    def supports_structured_outputs(self) -> bool:
        return True

    def supports_json_mode(self) -> bool:
        return True


def _required(schema: type[BaseModel] | None) -> type[BaseModel]:
    if schema is None:
        raise UsageError(
            "deepeval asked for free text; localjudge decodes only under an output schema",
            hint="use deepeval metrics that pass schema= (every metric with a custom model does)",
        )
    return schema
