"""localjudge's judge as a deepeval model (``DeepEvalBaseLLM``).

.. code-block:: python

    from localjudge.integrations.deepeval import LocalJudgeModel
    from deepeval.metrics import ContextualRecallMetric

    metric = ContextualRecallMetric(model=LocalJudgeModel("smollm2-135m"))
    metric.measure(test_case)

deepeval asks a custom model for ``generate(prompt, schema=...)``; this one decodes under the
grammar of that schema (:func:`~localjudge.judge.schemas.budgeted`) and returns an instance of it,
so deepeval never parses free text. deepeval's telemetry is switched off unless
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
from localjudge.integrations import BudgetedJudge
from localjudge.judge.protocol import Judge

__all__ = ["LocalJudgeModel"]


class LocalJudgeModel(DeepEvalBaseLLM):  # type: ignore[no-untyped-call]  # deepeval's hook
    """A deepeval model on a localjudge judge: ``judge``, ``choices`` and ``options`` as for
    :class:`~localjudge.integrations.BudgetedJudge`. deepeval's own verdict fields are already
    ``Literal`` types, so no ``choices`` are needed by default."""

    def __init__(
        self,
        judge: Judge | str | os.PathLike[str] | None = None,
        *,
        choices: Mapping[str, Sequence[int | str]] | None = None,
        **options: Any,
    ) -> None:
        self.judge = BudgetedJudge(judge, choices=choices, **options)
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
