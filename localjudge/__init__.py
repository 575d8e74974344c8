"""localjudge: offline RAG evaluation with a local GGUF judge.

Context recall (ragas), context position and context relevance (Mastra), judged by a model run
in-process by llama.cpp under a JSON grammar: valid, complete, reproducible verdicts, no network.
"""

from localjudge.errors import (
    ConstraintError,
    ContextOverflowError,
    DataError,
    InvalidItemError,
    ItemError,
    LocalJudgeError,
    ModelError,
    UsageError,
)
from localjudge.judge import Generation, GenerationStats, Judge, JudgeIdentity
from localjudge.llama import LlamaJudge, load_judge
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance, MetricResult
from localjudge.runner import ItemResult, evaluate
from localjudge.scoring import RelevancePenalties
from localjudge.versions import DISTRIBUTION, package_version

#: the installed distribution's version (``localjudge-rag`` in the package metadata)
__version__ = package_version(DISTRIBUTION)

__all__ = [
    "ConstraintError",
    "ContextOverflowError",
    "ContextPosition",
    "ContextRecall",
    "ContextRelevance",
    "DataError",
    "Generation",
    "GenerationStats",
    "InvalidItemError",
    "ItemError",
    "ItemResult",
    "Judge",
    "JudgeIdentity",
    "LlamaJudge",
    "LocalJudgeError",
    "MetricResult",
    "ModelError",
    "RelevancePenalties",
    "UsageError",
    "__version__",
    "evaluate",
    "load_judge",
]
